"""Conversation text is data: a session full of HTML, scripts, remote images and ``javascript:`` links
is shown as text in the browser. Nothing runs, and nothing is fetched (a loopback listener counts
every request an image would make).

So is every name, id and link parameter the pages show (issue 23, items 2, 10 and 11): a dataset, an uploaded
file, session ids (one with a right-to-left override, one of zero-width spaces), an assistant, a tag, tools and
call ids, a rubric, a chunk's URI, reviewers, a reason, a comment, a run's metric, a solver run and its error, a
task file, the ``session`` and ``turn`` of a link — on every page and Review tab, in a save conflict too. The
listener counts 0 requests, and no page asks any host but 127.0.0.1 for anything (the conftest fails any browser
test that does: the page icon used to come from fonts.gstatic.com).
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest
from app_server import settle, shot
from dbutil import as_user
from e2e_ui import (
    Server,
    alert,
    cell,
    cell_point,
    expander,
    grid_with,
    heading,
    on_loopback,
    open_expander,
    review_path,
    set_reviewer,
    text_area,
)
from playwright.sync_api import expect

from evalcore.store import open_store

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]


class Listener:
    """An HTTP server on a free loopback port that counts the requests it gets."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def listener() -> Iterator[Listener]:
    counting = Listener()
    try:
        yield counting
    finally:
        counting.close()


def hostile_session(port: int) -> dict[str, Any]:
    pixel = f"![p](http://127.0.0.1:{port}/pixel.png)"
    html = (
        f'<script>window.__xss=1</script> <img src=x onerror="window.__xss=2"> {pixel} '
        f'[click](javascript:window.__xss=3) <img src="http://127.0.0.1:{port}/html.png">'
    )
    call_id = f"`call-1` {pixel}"
    return {
        "schema_version": 1,
        "session_id": "hostile-1",
        "assistant_id": f"agent {pixel}",
        "context": f"System prompt {html}",
        "messages": [
            {"role": "system", "content": f"System prompt {html}"},
            {"role": "user", "content": f"Question {html}"},
            {
                "role": "assistant",
                "content": f"Let me look. {html}",
                "reasoning": f"Thinking {html}",
                "tool_calls": [{"id": call_id, "name": f"`{pixel}`", "args": {"q": html}}],
            },
            {"role": "tool", "tool_call_id": call_id, "name": f"`{pixel}`", "content": f"Result {html}"},
            {"role": "tool", "tool_call_id": "nobody", "name": f"`orphan` {pixel}", "content": f"Orphan {html}"},
            {  # the safe Markdown the transcript applies (bold, italic, lists, headings, code) around all of it
                "role": "assistant",
                "content": f"Final answer **{html}** done.\n- *{pixel}*\n1. {html}\n# {html}\n`{pixel}`",
            },
        ],
        "reference": f"Reference answer {html} done.",
        "reference_tool_calls": [{"name": f"`{pixel}`", "args": {"q": html}}],
        "rubrics": {f"tone {pixel}": f"Polite {html}"},
        "retrieved_context": [{"doc_uri": f"`doc` {pixel}", "content": f"Chunk {html}"}],
        "tags": ["hostile"],
        "turns": [{"ground_truth": f"Turn answer {html}", "observation": html}],
    }


