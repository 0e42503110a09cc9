"""Browsing a dataset: filters, full-text search, sorting and pagination, fast at 100,000 sessions.

``Browsing`` is the part of ``store.sessions`` that finds sessions: ``browse`` (a page), ``count``, ``iter_pks``,
``facets``, ``neighbours`` (Review's previous and next), ``metadata_of``. NULLs sort first in ascending order
(and last in descending) on both engines, said explicitly.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore.errors import UsageError
from evalcore.schema import STATUSES
from evalcore.store.engine import Conn, Engine
from evalcore.store.records import SessionSummary

if TYPE_CHECKING:
    from evalcore.store.store import Store

__all__ = ["SORTS", "Browsing", "Facets", "Neighbours", "Page", "SessionFilter"]

#: Sort keys a page can be ordered by ("order" is the order sessions were imported in).
SORTS = {
    "order": "s.id",
    "session_id": "s.session_id",
    "assistant": "s.assistant_id",
    "status": "s.status",
    "turns": "s.n_turns",
    "tool_calls": "s.n_tool_calls",
    "updated": "s.updated_at",
    "score": "sc.value",
}
_INT64_MAX = 2**63 - 1  # the largest integer either engine holds


def _whole(name: str, value: object, *, minimum: int = 0) -> int:
    """``value`` when it is a whole number SQLite can hold, at least ``minimum``; else a ``UsageError``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be a whole number, got {value!r}")
    if not minimum <= value <= _INT64_MAX:
        raise UsageError(f"{name} must be from {minimum} to {_INT64_MAX}, got {value}")
    return value


def _finite(name: str, value: object) -> float:
    """``value`` when it is a finite number; else a ``UsageError`` (NaN would match nothing, silently)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number, got {value!r}")
    return float(value)


@dataclass
class SessionFilter:
    """Which sessions to show or export. Empty fields do not filter."""

    status: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # sessions carrying every one of these tags
    assistant: str | None = None
    search: str | None = None  # words, all of which must appear (``word*`` for a prefix)
    search_system_prompt: bool = False  # search the system prompt (and context) too; left out by default
    has_truth: bool | None = None  # True: only sessions with ground truth; False: only those without
    run_id: int | None = None  # with ``metric``: only sessions this run scored...
    metric: str | None = None
    min_score: float | None = None  # ...within these bounds
    max_score: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The filter's set fields, for a manifest."""
        return {k: v for k, v in asdict(self).items() if v not in (None, []) and (k != "search_system_prompt" or v)}

    @property
    def searching(self) -> bool:
        """Whether the filter has a search (a blank one looks for nothing)."""
        return self.search is not None and bool(self.search.strip())

    @property
    def search_alone(self) -> bool:
        """Whether a search is all the filter asks."""
        return self.searching and self == SessionFilter(
            search=self.search, search_system_prompt=self.search_system_prompt
        )


@dataclass
class Page:
    """One page of sessions and how many match in all."""

    total: int
    items: list[SessionSummary]


def _query(engine: Engine, dataset_id: int, f: SessionFilter, *, with_score: bool) -> tuple[str, list[Any]]:
    sql = ["FROM sessions s"]
    args: list[Any] = []
    scored = f.min_score is not None or f.max_score is not None or f.metric is not None
    if f.run_id is not None:
        _whole("the run", f.run_id, minimum=1)
    for name, bound in (("the minimum score", f.min_score), ("the maximum score", f.max_score)):
        if bound is not None:
            _finite(name, bound)
    if f.run_id is not None or with_score or scored:
        if f.run_id is None or f.metric is None:
            raise UsageError("a score filter or sort needs both a run and a metric")
        sql.append("JOIN scores sc ON sc.session_pk = s.id AND sc.run_id = ? AND sc.metric = ? AND sc.turn = -1")
        args += [f.run_id, f.metric]
    where = ["s.dataset_id = ?"]
    args.append(dataset_id)
    if f.status:
        unknown = [s for s in f.status if s not in STATUSES]
        if unknown:
            raise UsageError(f"unknown status {', '.join(unknown)}; use one of {', '.join(STATUSES)}")
        where.append(f"s.status IN ({','.join('?' * len(f.status))})")
        args += f.status
    for tag in f.tags:
        where.append("s.id IN (SELECT session_pk FROM session_tags WHERE tag = ?)")
        args.append(tag)
    if f.assistant:
        where.append("s.assistant_id = ?")
        args.append(f.assistant)
    if f.has_truth is not None:
        where.append("s.has_truth = ?")
        args.append(int(f.has_truth))
    if f.search is not None and f.searching:
        clause, values = engine.search_clause(f.search, system=f.search_system_prompt)
        where.append(clause)
        args += values
    if f.min_score is not None:
        where.append("sc.value >= ?")
        args.append(f.min_score)
    if f.max_score is not None:
        where.append("sc.value <= ?")
        args.append(f.max_score)
    return " ".join(sql) + " WHERE " + " AND ".join(where), args


