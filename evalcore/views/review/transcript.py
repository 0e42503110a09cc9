"""A session laid out for reading: turns, each with what followed the user and its ground truth.

:func:`transcript` does all the work the Review page needs before it draws anything: it
cuts the conversation into turns, pairs every tool call with its result (by call id, else
in order, as :func:`~evalcore.schema.tool_links` does: over the whole conversation, so a
result is never shown twice nor lost; parallel calls sharing an id get their results in the
order given, and are marked; a result naming no call stays on its own, marked too),
pretty-prints arguments and JSON results, and flags long outputs so the page can fold them.
The page then only renders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import orjson

from evalcore.formats._blocks import TEXT_TYPES, image_url_of, media_of
from evalcore.schema import ContextChunk, Message, Session, ToolCall, TurnTruth, block_text, tool_links
from evalcore.schema.session import Unlinked
from evalcore.store.records import SessionPage
from evalcore.store.sessions import Sessions
from evalcore.views.text import code_span, visible

__all__ = [
    "LONG_CHARS",
    "LONG_LINES",
    "IMAGE_BYTES",
    "CallView",
    "ImageView",
    "Item",
    "MessageView",
    "TranscriptView",
    "TurnPage",
    "TurnView",
    "attachments",
    "is_long",
    "page_transcript",
    "pretty_json",
    "read_turn_page",
    "run_error",
    "transcript",
    "turn_page_of_link",
    "turn_count",
]

#: Text with more lines than this is "long": the page shows it folded.
LONG_LINES = 20
#: Text with more characters than this is "long": the page shows it folded.
LONG_CHARS = 1500


def is_long(text: str) -> bool:
    """Whether ``text`` is long enough to be shown folded (> ``LONG_LINES`` lines or > ``LONG_CHARS`` characters)."""
    return len(text) > LONG_CHARS or text.count("\n") >= LONG_LINES


def pretty_json(value: Any) -> str:
    """``value`` as JSON text: indented by 2, non-ASCII kept, keys in their given order."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _json_text(text: str) -> str | None:
    """``text`` pretty-printed when it is a JSON object or array, else ``None``.

    orjson parses and indents (C speed: results can be large); what it refuses (NaN, integers
    beyond 64 bits) goes through the standard library instead.
    """
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or stripped[-1] not in "]}":
        return None
    try:
        return orjson.dumps(orjson.loads(stripped), option=orjson.OPT_INDENT_2).decode()
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        pass
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return pretty_json(value)


@dataclass(frozen=True)
class CallView:
    """One tool call with its result right under it.

    ``args_text`` is the arguments as indented JSON. ``result_text`` is the result's text,
    pretty-printed when it is a JSON object or array (``result_is_json``); empty when the call
    got no result (``result`` is ``None``). ``shared_by``: how many parallel calls of the turn have
    this call's id (0 when none other has it): their results are paired with them in the order the
    results come, which the id alone cannot tell.
    """

    call: ToolCall
    name: str
    id: str | None
    args_text: str
    args_is_long: bool
    result: Message | None
    result_text: str
    result_is_json: bool
    result_is_long: bool
    shared_by: int = 0
    kind: Literal["call"] = "call"

    @property
    def has_result(self) -> bool:
        """Whether a tool message answered the call."""
        return self.result is not None

    @property
    def shared_note(self) -> str | None:
        """Markdown saying the call's id is ambiguous (``None`` when it is not)."""
        if not self.shared_by:
            return None
        return (
            f":material/warning: ambiguous: {self.shared_by} parallel calls have the id "
            f"{code_span(visible(self.id or ''))}; each is shown with a result of that id in the order the results "
            "came"
        )


#: Embedded images up to this size (decoded) are shown; a larger one is named, not loaded.
IMAGE_BYTES = 5 << 20


@dataclass(frozen=True)
class ImageView:
    """An image of a message (any format's image block): its bytes when embedded (a ``data:`` URL, at most
    ``IMAGE_BYTES``), else its URL only (the page names it; it never fetches what a file points to)."""

    url: str
    media_type: str | None = None
    data: bytes | None = None


