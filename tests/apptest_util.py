"""Helpers for the AppTest tests of the Streamlit app (tests/test_app*.py): databases, data, runs.

Every test works on a real SQLite file of its own: a copy of a template built once per test
session with the sample data (as the app loads it on first start) and two small datasets
written here, ``shop`` (30 sessions for the Sessions page) and ``review`` (sessions for the
Review page). Nothing of evalcore is mocked.

The fixtures (``db``, ``fresh_db``, ``store``, ``template_db``) are imported by
the test modules as ``*_fixture``: ``from apptest_util import db_fixture``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import ISSUER, as_user
from streamlit.testing.v1 import AppTest

from evalcore.importing import import_file
from evalcore.samples import ensure_samples
from evalcore.scoring import score_dataset
from evalcore.store import Store, open_store
from evalcore.views.text import WORD_JOINER

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DATA = ROOT / "sample_data"
APP = str(ROOT / "app.py")
PAGES = {
    name: f"app_pages/{name}.py"
    for name in (
        "datasets",
        "sessions",
        "review",
        "labeling",
        "metrics",
        "dashboard",
        "compare",
        "export",
        "simulate",
        "users",
    )
}

XSS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "![x](http://127.0.0.1:9/x.png)",
    "[a](javascript:alert(1))",
]


def _line(session: dict[str, Any]) -> str:
    return json.dumps({"schema_version": 1, **session}) + "\n"


def shop_sessions() -> list[dict[str, Any]]:
    """30 sessions: 5 approved, 3 flagged, 22 todo; tags ``refund`` (6) and ``vip`` (3); assistants
    ``bot-a`` / ``bot-b`` (15 each); a reference answer on every third (10); 1 to 3 turns (10 of each);
    the word "zebra" only in shop-07."""
    sessions = []
    for i in range(30):
        messages: list[dict[str, Any]] = []
        for t in range(1 + i % 3):
            word = "zebra" if i == 7 and t == 0 else "order"
            messages += [
                {"role": "user", "content": f"Question {t + 1} of shop {i} about the {word}"},
                {"role": "assistant", "content": f"Answer {t + 1} of shop {i}"},
            ]
        tags = (["refund"] if i < 6 else []) + (["vip"] if i % 10 == 0 else [])
        status = "approved" if i < 5 else "flagged" if i < 8 else "todo"
        session: dict[str, Any] = {
            "session_id": f"shop-{i:02d}",
            "assistant_id": "bot-a" if i % 2 == 0 else "bot-b",
            "messages": messages,
            "tags": tags,
            "status": status,
        }
        if i % 3 == 0:
            session["reference"] = f"Reference of shop {i}"
        sessions.append(session)
    return sessions


def review_sessions() -> list[dict[str, Any]]:
    """``r-tools`` (6 turns, a tool call in turn 1, a reference, a rubric), ``r-second``, ``r-xss``."""
    tools: list[dict[str, Any]] = [
        {"role": "user", "content": "Where is order 7?"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "get_order", "args": {"order_id": 7}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_order", "content": '{"status": "shipped"}'},
        {"role": "assistant", "content": "Order 7 has shipped."},
    ]
    for t in range(2, 7):
        tools += [
            {"role": "user", "content": f"Question number {t}"},
            {"role": "assistant", "content": f"Answer number {t}"},
        ]
    tools[-1]["content"] = "The parcel left the depot on Monday."
    return [
        {
            "session_id": "r-tools",
            "assistant_id": "helper",
            "messages": tools,
            "reference": "The parcel left the warehouse on Monday.",
            "rubrics": {"politeness": "The assistant is polite."},
        },
        {
            "session_id": "r-second",
            "messages": [{"role": "user", "content": "Second hello"}, {"role": "assistant", "content": "Hi again"}],
        },
        {
            "session_id": "r-xss",
            "messages": [
                {"role": "user", "content": "\n".join(XSS)},
                {"role": "assistant", "content": "Reply: " + " ".join(XSS)},
            ],
        },
    ]


def write_jsonl(path: Path, sessions: list[dict[str, Any]]) -> Path:
    path.write_text("".join(_line(s) for s in sessions), encoding="utf-8")
    return path


def build_template(folder: Path) -> Path:
    """A database as a first start leaves it (the samples, scored), plus ``shop`` and ``review``, scored."""
    path = folder / "template.db"
    with open_store(path) as store:
        ensure_samples(store, SAMPLE_DATA)
        import_file(store, write_jsonl(folder / "shop.jsonl", shop_sessions()), "shop", workers=1)
        import_file(store, write_jsonl(folder / "review.jsonl", review_sessions()), "review", workers=1)
        score_dataset(store, "shop", ["turn_count"])
        score_dataset(store, "review", ["turn_count", "tool_call_count"])
    return path


def copy_db(source: Path, target: Path) -> Path:
    """A consistent copy of a (WAL) database file."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    return target


