"""Users, roles and who may come in (``evalcore.store.users``, ``evalcore.store.access``), on both engines: every
write refused by the library when the acting user's role does not allow it, whatever a page shows."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from dbutil import query

from evalcore.cli import main
from evalcore.errors import PermissionDeniedError, UsageError
from evalcore.exporting import export_dataset
from evalcore.importing import import_stream
from evalcore.signin import admit, auth_configured, identity_of, is_loopback, providers, sign_in_mode, user_lines
from evalcore.store import Store, open_store
from evalcore.store.access import ROLES, User, allows
from evalcore.views.users import user_rows

IDP = "https://idp.example.com"
OTHER_IDP = "https://other-idp.example.com"


def _chat(n: int) -> bytes:
    rows = [
        {"messages": [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]}
        for i in range(n)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _sign_in(store: Store, sub: str, email: str | None, *, verified: bool = True, iss: str = IDP) -> User:
    return store.users.sign_in(
        iss=iss, sub=sub, email=email, email_verified=verified, name=sub.title(), provider="default"
    )


@pytest.fixture
def store(store_url: str) -> Store:
    with open_store(store_url) as opened:
        import_stream(opened, io.BytesIO(_chat(3)), "chat.jsonl", "ds")
        yield opened


def test_the_first_person_to_sign_in_owns_the_store_and_strangers_are_told_to_ask_an_admin(store: Store) -> None:
    assert store.users.all() != []  # the import made the machine's local user (the command line's)
    owner = _sign_in(store, "ann", "ann@corp.com")
    assert (owner.role, owner.iss, owner.sub, owner.name) == ("owner", IDP, "ann", "Ann")
    with pytest.raises(PermissionDeniedError, match=r"bob@corp.com may not come in: ask an admin"):
        _sign_in(store, "bob", "bob@corp.com")
    assert [u.sub for u in store.users.all() if u.iss == IDP] == ["ann"]  # nothing written for a refusal
    again = _sign_in(store, "ann", "ann@corp.com")
    assert (again.id, again.role) == (owner.id, "owner") and again.last_seen_at


def test_a_person_added_by_email_is_bound_by_their_first_verified_sign_in(store: Store) -> None:
    owner = store.as_user(_sign_in(store, "ann", "ann@corp.com"))
    added = owner.users.add("Bob@Corp.com", "reviewer", name="Bob B")
    assert (added.role, added.iss, added.signed_in_yet) == ("reviewer", None, False)
    with pytest.raises(PermissionDeniedError, match="may not come in"):
        _sign_in(store, "bob", "bob@corp.com", verified=False)  # an unverified e-mail binds nothing
    bob = _sign_in(store, "bob-sub", "bob@corp.com")
    assert (bob.id, bob.role, bob.name, bob.iss, bob.sub) == (added.id, "reviewer", "Bob B", IDP, "bob-sub")
    # The same e-mail at a second issuer is another person: the row is bound already, so they are refused.
    with pytest.raises(PermissionDeniedError, match="may not come in"):
        _sign_in(store, "bob-sub", "bob@corp.com", iss=OTHER_IDP)
    # An admin who names the provider trusts its e-mail (Entra sends no email_verified).
    owner.users.add("cy@corp.com", "viewer", provider="entra")
    with pytest.raises(PermissionDeniedError):
        store.users.sign_in(iss=OTHER_IDP, sub="cy", email="cy@corp.com", email_verified=False, name=None,
                            provider="default")  # fmt: skip
    cy = store.users.sign_in(
        iss=OTHER_IDP, sub="cy", email="cy@corp.com", email_verified=False, name=None, provider="entra"
    )
    assert (cy.role, cy.provider) == ("viewer", "entra")


def test_allowed_domains_let_verified_people_in_as_viewer_or_reviewer(store: Store) -> None:
    owner = store.as_user(_sign_in(store, "ann", "ann@corp.com"))
    assert owner.users.allow_domain("@Corp.com", "reviewer") == {"corp.com": "reviewer"}
    with pytest.raises(UsageError, match="viewer or reviewer"):
        owner.users.allow_domain("corp.com", "admin")
    assert _sign_in(store, "dan", "dan@corp.com").role == "reviewer"
    for email, verified in (("eve@corp.com", False), ("eve@corp.com.evil.io", True), ("eve@evil.io", True)):
        with pytest.raises(PermissionDeniedError):
            _sign_in(store, "eve", email, verified=verified)
    owner.users.allow_domain("corp.com", None)
    with pytest.raises(PermissionDeniedError):
        _sign_in(store, "fay", "fay@corp.com")
    viewer = store.as_user(_sign_in(store, "dan", "dan@corp.com"))
    with pytest.raises(PermissionDeniedError, match="needs the role admin"):
        viewer.users.allow_domain("evil.io", "reviewer")
    with pytest.raises(PermissionDeniedError, match="sign-in's"):
        viewer.meta.set("signin:domains", json.dumps({"evil.io": "reviewer"}))  # not around the check either
    assert store.users.allowed_domains() == {}


def test_each_role_may_do_what_the_table_says_and_the_library_refuses_the_rest(store: Store, tmp_path: Path) -> None:
    owner = store.as_user(_sign_in(store, "ann", "ann@corp.com"))
    for email, role in (("vi@corp.com", "viewer"), ("re@corp.com", "reviewer"), ("ad@corp.com", "admin")):
        owner.users.add(email, role)
        _sign_in(store, email.split("@")[0], email)
    by_role = {u.role: store.as_user(u) for u in store.users.all() if u.iss == IDP}
    pk = store.sessions.pks("ds")[0]

    def attempts(s: Store) -> dict[str, object]:
        version = s.sessions.get(pk).version
        return {
            "review": lambda: s.sessions.save(pk, {"reference": f"ok {s.user.role}"}, base_version=version),
            "status": lambda: s.sessions.set_status(
                pk, "approved" if s.user.role == "admin" else "flagged", base_version=s.sessions.get(pk).version
            ),
            "verdict": lambda: s.labels.set_verdict(pk, "label", 1.0),
            "comment": lambda: s.labels.add_comment(pk, "fine"),
            "bulk": lambda: s.sessions.tag_many([pk], add=[s.user.role]),
            "import": lambda: import_stream(s, io.BytesIO(_chat(1)), "more.jsonl", "ds2"),
            "score": lambda: s.runs.create("ds", ["exact_match"], {"exact_match": {"name": "exact_match"}}),
            "export": lambda: export_dataset(s, "ds", tmp_path / f"{s.user.role}.jsonl", "evalcore"),
            "rename": lambda: (s.datasets.rename("ds", "ds-renamed"), s.datasets.rename("ds-renamed", "ds")),
            "users": lambda: s.users.add(f"new-{s.user.role}@corp.com", "viewer"),
            "owners": lambda: s.users.add(f"boss-{s.user.role}@corp.com", "owner"),
        }

    allowed: dict[str, list[str]] = {}
    for role in ROLES:
        allowed[role] = []
        for action, attempt in attempts(by_role[role]).items():
            try:
                attempt()  # type: ignore[operator]
            except PermissionDeniedError as exc:
                assert by_role[role].user.role in str(exc) and "ask an admin" in str(exc)
            else:
                allowed[role].append(action)
    review = ["review", "status", "verdict", "comment", "bulk"]
    admin = [*review, "import", "score", "export", "rename", "users"]
    assert allowed == {"viewer": [], "reviewer": review, "admin": admin, "owner": [*admin, "owners"]}
    assert allows("admin", "manage_users") and not allows("admin", "manage_owners")
    # every change names its real user, by id and name
    edits = query(store, "SELECT author, author_id FROM edits WHERE author_id IS NOT NULL ORDER BY id")
    names = {u.id: u.name for u in store.users.all()}
    assert {(a, names[i]) for a, i in edits} == {(n, n) for n in ("Re", "Ad", "Ann")}
    assert {v.author for v in store.labels.verdicts(pk)} == {"Re", "Ad", "Ann"}
    assert {c.author for c in store.labels.comments(pk)} == {"Re", "Ad", "Ann"}
    runs = store.runs.recent("ds")
    assert sorted(r.created_by for r in runs) == ["Ad", "Ann"]
    manifest = json.loads((tmp_path / "admin.jsonl.manifest.json").read_text())
    assert manifest["exported_by"] == {"id": by_role["admin"].user.id, "name": "Ad", "email": "ad@corp.com"}


def test_a_forged_write_by_a_viewer_is_refused_and_changes_nothing(store: Store) -> None:
    _sign_in(store, "ann", "ann@corp.com")
    store.as_user(store.users.find("ann@corp.com")).users.add("vi@corp.com", "viewer")
    viewer = store.as_user(_sign_in(store, "vi", "vi@corp.com"))
    pk = store.sessions.pks("ds")[0]
    before = store.sessions.get(pk)
    with pytest.raises(PermissionDeniedError, match="is a viewer and may not"):
        viewer.sessions.save(pk, {"reference": "forged"}, base_version=before.version)
    with pytest.raises(PermissionDeniedError):
        viewer.datasets.delete("ds", confirm="ds")
    after = store.sessions.get(pk)
    assert (after.version, after.session.reference, store.sessions.history(pk)) == (before.version, None, [])
    assert store.datasets.names() == ["ds"]


def test_a_role_lowered_or_a_user_disabled_while_signed_in_applies_at_their_next_change(store: Store) -> None:
    owner = store.as_user(_sign_in(store, "ann", "ann@corp.com"))
    owner.users.add("re@corp.com", "reviewer")
    reviewer = store.as_user(_sign_in(store, "re", "re@corp.com"))
    pk = store.sessions.pks("ds")[0]
    reviewer.labels.add_comment(pk, "first")
    owner.users.set_role("re@corp.com", "viewer")
    with pytest.raises(PermissionDeniedError, match="is a viewer"):
        reviewer.labels.add_comment(pk, "second")  # the bound store still holds the old role: read again
    owner.users.set_role("re@corp.com", "reviewer")
    owner.users.disable("re@corp.com")
    with pytest.raises(PermissionDeniedError, match="disabled"):
        reviewer.labels.add_comment(pk, "third")
    identity = identity_of({"is_logged_in": True, "iss": IDP, "sub": "re", "email": "re@corp.com"})
    assert identity is not None
    refused = admit(store.users, identity, first_view=False)
    assert refused.user is None and "disabled" in (refused.refusal or "")
    assert admit(store.users, identity, first_view=True).user is None
    owner.users.enable("re@corp.com")
    assert admit(store.users, identity, first_view=False).user == store.users.find("re@corp.com")
    assert [c.body for c in store.labels.comments(pk)] == ["first"]


def test_owners_are_made_by_owners_and_the_last_one_stays(store: Store) -> None:
    owner = store.as_user(_sign_in(store, "ann", "ann@corp.com"))
    owner.users.add("ad@corp.com", "admin")
    admin = store.as_user(_sign_in(store, "ad", "ad@corp.com"))
    with pytest.raises(PermissionDeniedError, match="needs the role owner"):
        admin.users.set_role("ann@corp.com", "viewer")
    with pytest.raises(PermissionDeniedError, match="needs the role owner"):
        admin.users.set_role("ad@corp.com", "owner")
    with pytest.raises(UsageError, match="cannot disable yourself"):
        admin.users.disable("ad@corp.com")
    local = store.users.local()
    store.users.set_role(local.name, "admin")  # the machine's local user (the command line) is one owner ...
    with pytest.raises(UsageError, match="the last owner"):
        owner.users.set_role("ann@corp.com", "admin")  # ... and Ann the last one left
    with pytest.raises(UsageError, match="unknown role 'root'"):
        owner.users.set_role("ad@corp.com", "root")


def test_an_email_that_changes_at_the_provider_keeps_the_person_and_their_role(store: Store) -> None:
    owner = store.as_user(_sign_in(store, "ann", "ann@corp.com"))
    owner.users.add("re@corp.com", "reviewer")
    owner.users.add("boss@corp.com", "admin")
    reviewer = _sign_in(store, "re", "re@corp.com")
    moved = _sign_in(store, "re", "boss@corp.com")  # same sub, the e-mail of an admin not yet signed in
    assert (moved.id, moved.role) == (reviewer.id, "reviewer")  # the role is the store's, not the e-mail's
    boss = _sign_in(store, "boss", "boss@corp.com")  # the admin still gets their own row
    assert (boss.role, boss.sub) == ("admin", "boss")
    unverified = _sign_in(store, "re", "other@corp.com", verified=False)
    assert unverified.email == "boss@corp.com"  # an unverified e-mail is not taken up


def test_two_first_sign_ins_at_once_make_one_owner(store_url: str) -> None:
    import threading

    with open_store(store_url) as store:
        barrier = threading.Barrier(6)
        results: list[str] = []

        def go(n: int) -> None:
            barrier.wait()
            try:
                results.append(_sign_in(store, f"p{n}", f"p{n}@corp.com").role)
            except PermissionDeniedError:
                results.append("refused")

        threads = [threading.Thread(target=go, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == ["owner"] + ["refused"] * 5


def test_one_person_mode_asks_the_name_once(store: Store) -> None:
    assert not store.users.local_named()
    local = store.users.local()
    assert (local.role, local.iss) == ("owner", "local")
    named = store.users.rename(local, "  Ann   Lee ")
    assert (named.name, store.users.local_named(), store.users.local().name) == ("Ann Lee", True, "Ann Lee")
    with open_store(store.url) as again:
        assert again.users.local_named() and again.user.name == "Ann Lee"  # a new tab, a restart: kept
    with pytest.raises(UsageError, match="empty"):
        store.users.rename(local, "  ")


def test_claims_are_read_as_streamlit_gives_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not sign_in_mode({"email": "test@example.com"}) and sign_in_mode({"is_logged_in": False})
    assert identity_of({"is_logged_in": False}) is None
    claims = {"is_logged_in": True, "iss": IDP, "sub": "s", "email": "a@b.c", "email_verified": True,
              "preferred_username": "ab", "provider": "keycloak"}  # fmt: skip
    assert identity_of(claims) == identity_of(claims | {"name": ""}) is not None
    assert identity_of(claims).name == "ab"  # type: ignore[union-attr]
    assert not identity_of(claims | {"email_verified": "no"}).email_verified  # type: ignore[union-attr]
    assert providers({"redirect_uri": "x", "client_id": "a", "google": {"client_id": "g"}, "misc": "x"}) == [
        "default", "google"
    ]  # fmt: skip
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert not auth_configured(tmp_path)
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text("[auth]\nredirect_uri = 'x'\n")
    assert auth_configured(tmp_path)
    (tmp_path / ".streamlit" / "secrets.toml").write_text("not toml [")
    assert not auth_configured(tmp_path)
    assert [is_loopback(a) for a in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "10.1.2.3", "")] == [
        True, True, True, False, False, False
    ]  # fmt: skip


def test_the_command_line_manages_users(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.db")
    assert main(["users", "list", "--db", db]) == 0
    assert "the first person to sign in to the app becomes its owner" in capsys.readouterr().out
    assert main(["users", "add", "ann@corp.com", "--role", "admin", "--name", "Ann", "--db", db]) == 0
    assert main(["users", "add", "bob@corp.com", "--role", "reviewer", "--db", db]) == 0
    assert main(["users", "set-role", "bob@corp.com", "viewer", "--db", db]) == 0
    assert main(["users", "disable", "Ann", "--db", db]) == 0
    assert main(["users", "allow-domain", "corp.com", "reviewer", "--db", db]) == 0
    capsys.readouterr()
    assert main(["users", "list", "--db", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "e-mail", "role", "state", "last", "seen"]
    assert [line.split()[:4] for line in lines[1:3]] == [
        ["Ann", "ann@corp.com", "admin", "disabled"],
        ["bob@corp.com", "bob@corp.com", "viewer", "not"],
    ]
    assert lines[-1] == "anyone with a verified e-mail at corp.com may sign in as reviewer"
    assert main(["users", "disable", "nobody@corp.com", "--db", db]) == 2
    assert "no user 'nobody@corp.com'" in capsys.readouterr().err
    assert main(["users", "add", "not-an-email", "--role", "viewer", "--db", db]) == 2
    with pytest.raises(SystemExit):
        main(["users", "add", "x@corp.com", "--role", "root", "--db", db])
    with open_store(db) as store:
        rows = user_rows(store.users.all())
        assert [r.state for r in rows] == ["disabled", "not signed in yet"]
        assert user_lines([], {}) == ["no users yet: the first person to sign in to the app becomes its owner"]


def test_the_app_refuses_to_serve_the_network_without_sign_in(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["app", "--address", "0.0.0.0", "--db", str(tmp_path / "s.db")]) == 2
    err = capsys.readouterr().err
    assert "no sign-in configured" in err and "--insecure-no-auth" in err
