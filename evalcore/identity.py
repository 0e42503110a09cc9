"""A session's identity in a dataset, and the id a person reads for it.

A session is its ``session_id`` and ``assistant_id``: several assistants' answers in one session (a
Gaussia BestOf dataset) or two agents' runs of one benchmark (τ-bench's ``task-N-trial-M`` in every
run) are several sessions, and an import never replaces one assistant's session by another's. A
session without a ``session_id`` is its file and its position in it.
"""

from __future__ import annotations

import json

__all__ = ["identity_key", "ref_of", "repeat_name", "session_label"]


def identity_key(session_id: str | None, assistant_id: str | None, source: str, position: int | None) -> str:
    """The session's key in its dataset (the ``sessions.key`` column).

    ``id:<session_id>`` when no assistant is named (so keys made before assistants counted stay
    valid), ``ida:["<session_id>","<assistant_id>"]`` when one is, ``pos:<file>:<position>`` without
    an id. (JSON, so that no ``session_id`` or ``assistant_id`` can make two identities one.)
    """
    if session_id is None:
        return f"pos:{source}:{position}"
    if assistant_id:  # (Gaussia writes "" for none)
        return "ida:" + json.dumps([session_id, assistant_id], ensure_ascii=False, separators=(",", ":"))
    return f"id:{session_id}"


def ref_of(key: str, session_id: str | None) -> str:
    """The session's id as exported and in links: its ``session_id``, else its key.

    (Several assistants' sessions of one ``session_id`` share it: a link by it opens the first.)
    """
    return session_id if session_id is not None else key


def repeat_name(session_id: str | None, assistant_id: str | None, key: str) -> str:
    """A session named in a problem: ``'a'``, ``'a' (assistant 'bot')``, or its file and place."""
    name = repr(session_label(ref_of(key, session_id)))
    return f"{name} (assistant {assistant_id!r})" if session_id is not None and assistant_id else name


def session_label(ref: str) -> str:
    """What a reviewer calls a session, from its ref: the ``session_id`` itself, or for a session known by its
    place in a file (``pos:ragas.jsonl:2``) that file and place (``ragas.jsonl · session 3``)."""
    if ref.startswith("pos:"):
        source, _, position = ref[4:].rpartition(":")
        if position.isdigit():
            return f"{source} · session {int(position) + 1}"
    if ref.startswith("id:"):  # the identity of a session with a session_id: that id
        return ref[3:]
    return ref
