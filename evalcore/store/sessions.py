"""Sessions in the store: reading them (the file's conversation with reviewers' edits laid over it), saving
reviewers' changes as new versions with an append-only history, and everything else done to sessions — browsing
and search (``queries.py``), changes to many at once (``bulk.py``), imports (``imports.py``) — as one repository,
``store.sessions``.

Every save carries the version it was based on. It is written as a conditional ``UPDATE ... WHERE version = ?``:
when another save got there first (on SQLite it waited for the write lock; on PostgreSQL for the row), nothing is
written and a ``ConflictError`` names who changed what.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalcore._infra.gcpause import paused_gc
from evalcore.errors import ConflictError, NotFoundError, UsageError
from evalcore.identity import link_of
from evalcore.schema import Provenance, Session, TurnTruth, validate_session
from evalcore.store.bulk import BulkChanges
from evalcore.store.engine import Conn
from evalcore.store.imports import Importing
from evalcore.store.jsontext import loads
from evalcore.store.migrations import SEARCH_REINDEX
from evalcore.store.parts import PAGED_MESSAGES, page_messages, read_facts
from evalcore.store.queries import SHARED_ID, Browsing
from evalcore.store.records import SESSION_FIELDS, TURN_FIELDS, Edit, SessionPage, StoredSession, now
from evalcore.store.rows import search_texts

if TYPE_CHECKING:
    from evalcore.store.store import Store

__all__ = ["Sessions"]

_SELECT = (
    "SELECT s.id, d.name, s.key, s.version, s.data, s.status, s.status_by, s.status_at, s.tags, "
    "s.updated_at, s.updated_by, s.n_edits, s.source, s.format, s.position, s.line, "
    f"{SHARED_ID} FROM sessions s JOIN datasets d ON d.id = s.dataset_id"
)
# The same columns with the JSON of a large session left out (NULL in its place): what a page reads first.
_SELECT_SMALL = _SELECT.replace("s.data,", f"CASE WHEN s.n_messages > {PAGED_MESSAGES} THEN NULL ELSE s.data END,", 1)
_SELECT_ID = _SELECT.replace("s.data,", "s.session_id,", 1)  # (its session_id in its place)
_EDIT_COLUMNS = "id, session_pk, turn, field, old, new, author, at, reason, version"
_EDIT_INSERT = "session_pk, turn, field, old, new, author, at, reason, version, author_id"  # (what a save writes)
# One session with the newest edit of each of its fields (``_last_edits``), in one statement: a row per such edit
# (the session's columns on each), or one row with no edit. (A read is one round trip to a server, not two.)
_SELECT_ONE = _SELECT.replace(
    " FROM sessions s ", ", " + ", ".join(f"e.{c}" for c in _EDIT_COLUMNS.split(", ")) + " FROM sessions s ", 1
) + (
    " LEFT JOIN (SELECT max(id) AS last FROM edits WHERE session_pk = ? GROUP BY turn, field) m ON s.n_edits > 0"
    " LEFT JOIN edits e ON e.id = m.last WHERE s.id = ? ORDER BY e.id"
)
_SESSION_WIDTH = 17  # the columns of ``_SELECT``
_SET_ON_READ = ("provenance", "status", "tags")  # the fields of a session its row's columns give (``_stored``)
_INT64 = 2**63
_EDITS_AT_ONCE = 500  # rows of edits a save inserts in one statement (10 values each: far below either limit)


class Sessions(Browsing, BulkChanges, Importing):
    """The sessions of one store (``store.sessions``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine = store._engine
        self._matched = OrderedDict()

    # -- reading ------------------------------------------------------------------------------------

    def get(self, pk: int) -> StoredSession:
        """The session stored under ``pk``, with reviewers' edits applied."""
        with self._engine.read() as conn:
            return self._get(conn, pk)

    def _get(self, conn: Conn, pk: int) -> StoredSession:
        return self._get_of(conn, conn.execute(_SELECT_ONE, [pk, pk]).fetchall() if _storable(pk) else [], pk)

    def _get_of(self, conn: Conn, rows: list[Any], pk: int) -> StoredSession:
        """The session of ``_SELECT_ONE``'s ``rows``."""
        if not rows:
            raise NotFoundError(f"no session #{pk}")
        edits = [_edit(r[_SESSION_WIDTH:]) for r in rows if r[_SESSION_WIDTH] is not None]
        return self._stored(conn, rows[0][:_SESSION_WIDTH], edits)

    def page(self, pk: int, first_turn: int, count: int) -> SessionPage:
        """What Review shows of the session stored under ``pk``: its own fields, and turns ``first_turn`` to
        ``first_turn + count`` with their messages and ground truth (``SessionPage``), reviewers' edits applied.
        A large session (one with a page index, ``evalcore.store.parts``) is read a page at a time, never whole;
        a small one (or one stored before the index existed) is read whole."""
        with self._engine.read() as conn:
            # A small session's JSON comes with its row (read whole, as ``get`` reads it); a large one's is left.
            row = conn.execute(f"{_SELECT_SMALL} WHERE s.id = ?", [pk]).fetchone() if _storable(pk) else None
            if row is None:
                raise NotFoundError(f"no session #{pk}")
            if row[4] is not None:
                return _whole_page(self._stored(conn, row))
            header = conn.execute(
                "SELECT data, truth FROM session_parts WHERE session_pk = ? AND part = 0", [pk]
            ).fetchone()
            if header is None:  # (stored before the index existed: read whole)
                return _whole_page(self._stored(conn, (*row[:4], _data(conn, pk), *row[5:])))
            facts = read_facts(header[1])
            first_turn = max(0, min(first_turn, facts.turns))
            end = min(first_turn + max(count, 0), facts.turns)
            parts = conn.execute(
                "SELECT turn_lo, data, truth FROM session_parts WHERE session_pk = ? AND part BETWEEN 1 AND ? "
                "AND turn_hi >= ? AND turn_lo < ? ORDER BY part",
                [pk, facts.parts, first_turn if first_turn else -1, end],
            ).fetchall()
            edits = self._last_edits(conn, pk, turns=(first_turn, end))
        read = [(turn_lo, loads(data)) for turn_lo, data, _truth in parts]
        messages, _turns = page_messages(read, first_turn, end - first_turn)
        file_truth: dict[int, Any] = {}
        for *_rest, truth in parts:
            file_truth.update((int(t), value) for t, value in json.loads(truth).items())
        truth = {t: TurnTruth.model_validate(file_truth.get(t, {})) for t in range(first_turn, end)}
        weights = list(facts.weights) or [None] * facts.turns
        for edit in edits:
            if edit.turn is None or edit.field in ("conversation", "status", "tags"):
                continue
            if edit.field == "weight" and edit.turn < facts.turns:
                weights[edit.turn] = edit.new
            if edit.turn in truth:
                truth[edit.turn] = TurnTruth.model_validate({**truth[edit.turn].model_dump(), edit.field: edit.new})
        session = Session.model_validate(loads(header[0]))
        session = _apply(session, [e for e in edits if e.turn is None])
        session.messages = messages
        session.turn_truth = [truth[t] for t in range(first_turn, end)]
        stored = self._stored(conn, row, session=session)
        return SessionPage(
            stored,
            first_turn,
            facts.turns,
            facts.messages,
            facts.tool_calls,
            truth,
            weights,
            facts.final_answer,
            whole=False,
        )

    def reindex_search(self, *, only_if_pending: bool = True) -> int:
        """Compute every session's search texts anew, as a save computes them (the reviewers' edits laid over the
        file's session), in one transaction: after a migration changed what search indexes, which leaves the
        ``SEARCH_REINDEX`` note (a SQLite store does it when opening applied migrations; ``Store.upgrade`` does it
        on both engines). With ``only_if_pending`` (the default) nothing is done without the note. How many
        sessions were indexed."""
        note = "SELECT 1 FROM meta WHERE key = ?"
        if only_if_pending:
            with self._engine.read() as conn:
                if conn.execute(note, [SEARCH_REINDEX]).fetchone() is None:
                    return 0
        with paused_gc(), self._engine.write() as conn:
            if only_if_pending and conn.execute(note, [SEARCH_REINDEX]).fetchone() is None:
                return 0  # another process did it meanwhile
            pks = [int(r[0]) for r in conn.execute("SELECT id FROM sessions ORDER BY id").fetchall()]
            for start in range(0, len(pks), 500):
                chunk = pks[start : start + 500]
                rows = conn.execute(f"{_SELECT} WHERE s.id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
                texts = []
                for row in rows:
                    session = self._stored(conn, row).session
                    texts.append((*self._engine.search_documents(*search_texts(session)), row[0]))
                conn.executemany("UPDATE sessions SET search_text = ?, system_text = ? WHERE id = ?", texts)
            conn.execute("DELETE FROM meta WHERE key = ?", [SEARCH_REINDEX])
        return len(pks)

    def get_many(self, pks: list[int]) -> list[StoredSession]:
        """The sessions stored under ``pks``, in that order (missing ones left out)."""
        found: dict[int, StoredSession] = {}
        with paused_gc(), self._engine.read() as conn:
            for start in range(0, len(pks), 500):
                chunk = pks[start : start + 500]
                rows = conn.execute(f"{_SELECT} WHERE s.id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
                for row in rows:
                    found[row[0]] = self._stored(conn, row)
        return [found[pk] for pk in pks if pk in found]

    def find(self, dataset: str, session_id: str) -> int:
        """The ``pk`` of the session with ``session_id`` in ``dataset``."""
        with self._engine.read() as conn:
            row = conn.execute(
                "SELECT s.id FROM sessions s JOIN datasets d ON d.id = s.dataset_id WHERE d.name = ? "
                "AND s.session_id = ? ORDER BY s.id LIMIT 1",
                [dataset, session_id],
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no session {session_id!r} in dataset {dataset!r}")
        return int(row[0])

    def find_ref(self, dataset: str, ref: str) -> int:
        """The ``pk`` of the session whose id as exported is ``ref``: its ``session_id``, else the
        identity evalcore gave it (``SessionSummary.ref``)."""
        dataset_id = self._store.datasets.id_of(dataset)
        # Its key first; then the session of that session_id no assistant answered; then the first of them.
        with self._engine.read() as conn:
            row = conn.execute(
                "SELECT id FROM sessions WHERE dataset_id = ? AND (session_id = ? OR key = ?) "
                "ORDER BY key = ? DESC, key = ? DESC, session_id IS NULL, id LIMIT 1",
                [dataset_id, ref, ref, ref, f"id:{ref}"],
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no session {ref!r} in dataset {dataset!r}")
        return int(row[0])

    def pks(self, dataset: str) -> list[int]:
        """Every session's ``pk`` in ``dataset``, in file order."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT id FROM sessions WHERE dataset_id = ? ORDER BY position, id", [dataset_id]
            ).fetchall()
        return [r[0] for r in rows]

    def links(self, pks: list[int]) -> dict[int, str]:
        """The links of a few sessions (``evalcore.identity.link_of``: unique in their dataset)."""
        if not pks:
            return {}
        found: dict[int, str] = {}
        with self._engine.read() as conn:
            for start in range(0, len(pks), 500):
                chunk = pks[start : start + 500]
                rows = conn.execute(
                    f"SELECT s.id, s.key, s.session_id, {SHARED_ID} "
                    f"FROM sessions s WHERE s.id IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
                found.update((pk, link_of(key, session_id, bool(shared))) for pk, key, session_id, shared in rows)
        return found

    def _stored(
        self, conn: Conn, row: tuple[Any, ...], edits: list[Edit] | None = None, *, session: Session | None = None
    ) -> StoredSession:
        """The session of a row of ``_SELECT``; ``edits``: its newest edits (``_last_edits``) when read already;
        given ``session`` (a page's, edits applied), that one."""
        pk, dataset, key, version, data, status, status_by, status_at, tags, updated_at, updated_by, n_edits = row[:12]
        if session is None:
            session = Session.model_validate(loads(data))  # orjson, or the stdlib for NaN / big integers
            if n_edits:
                session = _apply(session, self._last_edits(conn, pk) if edits is None else edits)
        # Set as pydantic's own assignment sets a field (no validator runs on one): an export reads every session.
        fields = session.__dict__
        fields["provenance"] = Provenance(source=row[12], format=row[13], position=row[14], line=row[15])
        fields["status"] = status
        fields["tags"] = [] if tags == "[]" else json.loads(tags)
        session.__pydantic_fields_set__.update(_SET_ON_READ)
        return StoredSession(
            pk, dataset, key, version, session, status_by, status_at, updated_at, updated_by, n_edits, bool(row[16])
        )

    def _head(self, conn: Conn, pk: int) -> StoredSession:
        """The session stored under ``pk`` as its columns say it, its JSON not read: a session of its id, status and
        tags only (what a save of its status or tags needs)."""
        return self._head_of(
            conn, conn.execute(f"{_SELECT_ID} WHERE s.id = ?", [pk]).fetchall() if _storable(pk) else [], pk
        )

    def _head_of(self, conn: Conn, rows: list[Any], pk: int) -> StoredSession:
        """The session of ``_SELECT_ID``'s ``rows``, as ``_head`` gives it."""
        if not rows:
            raise NotFoundError(f"no session #{pk}")
        row = rows[0]
        return self._stored(conn, row, session=Session(session_id=row[4]))

    def _edits(self, conn: Conn, pk: int) -> list[Edit]:
        rows = conn.execute(f"SELECT {_EDIT_COLUMNS} FROM edits WHERE session_pk = ? ORDER BY id", [pk]).fetchall()
        return [_edit(r) for r in rows]

    def _last_edits(self, conn: Conn, pk: int, *, turns: tuple[int, int] | None = None) -> list[Edit]:
        """The newest edit of each field (of the session, and of each turn), oldest first: each edit sets its field
        whole, so these alone lay the reviewers' ground truth over the file's (a session edited 2,000 times reads
        its few fields, not its 2,000 edits). With ``turns`` (``(first, end)``): only the session's own fields,
        the fields of those turns, and every turn's weight."""
        only, args = "", [pk]
        if turns is not None:
            only = " AND (turn IS NULL OR (turn >= ? AND turn < ?) OR field = 'weight')"
            args += list(turns)
        rows = conn.execute(
            f"SELECT {_EDIT_COLUMNS} FROM edits WHERE id IN (SELECT max(id) FROM edits WHERE session_pk = ?{only} "
            "GROUP BY turn, field) ORDER BY id",
            args,
        ).fetchall()
        return [_edit(r) for r in rows]

    def history(self, pk: int) -> list[Edit]:
        """Every edit of the session, oldest first."""
        with self._engine.read() as conn:
            if not _storable(pk) or conn.execute("SELECT 1 FROM sessions WHERE id = ?", [pk]).fetchone() is None:
                raise NotFoundError(f"no session #{pk}")
            return self._edits(conn, pk)

    def state_at(self, pk: int, edit_id: int) -> Session:
        """The session as it was right after edit ``edit_id``."""
        with self._engine.read() as conn:
            stored = self._get(conn, pk)
            every = self._edits(conn, pk)
            if not any(e.id == edit_id for e in every):
                raise NotFoundError(f"session #{pk} has no edit #{edit_id}")
            data = conn.execute("SELECT data FROM sessions WHERE id = ?", [pk]).fetchone()[0]
        edits = [e for e in every if e.id <= edit_id]
        session = _apply(Session.model_validate(loads(data)), edits)
        # Status and tags start where their first edit found them (else they never changed).
        for name in ("status", "tags"):
            first = next((e for e in every if e.field == name), None)
            value = first.old if first is not None else getattr(stored.session, name)
            for edit in edits:
                if edit.field == name:
                    value = edit.new
            setattr(session, name, value)
        return session

    # -- saving -------------------------------------------------------------------------------------

    def save(
        self,
        pk: int,
        changes: dict[str, Any],
        *,
        base_version: int,
        turn: int | None = None,
        reason: str | None = None,
    ) -> int:
        """Save the store's user's changes to the session (``turn`` given: to that turn's ground truth).

        Returns the new version. Refused with ``ConflictError`` when the session changed since ``base_version``,
        with ``UsageError`` when a value is invalid, and with ``PermissionDeniedError`` when the user may not
        review; either way nothing is written.
        """
        allowed = TURN_FIELDS if turn is not None else (*SESSION_FIELDS, "status", "tags")
        unknown = [f for f in changes if f not in allowed]
        if unknown:
            where = "a turn" if turn is not None else "a session"
            raise UsageError(f"cannot edit {', '.join(unknown)} of {where}; editable: {', '.join(allowed)}")
        return self._save_all(pk, [(turn, changes)], base_version=base_version, reason=reason)

    def set_status(self, pk: int, status: str, *, base_version: int, reason: str | None = None) -> int:
        """Set the review status (``todo``, ``in_progress``, ``approved``, ``rejected``, ``flagged``)."""
        return self.save(pk, {"status": status}, base_version=base_version, reason=reason)

    def restore(self, pk: int, edit_id: int, *, base_version: int) -> int:
        """Bring every edited field back to its value right after edit ``edit_id``, in one save."""
        target = self.state_at(pk, edit_id)
        current = self.get(pk).session
        groups: list[tuple[int | None, dict[str, Any]]] = []
        session_changes = {
            f: _jsonable(getattr(target, f))
            for f in (*SESSION_FIELDS, "status", "tags")
            if getattr(target, f) != getattr(current, f)
        }
        if session_changes:
            groups.append((None, session_changes))
        for index in range(max(len(target.turn_truth), len(current.turn_truth))):
            old = current.turn_truth[index] if index < len(current.turn_truth) else TurnTruth()
            new = target.turn_truth[index] if index < len(target.turn_truth) else TurnTruth()
            turn_changes = {f: getattr(new, f) for f in TURN_FIELDS if getattr(new, f) != getattr(old, f)}
            if turn_changes:
                groups.append((index, turn_changes))
        reason = f"restored to the state after edit #{edit_id}"
        return self._save_all(pk, groups, base_version=base_version, reason=reason)

    def _save_all(
        self,
        pk: int,
        groups: list[tuple[int | None, dict[str, Any]]],
        *,
        base_version: int,
        reason: str | None,
    ) -> int:
        """Apply every group of changes (per turn, or ``None`` for the session) as one new version.

        Only the final state is checked, so that changes which are valid together (two qa_ids
        swapped, say) are accepted; a problem the session already had does not block a save.
        """
        # Status and tags alone (Approve & next): the session's JSON is not read, nor its search text written (it
        # holds neither); its own columns say all a save checks.
        light = all(turn is None and not changes.keys() - {"status", "tags"} for turn, changes in groups)
        with self._engine.write() as conn:
            # The user's role read again and the session read, in one round trip (PostgreSQL).
            reading = [(f"{_SELECT_ID} WHERE s.id = ?", [pk]) if light else (_SELECT_ONE, [pk, pk])]
            user_rows, *found = self._engine.run_all(
                conn, [self._store.user_statement(), *(reading if _storable(pk) else [])]
            )
            read = found[0] if found else []
            self._store.require("review", "change a session's ground truth or status", read=user_rows)
            author, author_id = self._store.author(conn)
            stored = self._head_of(conn, read, pk) if light else self._get_of(conn, read, pk)
            if stored.version != base_version:
                raise self._conflict(conn, stored, base_version)
            # A copy to change: the fields a save sets are replaced whole, never changed in place, but for the list
            # of turn truth (its entries replaced): copied, and nothing else (the conversation is shared, unchanged).
            session = stored.session.model_copy(update={"turn_truth": list(stored.session.turn_truth)})
            edits: list[tuple[int | None, str, Any, Any]] = []
            for turn, changes in groups:
                for name, value in changes.items():
                    old = _get(session, name, turn)
                    value = _set(session, name, turn, value)
                    if old != value:
                        edits.append((turn, name, old, value))
            if not edits:
                return stored.version
            _trim_turns(session)
            _check(session, before=stored.session)
            version = base_version + 1
            stamp = now()
            fields = [e[1] for e in edits]
            rows = [(pk, t, name, _dumps(old), _dumps(new), author, stamp, reason, version, author_id)
                    for t, name, old, new in edits]  # fmt: skip
            update, update_args = self._update_statement(
                pk, session, base_version, stamp, author, len(edits), fields, search=not light
            )
            alone = "tags" not in fields and len(rows) <= _EDITS_AT_ONCE  # (else: tags' rows, or edits in chunks)
            together = self._engine.logged_update(update, _EDIT_INSERT, len(rows)) if alone else None
            if together is not None:
                # PostgreSQL: the row and its edits in one statement, sent with the COMMIT; its edits are written
                # only when the row was at ``base_version`` (told after the COMMIT: nothing was written otherwise).
                logged = self._engine.defer(conn, together, [*update_args, *(v for row in rows for v in row)])
            else:
                logged = None
                if not self._update_row(conn, pk, update, update_args, session, fields):
                    # Another save was committed between this one's read and its write.
                    raise self._conflict(conn, self._head(conn, pk), base_version)
                for start in range(0, len(rows), _EDITS_AT_ONCE):  # (a statement each, sent with the COMMIT)
                    chunk = rows[start : start + _EDITS_AT_ONCE]
                    self._engine.defer(
                        conn,
                        f"INSERT INTO edits ({_EDIT_INSERT}) VALUES "
                        + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk)),
                        [value for row in chunk for value in row],
                    )
        if logged is not None and logged.rowcount == 0:  # (another save was committed since this one's read)
            with self._engine.read() as conn:
                raise self._conflict(conn, self._head(conn, pk), base_version)
        return version

    def _conflict(self, conn: Conn, stored: StoredSession, base_version: int) -> ConflictError:
        rows = conn.execute(
            "SELECT author, at, field, turn FROM edits WHERE session_pk = ? AND version > ? ORDER BY id",
            [stored.pk, base_version],
        ).fetchall()
        by_author: dict[tuple[str, str], list[str]] = {}
        for author, at, name, turn in rows:
            by_author.setdefault((author, at[:19].replace("T", " ")), []).append(
                name if turn is None else f"turns[{turn}].{name}"
            )
        changes = "; ".join(
            f"{who} at {at} changed {', '.join(dict.fromkeys(f))}" for (who, at), f in by_author.items()
        )
        label = stored.session.session_id or f"#{stored.pk}"
        return ConflictError(
            f"session {label} was changed since version {base_version} (now {stored.version}): "
            f"{changes or 'changed'}. Nothing was saved; reload to see their changes.",
            stored.version,
        )

    def _update_statement(
        self,
        pk: int,
        session: Session,
        base_version: int,
        stamp: str,
        author: str,
        n_edits: int,
        fields: list[str],
        *,
        search: bool = True,
    ) -> tuple[str, list[Any]]:
        """The UPDATE writing the session's new version over ``base_version`` (it changes no row when the row is at
        another version). ``search``: its search texts and ground-truth mark too (a change of status or tags alone
        leaves them)."""
        sets = ["version = version + 1", "updated_at = ?", "updated_by = ?", "n_edits = n_edits + ?"]
        args: list[Any] = [stamp, author, n_edits]
        if search:
            sets += ["search_text = ?", "system_text = ?", "has_truth = ?"]
            text, system = self._engine.search_documents(*search_texts(session))
            args += [text, system, int(session.has_ground_truth())]
        if "status" in fields:
            sets += ["status = ?", "status_by = ?", "status_at = ?"]
            args += [session.status, author, stamp]
        if "tags" in fields:
            sets.append("tags = ?")
            args.append(json.dumps(session.tags))
        return f"UPDATE sessions SET {', '.join(sets)} WHERE id = ? AND version = ?", [*args, pk, base_version]

    def _update_row(
        self, conn: Conn, pk: int, update: str, args: list[Any], session: Session, fields: list[str]
    ) -> bool:
        """Run ``_update_statement``'s UPDATE (and set the session's tags when they changed); False when the row is
        at another version (nothing changed)."""
        changed = conn.execute(update, args).rowcount
        if changed and "tags" in fields:
            conn.execute("DELETE FROM session_tags WHERE session_pk = ?", [pk])
            conn.executemany(
                "INSERT INTO session_tags (session_pk, tag) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(pk, t) for t in session.tags],
            )
        return bool(changed)


def _storable(pk: int) -> bool:
    """Whether ``pk`` can be a row's id (beyond 64-bit integers there is none: no query is asked)."""
    return -_INT64 <= pk < _INT64


def _data(conn: Conn, pk: int) -> str:
    return str(conn.execute("SELECT data FROM sessions WHERE id = ?", [pk]).fetchone()[0])


def _whole_page(stored: StoredSession) -> SessionPage:
    """A small session's page: the whole of it."""
    session = stored.session
    n_turns = session.n_turns()
    truth = {t: session.turn_truth[t] if t < len(session.turn_truth) else TurnTruth() for t in range(n_turns)}
    weights = [truth[t].weight for t in range(n_turns)]
    return SessionPage(
        stored,
        0,
        n_turns,
        len(session.messages),
        len(session.tool_calls()),
        truth,
        weights,
        session.final_answer(),
        whole=True,
    )


def _edit(r: tuple[Any, ...]) -> Edit:
    """An ``Edit`` of a row of ``_EDIT_COLUMNS``."""
    return Edit(r[0], r[1], r[2], r[3], _loads(r[4]), _loads(r[5]), r[6], r[7], r[8], r[9])


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _dumps(value: Any) -> str:
    return json.dumps(_jsonable(value), ensure_ascii=False)


def _jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_defaults=True)
    return value


def _get(session: Session, name: str, turn: int | None) -> Any:
    if turn is None:
        return _jsonable(getattr(session, name))
    return _jsonable(getattr(session.turn_truth[turn], name)) if turn < len(session.turn_truth) else None


def _set(session: Session, name: str, turn: int | None, value: Any) -> Any:
    """Set a field, validated by the model; returns the value as stored (JSON-able)."""
    try:
        if turn is None:
            checked = Session.model_validate({name: value})  # (no rule of the model spans two fields)
            setattr(session, name, getattr(checked, name))
            return _jsonable(getattr(session, name))
        n_user = sum(1 for m in session.messages if m.role == "user")
        # A turn beyond the conversation (left by a re-import that dropped turns) can still be edited, to clear it.
        if not 0 <= turn < max(n_user, len(session.turn_truth)):
            raise UsageError(f"turn {turn} does not exist; the session has {n_user} turns")
        while len(session.turn_truth) <= turn:
            session.turn_truth.append(TurnTruth())
        current = session.turn_truth[turn]
        session.turn_truth[turn] = TurnTruth.model_validate({**current.model_dump(), name: value})
        return _jsonable(getattr(session.turn_truth[turn], name))
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = name if turn is None else f"turns[{turn}].{name}"
        raise UsageError(f"{where}: {error['msg']}") from exc


def _check(session: Session, *, before: Session) -> None:
    """Refuse a save that brings a new error; errors the session had before do not block it."""
    # A save never changes the conversation: its own checks (tool calls' order and links) find what they found.
    conversation = session.messages is not before.messages
    errors = [str(p) for p in validate_session(session, conversation=conversation) if p.level == "error"]
    if not errors:
        return  # (the session before is checked only when there is something to compare it with)
    had = {str(p) for p in validate_session(before, conversation=conversation) if p.level == "error"}
    errors = [e for e in errors if e not in had]
    if errors:
        raise UsageError("; ".join(errors))


def _apply(session: Session, edits: list[Edit]) -> Session:
    """The imported session with the reviewers' edits laid over it, in order."""
    for edit in edits:
        if edit.field in ("conversation", "status", "tags"):
            continue  # the conversation is the file's; status and tags live in their columns
        if edit.turn is None:
            setattr(session, edit.field, getattr(Session.model_validate({edit.field: edit.new}), edit.field))
        else:
            while len(session.turn_truth) <= edit.turn:
                session.turn_truth.append(TurnTruth())
            truth = session.turn_truth[edit.turn]
            session.turn_truth[edit.turn] = TurnTruth.model_validate({**truth.model_dump(), edit.field: edit.new})
    _trim_turns(session)
    return session


def _trim_turns(session: Session) -> None:
    """Drop empty ground-truth entries at the end (left when a reviewer clears a turn's last field)."""
    empty = TurnTruth()
    while session.turn_truth and session.turn_truth[-1] == empty:
        session.turn_truth.pop()