def test_hostile_content_is_shown_as_text_and_loads_nothing(
    server: Server, new_page: NewPage, listener: Listener
) -> None:

    [ref] = server.import_sessions("hostile", [hostile_session(listener.port)], "hostile.jsonl")
    with open_store(server.db) as store:
        pk = store.sessions.find_ref("hostile", ref)
        extra = html_of(listener)
        as_user(store, f"<b>mallory</b> {extra}").labels.add_comment(
            pk, f"A comment <script>window.__xss=5</script> {extra}"
        )

    page = new_page(review_path("hostile", ref))
    expect(page.locator('[data-testid="stMain"] h3').first).to_have_text(ref)
    set_reviewer(page, "Alice")
    for label in ("Reasoning", "System prompt", "Retrieved context"):
        open_expander(page, label)
    expect(expander(page, "Reasoning")).to_contain_text("Thinking <script>window.__xss=1</script>")
    shot(page, "review-hostile")
    expander(page, "Reasoning").locator("summary").click()  # opened, then collapsed again
    settle(page)
    for tab in ("Truth", "Calls & rubrics", "Weights", "Verdict", "Scores", "Diff", "History", "Comments"):
        page.get_by_role("tab", name=tab).click()
        settle(page)
        if tab == "Verdict":  # a rubric's description is shown as its help: hover the help icons
            tips = []
            expect(page.locator('[data-testid="stTabs"]').get_by_role("radiogroup")).to_have_count(2)  # pass, tone
            for icon in page.locator('[data-testid="stTabs"] [data-testid="stTooltipHoverTarget"]').all():
                if icon.is_visible():
                    icon.hover()
                    tip = page.locator('[data-testid="stTooltipContent"]')
                    expect(tip).to_be_visible()
                    page.wait_for_timeout(200)  # time for an image in it to load
                    tips.append(tip.inner_text())
            assert any("Polite <script>window.__xss=1</script>" in t for t in tips), tips
        if tab == "Diff":
            shot(page, "review-hostile-diff")
    page.wait_for_timeout(500)  # time for any image or script that would load

    assert listener.requests == [], f"the page fetched {listener.requests}"
    assert page.evaluate("typeof window.__xss") == "undefined"
    expect(page.get_by_text("Question <script>window.__xss=1</script>", exact=False)).to_be_visible()
    assert page.locator('[data-testid="stMain"] a[href^="javascript"]').count() == 0
    assert page.locator(f'img[src*="127.0.0.1:{listener.port}"]').count() == 0
    final = page.locator('[data-testid="stChatMessage"]').filter(has_text="Final answer").first
    expect(final.locator("strong").first).to_contain_text("<script>window.__xss=1</script>")  # bold, and text
    italic = final.locator("li em").inner_text().replace("\u2060", "")  # (the joiner that stops the autolink)
    assert italic == f"![p](http://127.0.0.1:{listener.port}/pixel.png)"
    assert final.locator("a, img, h1, h2, h3, h4, h5, h6").count() == 0
    tool = page.locator('[data-testid="stChatMessage"]').filter(has_text="call-1").first
    expect(tool).to_contain_text(f"127.0.0.1:{listener.port}/pixel.png")  # the name and id, as text


def html_of(listener: Listener) -> str:
    return f'<img src="http://127.0.0.1:{listener.port}/comment.png"> ![c](http://127.0.0.1:{listener.port}/c.png)'


def test_a_hostile_dataset_name_is_shown_as_text(server: Server, new_page: NewPage, listener: Listener) -> None:
    name = f"evil <script>window.__xss=6</script> ![x](http://127.0.0.1:{listener.port}/dataset.png)"
    server.import_sessions(name, [hostile_session(listener.port)], "evil.jsonl")
    page = new_page(f"/?dataset={quote(name, safe='')}")
    expect(page.get_by_role("heading", name=re.compile(r"^Manage evil <script>"))).to_be_visible()
    page.get_by_role("button", name="Delete…").click()  # the confirmation names the dataset too
    expect(page.get_by_text("This deletes")).to_be_visible()
    settle(page)
    page.wait_for_timeout(500)  # time for any image or script that would load
    assert listener.requests == [], f"the page fetched {listener.requests}"
    assert page.evaluate("typeof window.__xss") == "undefined"


# -- every name, id and link parameter the pages show (issue 23, items 2, 10 and 11) ---------------------------


def markup(port: int, tag: str) -> str:
    """A name that is Markdown, HTML and image syntax at once: as Markdown it would fetch two images from the
    listener, make a link to it, colour a word and switch on LaTeX."""
    where = f"http://127.0.0.1:{port}"
    return f"{tag} ![x]({where}/{tag}.png) <img src={where}/{tag}-html.png> [link]({where}/{tag}-link) :red[{tag}] $x$"


