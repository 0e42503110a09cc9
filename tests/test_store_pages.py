"""A page of sessions is the same whichever statement finds it, on both engines: a first page and a deep one
(PostgreSQL reads a page from an offset of ``queries.DEEP`` on in two steps, the ids first), and a search asked
again (PostgreSQL then finds a search that matched few sessions once for its page and its count:
``Engine.page_counted``). Each page is checked against the order worked out here from what was imported."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from formats_util import write_jsonl

from evalcore.importing import import_file
from evalcore.store import Store, open_store
from evalcore.store.queries import DEEP, FOUND_ONCE_BELOW, SessionFilter

N = DEEP + 150


def _words(n: int) -> str:
    """Every session says "alpha"; one in three "beta"; one in fifty "zeta"."""
    return " ".join(w for w, every in (("alpha", 1), ("beta", 3), ("zeta", 50)) if n % every == 0)


def _session(n: int) -> dict[str, Any]:
    turns = 1 + n * 7 % 5
    messages = []
    for t in range(turns):
        messages += [
            {"role": "user", "content": f"question {n}.{t} {_words(n)}"},
            {"role": "assistant", "content": f"answer {n}.{t}"},
        ]
    return {"schema_version": 1, "session_id": f"s{n}", "messages": messages, "tags": ["odd"] if n % 2 else []}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def pages_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """One store of N sessions for the module, on each engine."""
    tmp = tmp_path_factory.mktemp("pages")
    if request.param == "sqlite":
        url = str(tmp / "pages.db")
    else:
        url = str(request.getfixturevalue("pg_cluster").new_database())
    with open_store(url) as store:
        import_file(store, write_jsonl(tmp / "s.jsonl", [_session(n) for n in range(N)]), "d")
        yield store


def _expected(store: Store, f: SessionFilter, sort: str, descending: bool) -> list[int]:
    """The pks ``f`` matches in the order asked, from what was imported (session ``n`` is the n-th pk)."""
    pks = store.sessions.pks("d")
    assert len(pks) == N
    keep = []
    for n, pk in enumerate(pks):
        words = set(_words(n).split())
        if f.search and not set(f.search.split()) <= words:
            continue
        if f.tags and n % 2 == 0:
            continue
        keep.append((1 + n * 7 % 5 if sort == "turns" else 0, pk))
    return [pk for _, pk in sorted(keep, reverse=descending)]


FILTERS = [
    SessionFilter(),
    SessionFilter(tags=["odd"]),
    SessionFilter(search="alpha"),  # every session
    SessionFilter(search="beta"),  # a third
    SessionFilter(search="zeta"),  # few
    SessionFilter(search="zeta beta"),
    SessionFilter(search="nowhere"),
]


@pytest.mark.parametrize("f", FILTERS, ids=lambda f: f.search or ",".join(f.tags) or "all")
def test_every_page_is_the_same_first_time_and_again(pages_store: Store, f: SessionFilter) -> None:
    for sort in ("order", "turns"):
        for descending in (False, True):
            expected = _expected(pages_store, f, sort, descending)
            for offset in (0, 40, DEEP - 10, DEEP, N - 30, N + 10):
                pages_store.sessions._matched.clear()  # (asked the first time: no search remembered)
                for _ in range(2):  # (the second time, a search that matched few is found once for page and count)
                    page = pages_store.sessions.browse(
                        "d", f, sort=sort, descending=descending, limit=50, offset=offset
                    )
                    assert page.total == len(expected), (f, sort, descending, offset)
                    assert [s.pk for s in page.items] == expected[offset : offset + 50], (f, sort, offset)
                    if f.search is None:
                        continue
                    assert pages_store.sessions.count("d", f) == len(expected)


def test_a_search_remembers_how_many_it_matched(pages_store: Store) -> None:
    """What the test above relies on: the second time, a search's page is asked knowing how many it matched the
    first time (PostgreSQL: found once for the page and its count, or the page alone when it is the last)."""
    assert N < FOUND_ONCE_BELOW  # (every search here matched few)
    sessions = pages_store.sessions
    for text, matched in (("zeta", 23), ("nowhere", 0), ("alpha", N)):
        sessions.browse("d", SessionFilter(search=text))
        searched = list(sessions._matched)[-1]  # (the search asked last)
        assert sessions._matched[searched] == matched
    counted = pages_store._engine.page_counted("s.id", "SELECT s.id FROM sessions s", "s.id ASC")
    assert (counted is not None) == (pages_store.kind == "postgresql")


def test_the_searches_remembered_are_bounded(pages_store: Store) -> None:
    """A long-running app asks many searches: the oldest are forgotten (and still answered right)."""
    from evalcore.store.queries import _REMEMBERED

    for n in range(5, _REMEMBERED + 25):  # (session n alone says the number n: its turns are numbered 0 to 4)
        assert pages_store.sessions.browse("d", SessionFilter(search=str(n)), limit=5).total == 1
    assert len(pages_store.sessions._matched) == _REMEMBERED
    assert pages_store.sessions.browse("d", SessionFilter(search="zeta"), limit=5).total == 23
