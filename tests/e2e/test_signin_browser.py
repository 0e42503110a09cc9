"""Sign-in in a real browser: the app started with a ``.streamlit/secrets.toml`` naming a mock OpenID provider
(tests/idp.py), people signing in through the provider's own form in headless Chromium — two at once, a viewer, a
stranger, someone disabled or lowered while they work, sign-out — and cookies tampered with, expired or made by
someone without the app's secret."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from app_server import settle, shot, streamlit_server
from dbutil import query
from e2e_ui import Server, alert, ragas_lines, review_path, text_area
from idp import COOKIE, SECRET, Provider, forge_cookie, provider, read_cookie, write_secrets
from playwright.sync_api import Page, expect

from evalcore.errors import PermissionDeniedError
from evalcore.store import open_store

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1400, "height": 1000}


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with provider(tmp_path_factory.mktemp("idp") / "idp.log") as running:
        for sub, name in (("ann", "Ann"), ("bob", "Bob"), ("vi", "Vi"), ("eve", "Eve")):
            running.person(sub, email=f"{sub}@corp.com", name=name)
        yield running


@pytest.fixture(scope="module")
def server(idp: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app with sign-in, on a database holding one small dataset, reached at ``localhost``."""
    folder = tmp_path_factory.mktemp("signin")
    write_secrets(folder, {"default": idp})
    db = folder / "team.db"
    log = folder / "streamlit.log"
    with streamlit_server(db, log=log, folder=folder) as url:
        running = Server(url.replace("127.0.0.1", "localhost"), db, log, folder)
        running.import_sessions("team", ragas_lines()[:2], "team.jsonl")
        yield running


@pytest.fixture(scope="module")
def people(server: Server, idp: Provider, chrome: Any) -> dict[str, Any]:
    """Ann signs in first (and owns the store); she lets Bob in as a reviewer and Vi as a viewer."""
    ann = sign_in(chrome, server, idp, "ann")
    expect(ann.get_by_text("Signed in as Ann, owner")).to_be_visible()
    with open_store(server.db) as store:
        owner = store.as_user(store.users.find("ann@corp.com"))
        owner.users.add("bob@corp.com", "reviewer")
        owner.users.add("vi@corp.com", "viewer")
    return {"ann": ann}


def sign_in(chrome: Any, server: Server, idp: Provider, sub: str, path: str = "/") -> Page:
    """A new browser (its own cookies) signing in as ``sub`` through the provider's form."""
    context = chrome.new_context(viewport=VIEWPORT)
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.goto(server.url + path)
    settle(page)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(re.escape(idp.url)))
    page.locator('input[name="sub"]').fill(sub)
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(re.compile(re.escape(server.url)))
    settle(page)
    return page


def button(page: Page, name: str) -> Any:
    """The button called ``name`` (its keyboard shortcut, if any, is part of what a screen reader hears)."""
    return page.get_by_role("button", name=re.compile(rf"^{re.escape(name)}( Shortcut .*)?$"))


def browser_with_cookie(chrome: Any, server: Server, value: str) -> Page:
    context = chrome.new_context(viewport=VIEWPORT)
    context.add_cookies([{"name": COOKIE, "value": value, "url": server.url}])
    page = context.new_page()
    page.goto(server.url)
    settle(page)
    return page


def expect_signed_out(page: Page) -> None:
    """The sign-in page and nothing of the store: no table, no navigation, no dataset."""
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(page.get_by_test_id("stDataFrame")).to_have_count(0)
    expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
    expect(page.get_by_text("team", exact=True)).to_have_count(0)