def file_markup(port: int, tag: str) -> str:
    """The same for a file's name, which has no slash: ``http:\\\\host\\x`` is what a browser reads as http://host/x."""
    where = f"127.0.0.1:{port}"
    return f"{tag} ![x](http:\\\\{where}\\{tag}.png) <img src=http:{where}\\{tag}-html.png> :red[{tag}] $x$"


def shown(text: str, *, before: str = "", after: str = "") -> re.Pattern[str]:
    """What a page shows of ``text`` put in as text: itself, with the invisible WORD JOINER the app puts after
    ``http`` (so that GFM makes no link of it; ``evalcore.views.text``)."""
    pattern = re.escape(before) + re.escape(text).replace("http", "http\u2060?") + re.escape(after)
    return re.compile(pattern.replace("/", "\\/"))  # (Playwright's selectors end a pattern at a bare slash)


RLO_ID = "gnp\u202eexe.png"  # shown as "gnpgnp.exe" when the override acts
ZW_ID = "\u200b\u200b"  # shown as nothing


def hostile_names(port: int) -> dict[str, str]:
    return {
        tag: markup(port, tag)
        for tag in ("dataset", "session", "assistant", "tag", "tool", "call", "orphan", "rubric", "doc", "reviewer",
                    "other", "reason", "comment", "metric", "job", "error", "missing", "turn", "nodataset")
    }  # fmt: skip


def hostile_store(server: Server, n: dict[str, str]) -> tuple[str, int]:
    """The dataset where every name and id is hostile: reviewed, commented, given verdicts, scored, with a failed
    solver run; the session's pk. Its sessions: the hostile one (parallel calls sharing an id, a result of an
    unknown call), one whose id holds a right-to-left override, one whose id is zero-width spaces."""
    from evalcore.metrics.base import MetricResult
    from evalcore.scoring import save_results
    from evalcore.store.labels import LABEL, rubric_verdict

    calls = [{"id": n["call"], "name": n["tool"], "args": {"city": c}} for c in ("Paris", "Rome")]
    session = {
        "schema_version": 1,
        "session_id": n["session"],
        "assistant_id": n["assistant"],
        "tags": [n["tag"]],
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "tool_calls": calls},
            {"role": "tool", "tool_call_id": n["call"], "name": n["tool"], "content": "Paris: 18 C"},
            {"role": "tool", "tool_call_id": n["call"], "name": n["tool"], "content": "Rome: 24 C"},
            {"role": "tool", "tool_call_id": n["orphan"], "content": "a stray result"},
            {"role": "assistant", "content": "Paris 18 C, Rome 24 C."},
        ],
        "reference": "Paris 18, Rome 24.",
        "rubrics": {n["rubric"]: "Polite."},
        "retrieved_context": [{"doc_uri": n["doc"], "content": "A chunk."}],
    }
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    lines: list[Any] = [
        session,
        {"schema_version": 1, "session_id": RLO_ID, "messages": plain},
        {"schema_version": 1, "session_id": ZW_ID, "messages": plain},
    ]
    server.import_sessions(n["dataset"], lines, "hostile-names.jsonl")
    metric = f"aspect_critique:aspect={n['metric']}"
    with open_store(server.db) as store:
        pk = store.sessions.find(n["dataset"], n["session"])
        stored = store.sessions.get(pk)
        reviewer = as_user(store, n["reviewer"])
        reviewer.sessions.save(pk, {"goal": "Both cities"}, base_version=stored.version, reason=n["reason"])
        reviewer.sessions.set_status_many([pk], "flagged")
        reviewer.labels.add_comment(pk, f"See {n['comment']}")
        reviewer.labels.set_verdict(pk, LABEL, 0.0)
        reviewer.labels.set_verdict(pk, rubric_verdict(n["rubric"]), 4.0)
        run = store.runs.create(n["dataset"], [metric], {metric: {"name": "aspect_critique"}})
        save_results(store, run.id, [(pk, metric, MetricResult(metric, None, 1.0, n["reason"]))])
        store.runs.recount(run.id, status="done")
        job = reviewer.jobs.create("solve", n["dataset"], n["job"], unit="samples")
        store.jobs.fail(job, n["error"])
    return n["dataset"], pk


