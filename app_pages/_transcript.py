"""Rendering a transcript view with Streamlit: chat bubbles, tool calls with their results under them.

What the user and the assistant wrote goes through ``safe_markdown`` (bold, italic, code, lists and
headings shown as such, everything else as written; "Show raw text" in the sidebar shows it all as
written), every other piece of conversation text through ``literal_markdown`` or ``st.text``: nothing in
a message is ever interpreted as HTML or markdown that could load a remote resource or link anywhere.
Long outputs, system prompts and reasoning are collapsed and only rendered once opened.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from evalcore.views.review.transcript import CallView, ImageView, Item, MessageView, TurnView
from evalcore.views.text import code_span, literal_markdown, literal_name, safe_markdown, visible

_AVATARS = {
    "user": ":material/person:",
    "assistant": ":material/smart_toy:",
    "system": ":material/settings:",
    "tool": ":material/build:",
}


def _lazy_expander(label: str, key: str, *, expanded: bool = False) -> st.delta_generator.DeltaGenerator | None:
    """An expander whose body is rendered only while open (``None`` when closed)."""
    box = st.expander(label, expanded=expanded, key=key, on_change="rerun")
    return box if box.open else None


#: The session state's key of the sidebar's "Show raw text" toggle (:func:`raw_text_toggle`).
RAW_KEY = "transcript_raw_text"


def raw_text_toggle() -> None:
    """The sidebar's "Show raw text": messages shown as written, their Markdown not applied."""
    st.sidebar.toggle(
        "Show raw text",
        key=RAW_KEY,
        help="Show what the user and the assistant wrote exactly as written: bold, lists, headings and code "
        "as their Markdown characters. Links, images, HTML and the like are always shown as written.",
    )


def _formatted(text: str) -> None:
    """What a user or an assistant wrote: its safe Markdown applied (code blocks verbatim), or as written."""
    if st.session_state.get(RAW_KEY):
        st.markdown(literal_markdown(text))
        return
    for block in safe_markdown(text):
        if block.kind == "code":
            payload(block.text)
        else:
            st.markdown(block.text)


def text_block(text: str, *, key: str, long: bool, label: str) -> None:
    """What a user or an assistant wrote (:func:`_formatted`); a long one collapsed behind ``label``."""
    if not text:
        return
    if long:
        lines = text.count("\n") + 1
        box = _lazy_expander(f"{label} · {lines:,} lines, {len(text):,} characters", key)
        if box is not None:
            with box:
                _formatted(text)
    else:
        _formatted(text)


def payload(text: str) -> None:
    """A tool's arguments or output, verbatim in a monospace box (``st.text``: no markdown, no HTML, and
    none of the syntax highlighter's 1.5 MB of script on the page's first paint)."""
    st.text(text, width="stretch")


def _extras(images: tuple[ImageView, ...], blocks: tuple[dict[str, Any], ...]) -> None:
    """A message's images (embedded ones shown; one a file points to is named, never fetched) and other blocks."""
    for image in images:
        if image.data is not None:
            try:  # its own size, at most the column
                # A caption is Markdown, and the media type is what the file's data: URL says: shown as text.
                st.image(image.data, width="content", caption=literal_name(image.media_type or "") or None)
            except Exception:  # bytes no image library reads (an SVG, a cut file): named, not drawn
                st.caption(f":material/broken_image: {literal_name(image.media_type or 'image')} that cannot be drawn")
        else:
            st.caption(f":material/image: image at {code_span(visible(image.url[:300]))} (not loaded)")
    for block in blocks:
        kind = str(block.get("type", "block"))
        st.caption(f":material/attachment: {literal_name(kind)} block (not loaded)")


def render_message(view: MessageView, key: str) -> None:
    """A message that stands on its own (assistant text, system prompt, unclaimed tool output)."""
    if view.kind == "assistant" and not (view.text or view.reasoning or view.extra_blocks or view.images):
        return  # only tool calls: they follow, each in its own bubble
    name = "assistant" if view.kind == "assistant" else view.kind
    with st.chat_message(name, avatar=_AVATARS[view.kind]):
        if view.kind == "system":
            box = _lazy_expander(f"System prompt · {len(view.text):,} characters", f"{key}-sys")
            if box is not None:
                with box:
                    st.markdown(literal_markdown(view.text))
            return
        if view.kind == "tool":
            st.caption(view.unlinked_note)
            payload(view.text)
            return
        if view.reasoning:
            box = _lazy_expander("Reasoning", f"{key}-why")
            if box is not None:
                with box:
                    st.markdown(literal_markdown(view.reasoning))
        text_block(view.text, key=f"{key}-text", long=view.is_long, label="Long answer")
        _extras(view.images, view.extra_blocks)


def render_call(view: CallView, key: str) -> None:
    """A tool call by name with its arguments, and its result right under it."""
    with st.chat_message("tool", avatar=_AVATARS["tool"]):
        ident = f" · call {code_span(visible(view.id))}" if view.id else ""
        st.markdown(f"**{literal_name(view.name)}**{ident}")
        if view.shared_note:
            st.caption(view.shared_note)
        if view.args_is_long:
            box = _lazy_expander("Arguments", f"{key}-args")
            if box is not None:
                with box:
                    payload(view.args_text)
        elif view.args_text != "{}":
            payload(view.args_text)
        if view.result is None:
            st.caption(":material/help: no result")
        elif view.result_is_long:
            box = _lazy_expander(f"Result · {len(view.result_text):,} characters", f"{key}-out")
            if box is not None:
                with box:
                    payload(view.result_text)
        else:
            st.caption("result")
            payload(view.result_text or "(empty)")


def render_items(items: list[Item], key: str) -> None:
    """The items of a turn (or the preamble) in conversation order."""
    for n, item in enumerate(items):
        if isinstance(item, CallView):
            render_call(item, f"{key}-{n}")
        else:
            render_message(item, f"{key}-{n}")


def render_turn(turn: TurnView, key: str) -> None:
    """One turn: the user's message, then what followed."""
    with st.chat_message("user", avatar=_AVATARS["user"]):
        text_block(turn.query, key=f"{key}-q", long=len(turn.query) > 3000, label="Long question")
        _extras(turn.user_images, turn.user_blocks)
    render_items(turn.items, key)