def test_two_people_sign_in_at_once_and_each_sees_their_own_name(
    server: Server, idp: Provider, chrome: Any, people: dict[str, Any]
) -> None:
    ann = people["ann"]
    bob = sign_in(chrome, server, idp, "bob")
    expect(bob.get_by_text("Signed in as Bob, reviewer")).to_be_visible()
    ann.reload()
    settle(ann)
    expect(ann.get_by_text("Signed in as Ann, owner")).to_be_visible()
    expect(bob.get_by_role("link", name="Users")).to_have_count(0)  # an admin's page: not in a reviewer's list
    expect(ann.get_by_role("link", name="Users")).to_have_count(1)
    shot(ann, "signin-datasets-owner")

    with open_store(server.db) as store:
        ref = store.sessions.get(store.sessions.pks("team")[0]).ref
    ann.goto(server.url + review_path("team", ref))
    bob.goto(server.url + review_path("team", ref))
    settle(ann)
    settle(bob)
    text_area(ann, "Reference answer").fill("Ann's reference.")
    ann.get_by_role("button", name="Save ground truth").click()
    expect(alert(ann, "Ground truth saved.")).to_be_visible()
    text_area(bob, "Reference answer").fill("Bob's reference.")  # on the version Bob opened
    bob.get_by_role("button", name="Save ground truth").click()
    refused = alert(bob, "Ground truth was not saved:")
    expect(refused).to_contain_text("Ann")
    settle(bob)  # (the draft of Bob's typing may rerun the page as the refusal shows: its buttons drawn again)
    bob.get_by_role("button", name="Re-apply mine on top").click()
    expect(alert(bob, "Ground truth saved.")).to_be_visible()
    rows = query_edits(server, ref)
    assert [(author, author_id is not None) for author, author_id in rows] == [("Ann", True), ("Bob", True)]


def query_edits(server: Server, ref: str) -> list[tuple[str, int | None]]:
    with open_store(server.db) as store:
        pk = store.sessions.find_ref("team", ref)
        return [(a, i) for a, i in query(store, "SELECT author, author_id FROM edits WHERE session_pk = ? ORDER BY id",
                                         [pk])]  # fmt: skip


def test_a_viewer_reads_a_session_and_has_no_way_to_change_it(
    server: Server, idp: Provider, chrome: Any, people: dict[str, Any]
) -> None:
    with open_store(server.db) as store:
        pk = store.sessions.pks("team")[1]
        ref = store.sessions.get(pk).ref
    vi = sign_in(chrome, server, idp, "vi", review_path("team", ref))
    vi.goto(server.url + review_path("team", ref))  # (the deep link, now signed in)
    settle(vi)
    expect(vi.get_by_text("Signed in as Vi, viewer")).to_be_visible()
    expect(alert(vi, "You are a viewer")).to_be_visible()
    expect(vi.get_by_test_id("stChatMessage").first).to_be_visible()  # the transcript is there to read
    for name in ("Approve & next", "Approve", "Reject", "Flag", "To do", "Save ground truth"):
        expect(button(vi, name)).to_be_disabled()
    shot(vi, "signin-review-viewer")
    for path in ("/users", "/export", "/simulate"):  # pages not in a viewer's navigation: their URLs open nothing
        vi.goto(server.url + path)
        settle(vi)
        expect(vi.locator('[data-testid="stMain"] h1').first).to_have_text("Datasets")
    with open_store(server.db) as store:
        viewer = store.as_user(store.users.find("vi@corp.com"))
        with pytest.raises(PermissionDeniedError, match="is a viewer"):  # a forged write, past the page
            viewer.sessions.save(pk, {"reference": "forged"}, base_version=store.sessions.get(pk).version)
        assert store.sessions.history(pk) == []


def test_someone_not_allowed_in_sees_ask_an_admin_and_no_data(
    server: Server, idp: Provider, chrome: Any, people: dict[str, Any]
) -> None:
    eve = sign_in(chrome, server, idp, "eve")
    expect(alert(eve, "may not come in: ask an admin")).to_be_visible()
    expect(eve.get_by_test_id("stDataFrame")).to_have_count(0)
    expect(eve.get_by_test_id("stSidebarNav")).to_have_count(0)
    expect(eve.get_by_test_id("stCode")).to_have_text("evalcore users add eve@corp.com --role reviewer")
    shot(eve, "signin-refused")
    eve.get_by_role("button", name="Sign out").click()
    eve.wait_for_url(re.compile(re.escape(idp.url)))
    eve.goto(server.url)
    settle(eve)
    expect_signed_out(eve)