def _counted(engine: Engine, dataset_id: int, f: SessionFilter) -> tuple[str, list[Any]] | None:
    """How many sessions ``f`` matches, read from the counts the database keeps (``engine.keeps_counts``), when
    ``f`` asks only what they are counted by (status, assistant, ground truth; or one tag alone); else None (count
    them)."""
    if not engine.keeps_counts or len(f.tags) > 1 or f.searching:
        return None
    if f.run_id is not None or f.metric is not None or f.min_score is not None or f.max_score is not None:
        return None
    if f.tags:  # one tag, and nothing else asked: its count (tags are counted alone)
        if f.status or f.assistant or f.has_truth is not None:
            return None
        return "SELECT coalesce(sum(n), 0) FROM tag_counts WHERE dataset_id = ? AND tag = ?", [dataset_id, f.tags[0]]
    where, args = ["dataset_id = ?"], list[Any]([dataset_id])
    if f.status:
        where.append(f"status IN ({','.join('?' * len(f.status))})")
        args += f.status
    if f.assistant:
        where.append("assistant = ?")
        args.append("=" + f.assistant)
    if f.has_truth is not None:
        where.append("has_truth = ?")
        args.append(int(f.has_truth))
    return f"SELECT coalesce(sum(n), 0) FROM session_counts WHERE {' AND '.join(where)}", args


def _count_statement(
    engine: Engine, dataset_id: int, f: SessionFilter, body: str, args: list[Any]
) -> tuple[str, list[Any]]:
    """The statement counting the sessions of ``_query``'s ``body`` (the kept counts where they say it, the
    engine's own count of a search alone where it has one)."""
    matches = _search_matches(engine, dataset_id, f)
    searched = (f"SELECT count(*) FROM ({matches[0]}) m", matches[1]) if matches is not None else None
    return _counted(engine, dataset_id, f) or searched or (f"SELECT count(*) {body}", args)


def _search_matches(engine: Engine, dataset_id: int, f: SessionFilter) -> tuple[str, list[Any]] | None:
    """The engine's own statement selecting the ids of the sessions ``f`` matches (as ``id``) when ``f`` is a search
    alone and the engine has one (``Engine.search_matches``); else None."""
    if f.search is None or not f.search_alone:
        return None
    return engine.search_matches(dataset_id, f.search, system=f.search_system_prompt)


@dataclass(frozen=True)
class Facets:
    """What the filters of a dataset can offer, with counts: statuses, tags, assistants, ground truth."""

    total: int
    statuses: dict[str, int]
    tags: dict[str, int]
    assistants: dict[str, int]
    with_truth: int


@dataclass(frozen=True)
class Neighbours:
    """Where a session sits among the sessions a filter matches, in a sort order."""

    index: int | None  # 0-based; None when the session does not match the filter
    total: int
    previous: int | None  # pks
    next: int | None


#: Whether session ``s`` shares its session id with another session of its dataset (several assistants' answers to
#: one conversation, told apart by the assistant in their key).
SHARED_ID = (
    "(s.key LIKE 'ida:%' AND EXISTS (SELECT 1 FROM sessions o WHERE o.dataset_id = s.dataset_id "
    "AND o.session_id = s.session_id AND o.id != s.id))"
)

#: The sort columns that may hold NULL (the others are NOT NULL).
_NULLABLE = {"s.session_id", "s.assistant_id", "sc.value"}


def _order(column: str, direction: str) -> str:
    """``column`` in ``direction`` with NULLs first ascending and last descending (SQLite's order, said). A NOT NULL
    column is left without the clause: PostgreSQL's planner does not know it holds no NULL, and an order naming
    ``NULLS FIRST`` ascending does not match its plain index, which it would then not use (a scan and a sort of
    the whole dataset for every page)."""
    if column not in _NULLABLE:
        return f"{column} {direction}"
    return f"{column} {direction} NULLS {'FIRST' if direction == 'ASC' else 'LAST'}"