@dataclass(frozen=True)
class MessageView:
    """A message shown on its own: an assistant message (its calls follow it as ``CallView``\\ s),
    a system message inside the conversation, or a tool message no call claimed (``kind="tool"``).

    ``images`` are its image blocks; ``extra_blocks`` the other blocks that hold no text (files, audio, ...),
    kept as given. ``unlinked`` (a tool message only): why no call claims it — ``"unknown"``: its
    ``tool_call_id`` names no call of the conversation; ``"answered"``: the calls of that id all have their
    result already; ``"unclaimed"``: it names no call and none was waiting.
    """

    kind: Literal["assistant", "system", "tool"]
    message: Message
    text: str
    reasoning: str | None
    is_long: bool
    extra_blocks: tuple[dict[str, Any], ...] = ()
    images: tuple[ImageView, ...] = ()
    unlinked: Unlinked | None = None

    @property
    def unlinked_note(self) -> str:
        """Markdown saying what a tool result no call claims is the result of, and why it stands alone."""
        call_id = self.message.tool_call_id
        name = self.message.name
        tool = f" · tool {code_span(visible(name))}" if name else ""
        if self.unlinked == "unknown" and call_id:
            return f":material/link_off: result of an unknown call {code_span(visible(call_id))}{tool}"
        if self.unlinked == "answered" and call_id:
            return f":material/link_off: another result of call {code_span(visible(call_id))}, which has one{tool}"
        return f":material/link_off: result of {code_span(visible(name or 'a tool'))} (no call claims it)"


#: One entry of a turn or of the preamble, in conversation order; ``item.kind`` tells which
#: (``"assistant"``, ``"system"``, ``"tool"``: a ``MessageView``; ``"call"``: a ``CallView``).
Item = MessageView | CallView


@dataclass(frozen=True)
class TurnView:
    """One turn: the user's message, what followed it in order, the final answer and the ground truth.

    ``index`` is 0-based (``Session.turn_truth[index]`` is ``truth``).
    """

    index: int
    user: Message
    items: list[Item]
    answer: str | None
    truth: TurnTruth
    n_tool_calls: int
    n_missing_results: int
    user_images: tuple[ImageView, ...] = ()
    user_blocks: tuple[dict[str, Any], ...] = ()

    @property
    def query(self) -> str:
        """The user's text."""
        return self.user.text

    @property
    def calls(self) -> list[CallView]:
        """The turn's tool calls, in order."""
        return [item for item in self.items if isinstance(item, CallView)]