def test_a_disabled_user_is_out_on_their_next_click_and_a_lowered_role_applies_at_once(
    server: Server, idp: Provider, chrome: Any, people: dict[str, Any]
) -> None:
    with open_store(server.db) as store:
        pk = store.sessions.pks("team")[1]
        ref = store.sessions.get(pk).ref
    bob = sign_in(chrome, server, idp, "bob")
    bob.goto(server.url + review_path("team", ref))
    settle(bob)
    with open_store(server.db) as store:
        owner = store.as_user(store.users.find("ann@corp.com"))
        owner.users.set_role("bob@corp.com", "viewer")
    button(bob, "Flag").click()
    settle(bob)
    expect(alert(bob, "You are a viewer")).to_be_visible()
    expect(button(bob, "Flag")).to_be_disabled()
    with open_store(server.db) as store:
        assert store.sessions.get(pk).session.status == "todo"
        owner = store.as_user(store.users.find("ann@corp.com"))
        owner.users.set_role("bob@corp.com", "reviewer")
        owner.users.disable("bob@corp.com")
    bob.get_by_role("link", name="Sessions").click()
    settle(bob)
    expect(alert(bob, "is disabled: ask an admin to enable you")).to_be_visible()
    expect(bob.get_by_test_id("stDataFrame")).to_have_count(0)
    with open_store(server.db) as store:
        store.as_user(store.users.find("ann@corp.com")).users.enable("bob@corp.com")


def test_sign_out(server: Server, idp: Provider, chrome: Any, people: dict[str, Any]) -> None:
    bob = sign_in(chrome, server, idp, "bob")
    expect(bob.get_by_text("Signed in as Bob")).to_be_visible()
    bob.get_by_role("button", name="Sign out").click()
    bob.wait_for_url(re.compile(re.escape(idp.url)))  # the provider's end of session (RP-initiated logout)
    bob.goto(server.url)
    settle(bob)
    expect_signed_out(bob)
    assert not [c for c in bob.context.cookies() if c["name"] == COOKIE]


def test_tampered_expired_and_unsigned_cookies_sign_no_one_in(
    server: Server, idp: Provider, chrome: Any, people: dict[str, Any]
) -> None:
    valid = next(c["value"] for c in people["ann"].context.cookies() if c["name"] == COOKIE)
    claims = read_cookie(valid)
    assert (claims["iss"], claims["sub"]) == (idp.url, "ann")

    control = browser_with_cookie(chrome, server, forge_cookie(claims))  # signed with the app's secret: accepted
    expect(control.get_by_text("Signed in as Ann, owner")).to_be_visible()

    body, _, signature = valid.rpartition(".")
    tampered = body.replace(body[2], "A" if body[2] != "A" else "B", 1) + "." + signature
    elevated = forge_cookie({**claims, "sub": "someone-else"}, secret="not-the-app-secret-0123456789abcdef")
    second_issuer = forge_cookie({**claims, "iss": "http://localhost:1/other"}, secret="guessed-" + SECRET)
    expired = forge_cookie(claims, age_days=40)  # the app's secret, but older than Streamlit's 30 days
    for value in (tampered, elevated, second_issuer, expired):
        page = browser_with_cookie(chrome, server, value)
        expect_signed_out(page)
        page.context.close()


def test_an_email_changed_at_the_provider_keeps_the_person(
    server: Server, idp: Provider, chrome: Any, people: dict[str, Any]
) -> None:
    idp.person("ann", email="ann.lee@corp.com", name="Ann")
    again = sign_in(chrome, server, idp, "ann")
    expect(again.get_by_text("Signed in as Ann, owner")).to_be_visible()
    with open_store(server.db) as store:
        [ann] = [u for u in store.users.all() if u.sub == "ann"]
        assert (ann.email, ann.role) == ("ann.lee@corp.com", "owner")
    again.get_by_role("link", name="Users").click()
    settle(again)
    shot(again, "signin-users")