@pytest.fixture(scope="session", name="template_db")
def template_db_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(name="db")
def db_fixture(template_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own copy of the template database, as the app's database."""
    path = copy_db(template_db, tmp_path / "x.db")
    monkeypatch.setenv("EVALCORE_DB", str(path))
    monkeypatch.setenv("EVALCORE_SAMPLE_DATA", str(SAMPLE_DATA))
    return path


@pytest.fixture(name="fresh_db")
def fresh_db_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A database file that does not exist yet, and a sample folder with no file in it (set
    ``EVALCORE_SAMPLE_DATA`` again for the samples)."""
    (tmp_path / "no-samples").mkdir()
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "x.db"))
    monkeypatch.setenv("EVALCORE_SAMPLE_DATA", str(tmp_path / "no-samples"))
    return tmp_path / "x.db"


@pytest.fixture(name="store")
def store_fixture(db: Path) -> Iterator[Store]:
    """A connection of the test's own to its database (the app opens its own)."""
    with open_store(db) as s:
        yield s


#: The issuer of the people the AppTest tests sign in (``person``): the one ``dbutil.as_user`` makes them at.
IDP = ISSUER


def person(at: AppTest, name: str, role: str = "reviewer") -> AppTest:
    """``at`` signed in as ``name`` (made a user with ``role`` in the app's database first, as an admin would):
    what ``st.user`` holds after a real sign-in, with the ``is_logged_in`` Streamlit adds."""
    with open_store() as store:
        as_user(store, name, role)
    at.user = {"is_logged_in": True, "iss": IDP, "sub": name, "email": f"{name}@example.com", "email_verified": True,
               "name": name, "provider": "default"}  # fmt: skip
    return at


def name_me(name: str) -> None:
    """One-person mode: the machine's local user has given their name (the sidebar asks once)."""
    with open_store() as store:
        store.users.rename(store.users.local(), name)


def app(**query: str) -> AppTest:
    """A fresh browser session on the app (not run yet), with ``query`` as its URL's query string."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    return at


def run(at: AppTest) -> AppTest:
    """Run the app; a page must never raise (app.py turns what a page raises into "Something went wrong")."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    failed = [e.value for e in at.error if str(e.value).startswith("Something went wrong")]
    assert not failed, failed
    return at


def open_page(at: AppTest, page: str) -> AppTest:
    """Switch to a page (``datasets``, ``sessions``, ``review``) and run it."""
    at.switch_page(PAGES[page])
    run(at)
    # AppTest would ask for this page again on every later run, even after the app went to another
    # (st.switch_page): forget the request, so that later runs stay where the app is, as a browser does.
    at._page_hash = ""
    return at


def texts(at: AppTest, kind: str) -> list[str]:
    """The values of every element of one kind (``error``, ``markdown``, ``caption``...)."""
    return [str(e.value) for e in getattr(at, kind)]


def hostile(tag: str, host: str = "127.0.0.1:9") -> str:
    """A name or text that is Markdown, HTML and image syntax all at once (``tag`` tells the copies apart): shown
    as Markdown it would load two images and a link from ``host``, colour a word and switch on LaTeX; it also
    holds a right-to-left override (which would reverse what follows it) and a zero-width space."""
    return (
        f"{tag} ![x](http://{host}/{tag}.png) <img src=http://{host}/{tag}-html.png> [link](http://{host}/{tag}) "
        f":red[{tag}] $x$ gnp\u202eexe.png\u200b"
    )


#: Element types whose strings are shown as they are (never Markdown).
_PLAIN_PROTOS = {"Text", "Code", "Json"}
#: Fields whose strings Streamlit renders as Markdown: bodies, labels, help tooltips, progress texts, captions,
#: metric values and deltas, button group options (``content``); a radio's options too.
_MARKDOWN_FIELDS = {"body", "label", "help", "text", "delta", "caption", "content"}
#: What ``hostile`` leaves in Markdown when it was not escaped (code spans taken out first: nothing in one is
#: read as Markdown).
_RAW_MARKUP = re.compile(r"(?<!\\)!\[x\]|(?<!\\)<img|(?<!\\)\[link\]|:red\\?\[|(?<!\\)\$x\$")
#: ...and what it leaves anywhere (a code span included) when its invisible characters were not made visible.
_INVISIBLE = re.compile("[\u202e\u200b]")
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)


