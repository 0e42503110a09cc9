"""Sign-in and roles in the app, run for real with AppTest (``at.user`` holds what Streamlit's sign-in gives): the
sign-in page, strangers and disabled users kept out, the pages and controls of each role, a role changed while
someone works, sign-out, the first owner, and the Users page."""

from __future__ import annotations

from pathlib import Path

from apptest_util import (  # noqa: F401 (fixtures)
    IDP,
    app,
    db_fixture,
    fresh_db_fixture,
    open_page,
    person,
    plain_texts,
    run,
    store_fixture,
    template_db_fixture,
    texts,
)
from streamlit.testing.v1 import AppTest

from evalcore.store import Store

AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "s" * 40,
    "google": {"client_id": "g", "client_secret": "x", "server_metadata_url": "https://accounts.google.com/x"},
    "keycloak": {"client_id": "k", "client_secret": "x", "server_metadata_url": "https://kc.example.com/x"},
}


def _titles(at: AppTest) -> list[str]:
    return [str(t.value) for t in at.title]


def _signed_out() -> AppTest:
    at = app(dataset="review", session="r-tools")
    at.user = {"is_logged_in": False}
    at.secrets["auth"] = AUTH
    return at


def _no_data(at: AppTest) -> None:
    """Nothing of the store on the page: no table, no dataset picker, no session."""
    assert not at.dataframe and not any(w.key == "dataset" for w in at.selectbox)
    assert "r-tools" not in str([m.value for m in at.markdown])


def test_someone_not_signed_in_sees_only_the_sign_in_buttons(db: Path) -> None:
    at = run(_signed_out())
    assert [b.label for b in at.button] == ["Sign in with Google", "Sign in with Keycloak"]
    _no_data(at)
    at.switch_page("app_pages/review.py")  # a deep link to a page: the same
    run(at)
    assert [b.label for b in at.button] == ["Sign in with Google", "Sign in with Keycloak"]
    _no_data(at)


def test_a_stranger_is_told_to_ask_an_admin_and_sees_no_data(db: Path, store: Store) -> None:
    store.users.ensure(iss=IDP, sub="ann", name="Ann", role="owner")  # (else the first to come in owns the store)
    at = app(dataset="review")
    at.user = {"is_logged_in": True, "iss": IDP, "sub": "eve", "email": "eve@evil.io", "email_verified": True}
    run(at)
    assert any("eve@evil.io may not come in: ask an admin" in e for e in plain_texts(at, "error"))
    assert [b.label for b in at.button] == ["Sign out"]
    _no_data(at)
    assert [u.sub for u in store.users.all() if u.iss == IDP] == ["ann"]  # nothing kept of them


def test_the_first_person_to_sign_in_to_a_new_store_is_its_owner(fresh_db: Path) -> None:
    at = app()
    at.user = {"is_logged_in": True, "iss": IDP, "sub": "ann", "email": "ann@corp.com", "email_verified": True,
               "name": "Ann Lee"}  # fmt: skip
    run(at)
    assert any("Signed in as **Ann Lee**, owner" in m for m in texts(at, "markdown"))
    open_page(at, "users")
    assert _titles(at) == ["Users"]


def _pages(at: AppTest) -> set[str]:
    """The pages in the navigation: the only ones a link or a URL can open."""
    return {Path(str(info["script_path"])).stem for info in at._registered_pages.values()}


def test_each_role_has_its_pages_and_no_other(db: Path) -> None:
    everyone = {"datasets", "sessions", "review", "labeling", "metrics", "dashboard", "compare"}
    for role, pages in (
        ("viewer", everyone),
        ("reviewer", everyone),
        ("admin", everyone | {"export", "simulate", "users"}),
        ("owner", everyone | {"export", "simulate", "users"}),
    ):
        at = run(person(app(dataset="review"), f"{role}-1", role))
        assert _pages(at) == pages, role
    one_person = run(app())
    assert _pages(one_person) == everyone | {"export", "simulate", "users"}  # the local user owns the store