#: A search that matched fewer sessions than this the last time it was asked: its page and count read its matches
#: once (``Engine.page_counted``); one that matched more: its page walks the sort's index, where matches are dense
#: (a page of 50 is found after a few hundred sessions), and its count is a statement of its own. A page that was
#: the search's last the last time (``offset + limit`` beyond its matches) is asked alone: its rows are the count.
FOUND_ONCE_BELOW = 5000
#: The columns of a page's rows (``Browsing.browse``); PostgreSQL's rows say more after them.
_COLUMNS = 17
#: The dataset's name, by its id: the id this process read before still names the dataset asked.
_NAMED = "SELECT name FROM datasets WHERE id = ?"
#: An offset from which a page is deep (``Engine.page``).
DEEP = 1000
_REMEMBERED = 512  # searches whose number of matches is remembered (the oldest forgotten first)


class Browsing:
    """Finding a dataset's sessions: the part of ``store.sessions`` that reads pages, counts and neighbours."""

    _store: Store
    _engine: Engine
    _matched: OrderedDict[tuple[Any, ...], int]  # a search's (dataset id, SQL, parameters) -> its matches the last time

    def _remember(self, searched: tuple[Any, ...], total: int) -> None:
        matched = self._matched  # (each step one call, none failing if another thread steps between: they share it)
        matched.pop(searched, None)
        matched[searched] = total  # (the newest last)
        while len(matched) > _REMEMBERED:
            matched.popitem(last=False)

    def _where(self, dataset: str, filters: SessionFilter | None, *, with_score: bool = False) -> tuple[str, list[Any]]:
        return _query(
            self._engine, self._store.datasets.id_of(dataset), filters or SessionFilter(), with_score=with_score
        )

    def _counting(
        self, dataset: str, filters: SessionFilter | None, *, with_score: bool = False
    ) -> tuple[str, list[Any], str, list[Any]]:
        """``_where``'s SQL and parameters, then those of the statement counting its matches."""
        f = filters or SessionFilter()
        dataset_id = self._store.datasets.id_of(dataset)
        body, args = _query(self._engine, dataset_id, f, with_score=with_score)
        return body, args, *_count_statement(self._engine, dataset_id, f, body, args)

    def browse(
        self,
        dataset: str,
        filters: SessionFilter | None = None,
        *,
        sort: str = "order",
        descending: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> Page:
        """One page of the dataset's sessions matching ``filters``."""
        if sort not in SORTS:
            raise UsageError(f"unknown sort {sort!r}; use one of {', '.join(SORTS)}")
        limit = _whole("the page size (limit)", limit)
        offset = _whole("the offset", offset)
        f = filters or SessionFilter()
        # The tie-break follows the sort's direction, so that SQLite can walk the index backwards.
        direction = "DESC" if descending else "ASC"
        order = f"{_order(SORTS[sort], direction)}, s.id {direction}"
        datasets = self._store.datasets
        for fresh in (False, True):
            dataset_id = datasets.id_of(dataset, fresh=fresh)  # (the id this process knows: checked below)
            body, args = _query(self._engine, dataset_id, f, with_score=sort == "score")
            counted = _count_statement(self._engine, dataset_id, f, body, args)
            searched = (dataset_id, body, *args) if f.searching else None
            score = "sc.value" if "JOIN scores" in body else "NULL"
            columns = (
                "s.id, s.session_id, s.assistant_id, s.title, s.status, s.tags, s.n_turns, s.n_messages, "
                f"s.n_tool_calls, s.position, s.version, s.updated_at, {score}, s.key, s.has_truth, s.updated_by, "
                # (PostgreSQL: said of the page's rows only, in the round trip; SQLite: asked after, see below)
                + (SHARED_ID if self._engine.speculates else "0")
            )
            last = self._matched.get(searched) if searched is not None else None  # (its matches the last time)
            ending = last is not None and last < offset + limit  # (then the search's last page: no count sent)
            finding_once = last is not None and not ending and last < FOUND_ONCE_BELOW and score == "NULL"
            said: list[Any] = []  # (PostgreSQL: the parameters of what each row says beyond the page's columns)
            if self._engine.speculates:  # the dataset's name and the count in the page's rows: one statement
                columns += f", ({_NAMED})"
                said.append(dataset_id)
                if not finding_once and not ending:
                    columns += f", ({counted[0]})"
                    said += counted[1]
            once = None  # (a search that matched few: the page's rows end with its count)
            if finding_once:
                # Its matches, with what the order reads; in import order, a search alone's are the engine's own.
                alone = _search_matches(self._engine, dataset_id, f) if sort == "order" else None
                kept = ", ".join(dict.fromkeys(["s.id", SORTS[sort]]))
                matches, matched_args = alone or (f"SELECT {kept} {body}", args)
                found = self._engine.page_counted(columns, matches, order)
                once = (found, [*matched_args, *said, limit, offset]) if found is not None else None
            page = once or (self._engine.page(columns, body, order, deep=offset >= DEEP), [*said, *args, limit, offset])
            with self._engine.read() as conn:
                said_after: tuple[Any, ...] = ()  # (PostgreSQL: the name, then the count when it was asked)
                if self._engine.speculates:
                    rows = conn.execute(*page).fetchall()
                    said_after = tuple(rows[0][_COLUMNS:]) if rows else ()
                    rows = [r[:_COLUMNS] for r in rows]
                    named = [said_after[:1]] if rows else conn.execute(_NAMED, [dataset_id]).fetchall()
                else:
                    rows, named = self._engine.run_all(conn, [page, (_NAMED, [dataset_id])])
                if named != [(dataset,)] and not fresh:  # renamed or deleted since this process read its id
                    continue
                if 0 < len(rows) < limit or (not rows and offset == 0 and limit > 0):
                    total = offset + len(rows)  # the last page: the count is known without counting
                elif len(said_after) > 1:
                    total = said_after[1]
                else:
                    total = conn.execute(*counted).fetchone()[0]
                if not self._engine.speculates:  # (SQLite would say it of every row it sorts)
                    shared = _shared_ids(
                        conn, rows[0][0] if rows else 0, [r[1] for r in rows if str(r[13]).startswith("ida:")]
                    )
                    rows = [(*r[:16], r[1] in shared) for r in rows]
            if searched is not None:
                self._remember(searched, int(total))
            break
        items = [
            SessionSummary(
                r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7], r[8], r[9], r[10], r[11], r[12],
                key=r[13], has_truth=bool(r[14]), updated_by=r[15], shared=bool(r[16]),
            )
            for r in rows
        ]  # fmt: skip
        return Page(int(total), items)

    def iter_pks(self, dataset: str, filters: SessionFilter | None = None, *, chunk: int = 1000) -> Iterator[int]:
        """Every matching session's ``pk``, in import order, fetched a chunk at a time."""
        body, args = self._where(dataset, filters)
        last = 0
        while True:
            with self._engine.read() as conn:
                rows = conn.execute(
                    f"SELECT s.id {body} AND s.id > ? ORDER BY s.id LIMIT ?", [*args, last, chunk]
                ).fetchall()
            if not rows:
                return
            for (pk,) in rows:
                yield pk
            last = rows[-1][0]

    def iter_keyed(
        self, dataset: str, filters: SessionFilter | None = None, *, chunk: int = 1000
    ) -> Iterator[tuple[int, str]]:
        """Every matching session's ``(pk, stored key)``, in import order, fetched a chunk at a time."""
        body, args = self._where(dataset, filters)
        last = 0
        while True:
            with self._engine.read() as conn:
                rows = conn.execute(
                    f"SELECT s.id, s.key {body} AND s.id > ? ORDER BY s.id LIMIT ?", [*args, last, chunk]
                ).fetchall()
            if not rows:
                return
            yield from ((pk, key) for pk, key in rows)
            last = rows[-1][0]

    def pks_of_keys(self, dataset: str, keys: Sequence[str]) -> dict[str, int]:
        """The pk of each session of ``dataset`` stored under one of ``keys`` (keys not found left out)."""
        found: dict[str, int] = {}
        unique = list(dict.fromkeys(keys))
        body, args = self._where(dataset, None)
        with self._engine.read() as conn:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                for pk, key in conn.execute(
                    f"SELECT s.id, s.key {body} AND s.key IN ({','.join('?' * len(chunk))})", [*args, *chunk]
                ):
                    found[key] = pk
        return found

    def matching(self, dataset: str, filters: SessionFilter | None = None) -> list[int]:
        """Every session ``filters`` match in ``dataset``, in import order."""
        return list(self.iter_pks(dataset, filters))

    def metadata_of(
        self, dataset: str, key: str, filters: SessionFilter | None = None
    ) -> Iterator[tuple[str | None, Any]]:
        """Each matching session's ``session_id`` with its ``metadata[key]`` (None when it has none), in import
        order: read from the stored JSON without building the sessions (what a format or the solver keeps there is
        not edited by reviewers)."""
        body, args = self._where(dataset, filters)
        with self._engine.read() as conn:
            yield from self._engine.metadata_values(conn, body, args, key)

    def count(self, dataset: str, filters: SessionFilter | None = None) -> int:
        """How many of the dataset's sessions match ``filters``."""
        _, _, counting, args = self._counting(dataset, filters)
        with self._engine.read() as conn:
            return int(conn.execute(counting, args).fetchone()[0])

    def facets(self, dataset: str) -> Facets:
        """The dataset's statuses, tags and assistants with how many sessions have each (most first)."""
        dataset_id = self._store.datasets.id_of(dataset)
        statuses = {s: 0 for s in STATUSES}
        with self._engine.read() as conn:
            if self._engine.keeps_counts:
                return self._kept_facets(conn, dataset_id, statuses)
            by_status = "SELECT status, count(*) FROM sessions WHERE dataset_id = ? GROUP BY status"
            for status, n in conn.execute(by_status, [dataset_id]):
                statuses[status] = n
            tags = self._tag_counts(conn, dataset_id)
            assistants = dict(
                conn.execute(
                    "SELECT assistant_id, count(*) AS n FROM sessions WHERE dataset_id = ? "
                    "AND assistant_id IS NOT NULL GROUP BY assistant_id ORDER BY n DESC, assistant_id",
                    [dataset_id],
                ).fetchall()
            )
            with_truth = conn.execute(
                "SELECT count(*) FROM sessions WHERE dataset_id = ? AND has_truth = 1", [dataset_id]
            ).fetchone()[0]
        return Facets(sum(statuses.values()), statuses, tags, assistants, int(with_truth))

    def _kept_facets(self, conn: Conn, dataset_id: int, statuses: dict[str, int]) -> Facets:
        """``facets`` from the counts the database keeps (``engine.keeps_counts``)."""
        by_assistant: dict[str, int] = {}
        with_truth = 0
        for status, assistant, has_truth, n in conn.execute(
            "SELECT status, assistant, has_truth, n FROM session_counts WHERE dataset_id = ? AND n > 0", [dataset_id]
        ):
            statuses[status] = statuses.get(status, 0) + n
            if assistant:
                by_assistant[assistant[1:]] = by_assistant.get(assistant[1:], 0) + n
            with_truth += n if has_truth else 0
        assistants = dict(sorted(by_assistant.items(), key=lambda kv: (-kv[1], kv[0])))
        tags = dict(
            conn.execute(
                "SELECT tag, n FROM tag_counts WHERE dataset_id = ? AND n > 0 ORDER BY n DESC, tag", [dataset_id]
            ).fetchall()
        )
        return Facets(sum(statuses.values()), statuses, tags, assistants, with_truth)

    @staticmethod
    def _tag_counts(conn: Conn, dataset_id: int) -> dict[str, int]:
        return dict(
            conn.execute(
                "SELECT t.tag, count(*) AS n FROM session_tags t JOIN sessions s ON s.id = t.session_pk "
                "WHERE s.dataset_id = ? GROUP BY t.tag ORDER BY n DESC, t.tag",
                [dataset_id],
            ).fetchall()
        )

    def assistants(self, dataset: str) -> dict[int, str | None]:
        """Each session's assistant, by ``pk``."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            return dict(conn.execute("SELECT id, assistant_id FROM sessions WHERE dataset_id = ?", [dataset_id]))

    def assistants_of(self, pks: list[int]) -> dict[int, str | None]:
        """The assistant of each of a few sessions, by ``pk``."""
        found: dict[int, str | None] = {}
        with self._engine.read() as conn:
            for start in range(0, len(pks), 500):
                chunk = pks[start : start + 500]
                found.update(
                    conn.execute(
                        f"SELECT id, assistant_id FROM sessions WHERE id IN ({','.join('?' * len(chunk))})", chunk
                    ).fetchall()
                )
        return found

    def status_changes(self, dataset: str) -> list[tuple[str, str, Any, int]]:
        """How many times each reviewer set each status on each day: ``(day, author, status as JSON, count)``."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            return conn.execute(
                "SELECT substr(e.at, 1, 10), e.author, e.new, count(*) FROM edits e "
                "JOIN sessions s ON s.id = e.session_pk WHERE s.dataset_id = ? AND e.field = 'status' "
                "AND e.turn IS NULL GROUP BY substr(e.at, 1, 10), e.author, e.new",
                [dataset_id],
            ).fetchall()

    def last_edit(self) -> int:
        """The id of the newest edit of any session (0 before the first): it grows with every change."""
        with self._engine.read() as conn:
            return int(conn.execute("SELECT coalesce(max(id), 0) FROM edits").fetchone()[0])

    def edited_since(self, edit_id: int) -> set[int]:
        """The sessions changed by an edit newer than ``edit_id``."""
        with self._engine.read() as conn:
            return {r[0] for r in conn.execute("SELECT DISTINCT session_pk FROM edits WHERE id > ?", [edit_id])}

    def shape(self, dataset: str) -> tuple[int, int]:
        """How many sessions the dataset has and its newest session's pk (0 when empty): what changes when one is
        added."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            n, top = conn.execute(
                "SELECT count(*), coalesce(max(id), 0) FROM sessions WHERE dataset_id = ?", [dataset_id]
            ).fetchone()
        return int(n), int(top)

    def neighbours(
        self,
        dataset: str,
        pk: int,
        filters: SessionFilter | None = None,
        *,
        sort: str = "order",
        descending: bool = False,
    ) -> Neighbours:
        """The sessions before and after ``pk`` in the list ``browse`` shows for the same filter and sort.

        A session the filter no longer matches (approved while reviewing "todo", say) still has
        neighbours: the sessions that would be around it, so "next" goes on from where it was.
        """
        f = filters or SessionFilter()
        if sort not in SORTS:
            raise UsageError(f"unknown sort {sort!r}; use one of {', '.join(SORTS)}")
        pk = _whole("the session", pk, minimum=1)
        body, args, counting, count_args = self._counting(dataset, f, with_score=sort == "score")
        column = SORTS[sort]
        with self._engine.read() as conn:
            if column == "s.id":
                value: Any = pk
            else:
                source = (
                    "scores sc WHERE sc.session_pk = ? AND sc.run_id = ? AND sc.metric = ? AND sc.turn = -1"
                    if sort == "score"
                    else "sessions s WHERE s.id = ?"
                )
                extra = [f.run_id, f.metric] if sort == "score" else []
                row = conn.execute(f"SELECT {column} FROM {source}", [pk, *extra]).fetchone()
                value = row[0] if row else None
            after, after_args = _beyond(column, value, pk, forward=not descending)
            before, before_args = _beyond(column, value, pk, forward=descending)
            direction = "DESC" if descending else "ASC"
            back = "ASC" if descending else "DESC"
            nxt = conn.execute(
                f"SELECT s.id {body} AND {after} ORDER BY {_order(column, direction)}, s.id {direction} LIMIT 1",
                [*args, *after_args],
            ).fetchone()
            prev = conn.execute(
                f"SELECT s.id {body} AND {before} ORDER BY {_order(column, back)}, s.id {back} LIMIT 1",
                [*args, *before_args],
            ).fetchone()
            total = conn.execute(counting, count_args).fetchone()[0]
            matches = conn.execute(f"SELECT 1 {body} AND s.id = ?", [*args, pk]).fetchone() is not None
            index = None
            if matches:
                index = conn.execute(f"SELECT count(*) {body} AND {before}", [*args, *before_args]).fetchone()[0]
        return Neighbours(index, int(total), prev[0] if prev else None, nxt[0] if nxt else None)


def _beyond(column: str, value: Any, pk: int, *, forward: bool) -> tuple[str, list[Any]]:
    """SQL for "comes after (``forward``) or before ``(value, pk)``" in ascending order with NULLs first (the
    order ``_order`` asks both engines for)."""
    if column == "s.id":
        return ("s.id > ?" if forward else "s.id < ?"), [pk]
    if value is None:
        if forward:
            return f"(({column} IS NULL AND s.id > ?) OR {column} IS NOT NULL)", [pk]
        return f"({column} IS NULL AND s.id < ?)", [pk]
    if forward:
        return f"({column} > ? OR ({column} = ? AND s.id > ?))", [value, value, pk]
    return f"({column} < ? OR ({column} = ? AND s.id < ?) OR {column} IS NULL)", [value, value, pk]


def _shared_ids(conn: Conn, pk: int, session_ids: list[str]) -> set[str]:
    """Which of ``session_ids`` (of the dataset of session ``pk``) several sessions have (several assistants')."""
    if not session_ids:
        return set()
    marks = ",".join("?" * len(session_ids))
    rows = conn.execute(
        f"SELECT session_id FROM sessions WHERE dataset_id = (SELECT dataset_id FROM sessions WHERE id = ?) "
        f"AND session_id IN ({marks}) GROUP BY session_id HAVING count(*) > 1",
        [pk, *session_ids],
    )
    return {r[0] for r in rows}
