"""A session's identity in a dataset, and the id a person reads for it.

A session is its ``session_id`` and ``assistant_id``: several assistants' answers in one session (a
Gaussia BestOf dataset) or two agents' runs of one benchmark (τ-bench's ``task-N-trial-M`` in every
run) are several sessions, and an import never replaces one assistant's session by another's. A
session without a ``session_id`` is its file and its position in it.
"""

from __future__ import annotations

import json

__all__ = ["identity_key", "link_of", "link_sql", "ref_of", "repeat_name", "session_label"]


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


def link_of(key: str, session_id: str | None, shared: bool) -> str:
    """The session's id in a link (``?session=``, Review's next and previous): its ``session_id`` when that alone
    names it, else (``shared``: other sessions of its dataset have that ``session_id``, answered by other
    assistants) its key. ``Store.find_ref`` finds a session by either."""
    return key if shared and key.startswith("ida:") else ref_of(key, session_id)


def link_sql(table: str) -> str:
    """``link_of`` in SQL, over the ``sessions`` row ``table`` (an alias)."""
    t = table
    shared = (
        f"EXISTS (SELECT 1 FROM sessions o WHERE o.dataset_id = {t}.dataset_id AND o.session_id = {t}.session_id "
        f"AND o.id != {t}.id)"
    )
    return f"CASE WHEN {t}.key LIKE 'ida:%' AND {shared} THEN {t}.key ELSE COALESCE({t}.session_id, {t}.key) END"


def repeat_name(session_id: str | None, assistant_id: str | None, key: str) -> str:
    """A session named in a problem: ``'a'``, ``'a' (assistant 'bot')``, or its file and place."""
    name = repr(session_label(ref_of(key, session_id)))
    return f"{name} (assistant {assistant_id!r})" if session_id is not None and assistant_id else name


def session_label(ref: str) -> str:
    """What a reviewer calls a session, from its ref or link: the ``session_id`` itself; ``id · assistant`` for one
    of several assistants' sessions; for a session known by its place in a file (``pos:ragas.jsonl:2``) that
    file and place (``ragas.jsonl · session 3``)."""
    if ref.startswith("pos:"):
        source, _, position = ref[4:].rpartition(":")
        if position.isdigit():
            return f"{source} · session {int(position) + 1}"
    if ref.startswith("ida:"):
        try:
            session_id, assistant_id = json.loads(ref[4:])
        except (ValueError, TypeError):
            return ref
        return f"{session_id} · {assistant_id}"
    if ref.startswith("id:"):  # the identity of a session with a session_id: that id
        return ref[3:]
    return ref
