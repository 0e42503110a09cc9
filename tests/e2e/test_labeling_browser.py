"""A labeling programme in headless Chromium: two signed-in reviewers, each in a browser of their own, work one queue
with overlap 2 through Labeling and Review's queue bar; the questions, the guidelines and the queue are the admin's,
who settles their disagreement into gold. Screenshots: the Labeling page as an admin sees it, Review's Questions tab
in a queue, the adjudicator's answers side by side."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from app_server import settle, shot, streamlit_server
from e2e_ui import Server, alert, ragas_lines, review_path
from idp import Provider, provider, write_secrets
from playwright.sync_api import Page, expect
from test_export_browser import EVALCORE, download
from test_signin_browser import button, sign_in

from evalcore.store import open_store
from evalcore.store.questions import QuestionDef

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with provider(tmp_path_factory.mktemp("idp") / "idp.log") as running:
        for sub, name in (("ada", "Ada"), ("bob", "Bob"), ("cy", "Cy")):
            running.person(sub, email=f"{sub}@corp.com", name=name)
        yield running


@pytest.fixture(scope="module")
def server(idp: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("labeling")
    write_secrets(folder, {"default": idp})
    db = folder / "team.db"
    log = folder / "streamlit.log"
    with streamlit_server(db, log=log, folder=folder) as url:
        running = Server(url.replace("127.0.0.1", "localhost"), db, log, folder)
        running.import_sessions("support", ragas_lines()[:3], "support.jsonl")
        yield running


def _team(server: Server) -> None:
    """Ada (the first to sign in: the owner) lets Bob and Cy in as reviewers."""
    with open_store(server.db) as store:
        owner = store.as_user(store.users.find("ada@corp.com"))
        known = {u.email for u in store.users.all()}
        for email in ("bob@corp.com", "cy@corp.com"):
            if email not in known:
                owner.users.add(email, "reviewer")


def _answer_and_submit(page: Page, item: int, answer: str = "yes") -> None:
    expect(page.get_by_text(f"item {item} of 3")).to_be_visible()
    page.get_by_role("tab", name="Questions").click()
    page.get_by_role("radio", name=answer, exact=True).click()
    expect(page.get_by_text("Resolved? * · draft")).to_be_visible()
    button(page, "Submit & next").click()
    settle(page)


def test_two_reviewers_work_one_queue_with_overlap_two(
    server: Server, idp: Provider, chrome: Any, tmp_path: Path
) -> None:
    ada = sign_in(chrome, server, idp, "ada")  # the first to sign in owns the store
    _team(server)
    with open_store(server.db) as store:
        owner = store.as_user(store.users.find("ada@corp.com"))
        owner.questions.define("support", QuestionDef("Resolved?", "choice", options=("yes", "no"), required=True,
                                                      help="Did the user get what they came for?"))  # fmt: skip
        owner.questions.define("support", QuestionDef("Quality", "rating", labels={"1": "poor", "5": "great"}))
        owner.questions.set_guidelines("support", "**Resolved** means the user's goal was met in this session.")
        queue = owner.queues.create("support", "first pass", min_reviews=2)

    ada.goto(server.url + "/labeling?dataset=support")
    settle(ada)
    expect(ada.get_by_role("heading", name="Labeling")).to_be_visible()
    expect(ada.get_by_test_id("stDataFrame").first).to_be_visible()
    shot(ada, "labeling-admin")

    bob = sign_in(chrome, server, idp, "bob")
    cy = sign_in(chrome, server, idp, "cy")
    for page in (bob, cy):
        page.goto(server.url + "/labeling?dataset=support")
        settle(page)
    button(bob, "Start labeling").click()
    settle(bob)
    expect(bob.get_by_text("item 1 of 3 · you have submitted 0")).to_be_visible()
    button(cy, "Start labeling").click()
    settle(cy)
    expect(cy.get_by_text("item 1 of 3 · you have submitted 0")).to_be_visible()  # overlap 2: both on the first

    bob.get_by_role("tab", name="Questions").click()
    guidelines = bob.get_by_role("tabpanel", name="Questions").get_by_text("Guidelines")
    expect(guidelines).to_be_visible()
    guidelines.click()  # open, for the screenshot
    expect(bob.get_by_text("means the user's goal was met in this session")).to_be_visible()
    bob.get_by_role("radio", name="yes", exact=True).click()
    expect(bob.get_by_text("Resolved? * · draft")).to_be_visible()
    settle(bob)
    shot(bob, "review-questions")
    button(bob, "Submit & next").click()
    settle(bob)
    _answer_and_submit(bob, 2)
    _answer_and_submit(cy, 1)
    _answer_and_submit(cy, 2)
    _answer_and_submit(bob, 3)
    _answer_and_submit(cy, 3, "no")  # Bob said yes: a disagreement
    expect(cy.get_by_text("Nothing is left for you in this queue: thank you.")).to_be_visible()

    with open_store(server.db) as store:
        items = store.queues.items(queue.id)
        assert [sorted(s.author for s in store.answers.submissions(pk)) for pk in items] == [["Bob", "Cy"]] * 3
        assert store.queues.progress(queue.id).complete == 3
        differing, link = items[2], store.sessions.links([items[2]])[items[2]]

    # The adjudicator finds the disagreement on Labeling and settles it into gold on Review, the answers side by side.
    ada.goto(server.url + "/labeling?dataset=support")
    settle(ada)
    ada.get_by_role("tab", name="Agreement").click()
    expect(ada.get_by_text("Disagreements · 1 (open one to settle it into gold on Review)")).to_be_visible()
    ada.goto(server.url + review_path("support", link))  # where the disagreement's link goes
    settle(ada)
    ada.get_by_role("tab", name="Questions").click()
    panel = ada.get_by_role("tabpanel", name="Questions")
    expect(panel.get_by_text("Settle into gold")).to_be_visible()
    expect(panel.get_by_text("Gold: Resolved?")).to_be_visible()
    panel.get_by_role("radio", name="no", exact=True).last.click()  # the gold's choice: below Ada's own answer
    settle(ada)
    shot(ada, "review-settle-gold")
    with open_store(server.db) as store:
        assert [(g.value, g.author) for g in store.answers.gold(differing)] == [("no", "Ada")]

    # The labels downloaded from the Export page are byte for byte what evalcore export-labels writes.
    ada.goto(server.url + "/export?dataset=support")
    settle(ada)
    for kind in ("csv", "jsonl"):
        if kind == "jsonl":  # the labels' own choice of format: the last on the page
            ada.get_by_role("radio", name="JSON Lines", exact=True).last.click()
            settle(ada)
        shown = "CSV" if kind == "csv" else "JSON Lines"  # the file's type first in the label
        name, data = download(ada, f"Download {shown} · support.labels.{kind}", tmp_path)
        out = tmp_path / f"cli.{kind}"
        done = subprocess.run([EVALCORE, "export-labels", "--dataset", "support", "-o", str(out), "--db",
                               str(server.db)], capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert name == f"support.labels.{kind}" and data == out.read_bytes()
        assert len(data.splitlines()) == (8 if kind == "csv" else 7)  # 6 answers and the gold (+ the header)
    assert "Traceback" not in server.log_text()


def test_a_turns_refused_save_is_said_where_it_was_clicked(server: Server, idp: Provider, chrome: Any) -> None:
    """Two people save the third turn's observation on one version: the second is told so in that turn, in view."""
    ada = sign_in(chrome, server, idp, "ada")
    _team(server)
    bob = sign_in(chrome, server, idp, "bob")
    with open_store(server.db) as store:
        ref = store.sessions.get(store.sessions.pks("support")[0]).link
    for page in (ada, bob):
        page.goto(server.url + review_path("support", ref))
        settle(page)
        page.get_by_text("Ground truth for turn 3").click()
    for page, words in ((ada, "Ada saw it"), (bob, "Bob saw it too")):
        turn = page.locator(".st-key-turn-2")
        turn.get_by_role("textbox", name="Observation").fill(words)
        settle(page)  # (a rerun drawn while the click lands could swallow it on a loaded machine)
        turn.get_by_role("button", name="Save turn").click()
        settle(page)
    box = bob.locator(".st-key-conflict_box")
    expect(box).to_be_visible()
    expect(box).to_contain_text("Turn 3 was not saved")
    expect(box).to_be_in_viewport()
    expect(bob.locator(".st-key-turn-2 .st-key-conflict_box")).to_have_count(1)  # in the turn, not above the page
    expect(box).to_contain_text("Ada changed Turn 3 · Observation")  # the page's names, 1-based, no "turns[2]"
    expect(box).not_to_contain_text("reload")
    expect(box.locator('[data-testid="stCode"]')).to_contain_text("Ada saw it")  # their value
    expect(alert(bob, "Turn 3 was not saved: someone else saved this session first")).to_be_visible()  # at the top
    shot(bob, "review-turn-conflict")