def test_a_viewer_reads_a_session_and_has_no_way_to_change_it(db: Path, store: Store) -> None:
    at = open_page(run(person(app(dataset="review", session="r-tools"), "vi", "viewer")), "review")
    assert "### r\\-tools" in texts(at, "markdown")
    assert any("You are a viewer: you read everything and change nothing" in t for t in texts(at, "info"))
    assert all(at.button(key=k).disabled for k in ("approve_next", "approve", "reject", "flag", "todo"))
    assert all(b.disabled for b in at.button if b.key and b.key.startswith("FormSubmitter:"))
    open_page(at, "sessions")
    assert any("You are a viewer" in t for t in texts(at, "info"))
    open_page(at, "datasets")
    assert at.button(key="import").disabled and at.button(key="load_samples").disabled
    assert not any(w.key == "rename_to" for w in at.text_input)  # no rename, no delete
    open_page(at, "metrics")
    assert at.button(key="run").disabled and any("Scoring is an admin's" in c for c in texts(at, "caption"))
    pk = store.sessions.find("review", "r-tools")
    assert (store.sessions.get(pk).version, store.sessions.history(pk)) == (1, [])


def test_a_role_lowered_while_someone_works_applies_at_their_next_click(db: Path, store: Store) -> None:
    at = open_page(run(person(app(dataset="review", session="r-tools"), "re", "reviewer")), "review")
    assert not at.button(key="approve").disabled
    store.users.set_role("re@example.com", "viewer")
    at.button(key="approve").click()  # the click that follows: refused, and the page shows why
    run(at)
    pk = store.sessions.find("review", "r-tools")
    assert store.sessions.get(pk).session.status == "todo"
    assert at.button(key="approve").disabled and any("You are a viewer" in t for t in texts(at, "info"))


def test_a_disabled_user_is_out_at_their_next_click(db: Path, store: Store) -> None:
    at = open_page(run(person(app(dataset="review", session="r-tools"), "re", "reviewer")), "review")
    store.users.disable("re@example.com")
    at.button(key="approve").click()
    run(at)
    assert any("is disabled: ask an admin to enable you" in e for e in plain_texts(at, "error"))
    _no_data(at)
    assert store.sessions.get(store.sessions.find("review", "r-tools")).session.status == "todo"


def test_sign_out(db: Path) -> None:
    at = run(person(app(dataset="review"), "ann", "reviewer"))
    at.secrets["auth"] = AUTH
    at.button(key="logout").click()
    run(at)
    assert [b.label for b in at.button] == ["Sign in with Google", "Sign in with Keycloak"]
    _no_data(at)


def test_the_users_page_adds_people_changes_roles_and_allows_domains(db: Path, store: Store) -> None:
    at = open_page(run(person(app(), "ad", "admin")), "users")
    assert "ad" in list(at.dataframe[0].value["name"])
    at.text_input(key="add_email").input("bob@corp.com")
    at.selectbox(key="add_role").select("viewer")
    next(b for b in at.button if b.label == "Add").click()
    run(at)
    bob = store.users.find("bob@corp.com")
    assert (bob.role, bob.signed_in_yet) == ("viewer", False)
    assert any("bob@corp.com may sign in as viewer" in s for s in plain_texts(at, "success"))
    at.selectbox(key="user_pick").select(bob.id)
    run(at)
    at.selectbox(key=f"role_of_{bob.id}").select("owner")  # an admin cannot make an owner: refused, and why
    run(at)
    at.button(key="set_role").click()
    run(at)
    assert any("needs the role owner" in e for e in plain_texts(at, "error"))
    at.selectbox(key=f"role_of_{bob.id}").select("reviewer")
    run(at)
    at.button(key="set_role").click()
    run(at)
    assert store.users.find("bob@corp.com").role == "reviewer"
    at.button(key="able").click()
    run(at)
    assert store.users.find("bob@corp.com").disabled
    at.text_input(key="domain").input("corp.com")
    next(b for b in at.button if b.label == "Set").click()
    run(at)
    assert store.users.allowed_domains() == {"corp.com": "reviewer"}