def test_every_name_id_and_link_parameter_is_shown_as_text_on_every_page(
    server: Server, new_page: NewPage, listener: Listener
) -> None:
    n = hostile_names(listener.port)
    dataset, _pk = hostile_store(server, n)
    q = quote(dataset, safe="")

    # Datasets: an upload whose file name is hostile, into the hostile dataset (its job's label names the file).
    page = new_page(f"/?dataset={q}")
    set_reviewer(page, n["other"])  # (the machine's own user: the hostile reviewer is another, in the store)
    upload = {"name": file_markup(listener.port, "upload") + ".jsonl", "mimeType": "application/json",
              "buffer": (json.dumps({"messages": [{"role": "user", "content": "up"}]}) + "\n").encode()}  # fmt: skip
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(upload)
    expect(page.get_by_role("button", name=re.compile(r"^Remove upload"))).to_be_visible()
    settle(page)
    page.get_by_role("combobox", name="Into dataset", exact=True).click()  # (a new dataset unless one is chosen)
    page.get_by_role("option", name=shown(dataset)).click()
    settle(page)
    page.get_by_role("button", name="Import", exact=True).click()
    expect(alert(page, "1 session stored")).to_be_visible()
    [(label,)] = server.rows("SELECT label FROM jobs WHERE kind = 'import'")  # (the name as the browser sent it)
    assert label.startswith("import upload ![x](http:\\") and "<img src=http:127.0.0.1:" in label, label
    expect(alert(page, shown(label))).to_be_visible()  # as text
    expect(page.get_by_role("heading", name=shown(dataset, before="Manage "))).to_be_visible()
    shot(page, "hostile-datasets")

    # A link naming no dataset: the app opens the first, says nothing of it.
    page.goto(f"{server.url}/?dataset={quote(n['nodataset'], safe='')}")
    settle(page)

    # Sessions: ids shown with their invisible characters as escapes; the button that opens a ticked row.
    page.goto(f"{server.url}/sessions?dataset={q}")
    settle(page)
    table = grid_with(page, "first question")
    expect(cell(table, 2, 0)).to_have_text(n["session"])  # (a table's cell is plain text: no joiner)
    expect(cell(table, 2, 1)).to_have_text("gnp\\u202eexe.png")  # never "gnpgnp.exe"
    expect(cell(table, 2, 2)).to_have_text("\\u200b\\u200b")  # never blank
    table.click(position=cell_point(1, 15))
    expect(page.get_by_role("button", name="Open gnp\\u202eexe.png in Review")).to_be_visible()
    table.click(position=cell_point(1, 15))
    table.click(position=cell_point(0, 15))
    expect(page.get_by_role("button", name=shown(n["session"], before="Open ", after=" in Review"))).to_be_visible()
    shot(page, "hostile-sessions")

    # Review: a link to no session (the example), then the session, with a hostile turn parameter.
    for missing in (n["missing"], f"![x](http://127.0.0.1:{listener.port}/pixel.png)"):
        page.goto(f"{server.url}{review_path(dataset, missing)}")
        settle(page)
        expect(alert(page, shown(missing, before="no session '", after="'"))).to_be_visible()
    shot(page, "hostile-review-no-session")
    page.goto(f"{server.url}{review_path(dataset, n['session'])}&turn={quote(n['turn'], safe='')}")
    settle(page)
    set_reviewer(page, n["other"])  # (kept in the store: the same name, asked no more)
    expect(heading(page)).to_have_text(shown(n["session"]))
    expect(page.get_by_text(shown(n["reviewer"], before="by ")).first).to_be_visible()
    expect(page.get_by_text("ambiguous: 2 parallel calls have the id", exact=False).first).to_be_visible()
    tools = page.locator('[data-testid="stChatMessage"]').filter(has_text=shown(n["tool"]))
    expect(tools.nth(0)).to_contain_text("Paris: 18 C")  # each call with its own result, never swapped
    expect(tools.nth(1)).to_contain_text("Rome: 24 C")
    expect(page.get_by_text(f"result of an unknown call {n['orphan']}")).to_be_visible()  # (a code span: as typed)
    open_expander(page, "Retrieved context")
    shot(page, "hostile-review")
    for tab in ("Truth", "Calls & rubrics", "Weights", "Verdict", "Scores", "Diff", "History", "Comments"):
        page.get_by_role("tab", name=tab).click()
        settle(page)
        if tab == "Verdict":
            expect(page.get_by_text(shown(n["rubric"], after=" (1–5)"))).to_be_visible()
        if tab == "Comments":
            expect(page.get_by_text(shown(n["comment"], before="See "))).to_be_visible()
        shot(page, f"hostile-review-{tab.split()[0].lower()}")

    # A save conflict names the other reviewer and the session: as text.
    page.get_by_role("tab", name="Truth").click()
    settle(page)
    other = new_page(review_path(dataset, n["session"]))  # another tab (two people: test_signin_browser.py)
    text_area(other, "Reference answer").fill("Their reference")
    other.get_by_role("button", name="Save ground truth").click()
    expect(alert(other, "Ground truth saved.")).to_be_visible()
    text_area(page, "Goal").fill("Mine")
    page.get_by_role("button", name="Save ground truth").click()
    conflict = alert(page, "was not saved")
    expect(conflict).to_contain_text("you (in another tab) changed Reference answer")  # (one person, two tabs)
    expect(conflict).to_contain_text(shown(n["session"], before="in "))
    expect(conflict).not_to_contain_text("reload")
    expect(page.locator(".st-key-conflict_box [data-testid='stCode']")).to_contain_text("Their reference")
    expect(expander(page, "Your unsaved text from version")).to_have_count(0)  # their saved text is not "yours"
    shot(page, "hostile-review-conflict")

    # The RLO session's heading.
    page.goto(f"{server.url}{review_path(dataset, RLO_ID)}")
    settle(page)
    expect(heading(page)).to_have_text("gnp\\u202eexe.png")

    for path in ("metrics", "dashboard", "export", "simulate"):
        page.goto(f"{server.url}/{path}?dataset={q}")
        settle(page)
        shot(page, f"hostile-{path}")
    expect(page.get_by_text(shown(f"Last solver run: {n['job']} into {dataset}"))).to_be_visible()
    # An uploaded task file whose name, and a value the problem quotes, are hostile.
    task = {"name": file_markup(listener.port, "task") + ".yaml", "mimeType": "application/x-yaml",
            "buffer": ("definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n"
                       f"      - type: '{n['error']}'\n").encode()}  # fmt: skip
    page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(task)
    settle(page)
    problem = alert(page, "cannot run")
    expect(problem).to_contain_text(shown(n["error"], before="unknown builder type '"))
    shot(page, "hostile-simulate-task")

    # The page icon travels with the app, inline: a ``:material/...:`` icon was fetched from fonts.gstatic.com.
    icon = page.locator("link[rel='shortcut icon']").get_attribute("href") or ""
    assert icon.startswith("data:image/svg+xml"), icon[:80]

    page.wait_for_timeout(500)  # time for any image that would load
    other.wait_for_timeout(100)
    assert listener.requests == [], f"the pages fetched {listener.requests}"
    assert page.locator(f'img[src*="127.0.0.1:{listener.port}"]').count() == 0
    asked = new_page.requests  # type: ignore[attr-defined]
    assert asked and all(on_loopback(url) for url in asked), sorted({u for u in asked if not on_loopback(u)})