@dataclass(frozen=True)
class TranscriptView:
    """A whole session laid out for reading, or a page of its turns (``page_transcript``).

    ``preamble`` is what came before the first user message (system prompt, a greeting, ...),
    laid out like a turn's items. ``n_missing_results`` counts the calls no tool message answered.
    A page's view holds the turns of the page only (``turns[0]`` is turn ``first_turn``), and the session's
    number of turns as ``total_turns``; its counts of calls and messages are the session's.
    """

    preamble: list[Item]
    turns: list[TurnView]
    n_tool_calls: int
    n_missing_results: int
    retrieved_context: list[ContextChunk] | None = None
    n_messages: int = 0
    extra_truth: list[TurnTruth] = field(default_factory=list)
    #: The failure the source recorded for the run (a trace's failed span): ``ConnectionError: ... (in span f)``.
    error: str | None = None
    first_turn: int = 0
    total_turns: int | None = None

    @property
    def turn_count(self) -> int:
        """The number of turns (of the session, for a page's view)."""
        return len(self.turns) if self.total_turns is None else self.total_turns

    @property
    def calls_lack_results(self) -> bool:
        """Whether some tool call has no result."""
        return self.n_missing_results > 0

    def page(self, start: int, size: int) -> list[TurnView]:
        """The turns ``start`` to ``start + size`` (0-based; clamped to the turns there are)."""
        if size <= 0:
            return []
        start = max(0, start)
        if self.total_turns is not None:  # a page's view: the turns of it that are there
            return [turn for turn in self.turns if start <= turn.index < start + size]
        return self.turns[start : start + size]

    def page_count(self, size: int) -> int:
        """How many pages of ``size`` turns the session fills (at least 1)."""
        if size <= 0:
            return 1
        return max(1, -(-self.turn_count // size))


def turn_count(session: Session) -> int:
    """The number of turns of ``session`` (its user messages), without building the view."""
    return session.n_turns()


#: Content blocks that are a tool call (Anthropic's, OpenAI Responses'), said by the message's calls too.
CALL_BLOCKS = frozenset({"tool_use", "function_call", "server_tool_use"})


def attachments(message: Message) -> tuple[tuple[ImageView, ...], tuple[dict[str, Any], ...]]:
    """The blocks of ``message`` that hold no text: its images, and the others (files, audio, ...) as given."""
    content = message.content
    if not isinstance(content, list):
        return (), ()
    # A block whose text ``Message.text`` shows is not extra (nor is an empty text block), nor one that is a tool call
    # of the message (LangChain keeps Anthropic's ``tool_use`` blocks beside its ``tool_calls``): shown as the call.
    called = {c.id for c in message.calls if c.id}
    extra = [b for b in content if not block_text([b]) and not _is_text_block(b) and not _is_call(b, called)]
    images, others = [], []
    for block in extra:
        url = image_url_of(block)
        if url is None:
            others.append(block)
        else:
            media = media_of(url, IMAGE_BYTES)
            images.append(ImageView(url, *media) if media else ImageView(url))
    return tuple(images), tuple(others)


def _is_call(block: dict[str, Any], called: set[str]) -> bool:
    return block.get("type") in CALL_BLOCKS and block.get("id") in called


def _is_text_block(block: dict[str, Any]) -> bool:
    return block.get("type", "text") in TEXT_TYPES and isinstance(block.get("text", block.get("refusal")), str)


def _message_view(
    message: Message, kind: Literal["assistant", "system", "tool"], unlinked: Unlinked | None = None
) -> MessageView:
    text = message.text
    images, others = attachments(message)
    return MessageView(
        kind=kind,
        message=message,
        text=text,
        reasoning=message.reasoning or None,
        is_long=is_long(text),
        extra_blocks=others,
        images=images,
        unlinked=unlinked,
    )


def _call_view(call: ToolCall, result: Message | None, shared_by: int = 0) -> CallView:
    args_text = pretty_json(call.args)
    result_text = ""
    pretty = None
    if result is not None:
        result_text = result.text
        pretty = _json_text(result_text)
        if pretty is not None:
            result_text = pretty
    return CallView(
        call=call,
        name=call.name,
        id=call.id,
        args_text=args_text,
        args_is_long=is_long(args_text),
        result=result,
        result_text=result_text,
        result_is_json=pretty is not None,
        result_is_long=is_long(result_text),
        shared_by=shared_by,
    )


@dataclass(frozen=True)
class _Links:
    """What ``tool_links`` said, keyed for laying out messages: ``id()`` of a call -> its result, and of a
    message -> why no call claims it; ``shared``: ``id()`` of a call -> how many parallel calls share its id."""

    results: dict[int, Message | None]
    unlinked: dict[int, Unlinked]
    shared: dict[int, int]


def _items(messages: list[Message], links: _Links) -> list[Item]:
    items: list[Item] = []
    for message in messages:
        role = message.role
        if role == "assistant":
            items.append(_message_view(message, "assistant"))
            for call in message.calls:
                items.append(_call_view(call, links.results.get(id(call)), links.shared.get(id(call), 0)))
        elif role == "tool":
            why = links.unlinked.get(id(message))
            if why is not None:
                items.append(_message_view(message, "tool", why))
        elif role == "system":
            items.append(_message_view(message, "system"))
        # (a user message always opens a turn: never one of these)
    return items


def transcript(session: Session) -> TranscriptView:
    """Lay ``session`` out for reading: the preamble, then each turn with its calls paired to their results."""
    found = tool_links(session.messages)
    pairs = found.pairs
    links = _Links(
        {id(call): result for call, result in pairs},
        {id(session.messages[i]): why for i, why in found.unlinked.items()},
        found.shared,
    )
    turns: list[TurnView] = []
    for turn in session.turns():
        items = _items(turn.messages[1:], links)
        calls = [item for item in items if isinstance(item, CallView)]
        user_images, user_blocks = attachments(turn.messages[0])
        turns.append(
            TurnView(
                index=turn.index,
                user=turn.messages[0],
                items=items,
                answer=turn.answer,
                truth=turn.truth,
                n_tool_calls=len(calls),
                n_missing_results=sum(1 for c in calls if c.result is None),
                user_images=user_images,
                user_blocks=user_blocks,
            )
        )
    preamble = _items(session.preamble(), links)
    missing = sum(1 for _call, result in pairs if result is None)
    return TranscriptView(
        preamble=preamble,
        turns=turns,
        n_tool_calls=len(pairs),
        n_missing_results=missing,
        retrieved_context=session.retrieved_context,
        n_messages=len(session.messages),
        extra_truth=list(session.turn_truth[len(turns) :]),
        error=run_error(session),
    )


def page_transcript(page: SessionPage) -> TranscriptView:
    """What Review reads of a session (``Sessions.page``) laid out for reading: a small session's whole view
    (``transcript``), else the view of its page of turns, numbered as in the session, with the session's counts.

    A large session's tool results are paired with the calls of the page (by id, else in order): a result
    in another page of turns than its call is shown as one no call claims."""
    view = transcript(page.stored.session)
    if page.whole:
        return view
    return replace(
        view,
        turns=[replace(turn, index=turn.index + page.first_turn) for turn in view.turns],
        n_tool_calls=page.n_tool_calls,
        n_messages=page.n_messages,
        extra_truth=[],
        first_turn=page.first_turn,
        total_turns=page.n_turns,
    )


@dataclass(frozen=True)
class TurnPage:
    """The page of turns Review shows (``read_turn_page``): what was read of the session, which page it is (from 1,
    within the session's pages) and how many pages there are."""

    read: SessionPage
    number: int
    pages: int


def turn_page_of_link(turn: str | None, per_page: int) -> int | None:
    """The page (from 1) of the turn a link names (``turn=N``, counted from 1), or None when it names none."""
    if turn is None or not turn.isdigit() or not turn.isascii():
        return None
    return max(1, (int(turn) - 1) // per_page + 1)


def read_turn_page(sessions: Sessions, pk: int, asked: int, per_page: int) -> TurnPage:
    """Page ``asked`` (from 1) of the turns of session ``pk``, ``per_page`` a page, as the store reads it
    (``Sessions.page``: a large session a page at a time): a page past the last is the last."""
    asked = max(1, asked)
    read = sessions.page(pk, (asked - 1) * per_page, per_page)
    pages = max(1, -(-read.n_turns // per_page))
    number = min(pages, asked)
    if number != asked and not read.whole:  # (beyond the end: the last page is read instead)
        read = sessions.page(pk, (number - 1) * per_page, per_page)
    return TurnPage(read, number, pages)


def run_error(session: Session) -> str | None:
    """The failure a session's source recorded for its run (``metadata["error"]``: a type, a message and where),
    as one line; ``None`` when it records none."""
    error = session.metadata.get("error")
    if not error:
        return None
    if not isinstance(error, dict):
        return str(error)
    kind, message, span = error.get("type"), error.get("message"), error.get("span")
    text = ": ".join(str(part) for part in (kind, message) if part not in (None, "")) or "an error"
    return f"{text} (in span {span})" if span not in (None, "") else text