def markdown_strings(at: AppTest) -> list[tuple[str, str]]:
    """Every string the page renders as Markdown, as ``(ProtoName.field, text)``: what a Markdown image, HTML or
    a link could hide in."""
    found: list[tuple[str, str]] = []
    seen: set[int] = set()
    for node in at._tree:
        proto = getattr(node, "proto", None)
        if proto is not None and id(proto) not in seen:
            seen.add(id(proto))
            _markdown_fields(proto, found)
    return found


def _markdown_fields(message: Any, found: list[tuple[str, str]]) -> None:
    name = message.DESCRIPTOR.name
    if name in _PLAIN_PROTOS:
        return
    for fd, value in message.ListFields():
        values = list(value) if fd.is_repeated else [value]
        if fd.type == fd.TYPE_MESSAGE:
            for child in values:
                _markdown_fields(child, found)
        elif fd.type == fd.TYPE_STRING and (fd.name in _MARKDOWN_FIELDS or (name == "Radio" and fd.name == "options")):
            found.extend((f"{name}.{fd.name}", v) for v in values)


def raw_markup(at: AppTest) -> list[tuple[str, str]]:
    """The Markdown strings of the page in which ``hostile`` text was left unescaped, or its invisible characters
    invisible (there should be none)."""
    return [
        (where, text)
        for where, text in markdown_strings(at)
        if _RAW_MARKUP.search(_CODE_SPAN.sub("", text)) or _INVISIBLE.search(text)
    ]


def plain(markdown: str) -> str:
    """What a reader sees of Markdown made by ``literal_markdown`` / ``literal_message`` / ``literal_name``: the
    escapes undone, the invisible word joiners taken out (to compare a message with the words it should say)."""
    text = markdown.replace("  \n", "\n").replace("&nbsp;", "\u00a0").replace("&#58;", ":")
    return re.sub(r"\\(.)", r"\1", text).replace(WORD_JOINER, "")


def plain_texts(at: AppTest, kind: str) -> list[str]:
    """``texts``, each as a reader sees it (``plain``)."""
    return [plain(t) for t in texts(at, kind)]


def all_text(at: AppTest) -> str:
    """Every element's value and label on the page, one a line (to look for what must never show)."""
    parts = []
    for node in at._tree:
        for name in ("value", "label", "body"):
            try:
                value = getattr(node, name, None)
            except Exception:  # a widget without a value yet
                continue
            if isinstance(value, str):
                parts.append(value)
    return "\n".join(parts)


def by_prefix(widgets: Any, prefix: str) -> Any:
    """The one widget whose key starts with ``prefix`` (keys carry the session's pk)."""
    found = [w for w in widgets if w.key and w.key.startswith(prefix)]
    assert len(found) == 1, [w.key for w in widgets]
    return found[0]
