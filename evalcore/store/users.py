"""The people who use a store (``store.users``): who they are, their roles, and who may come in.

A person is their identity provider's (``iss``, ``sub``) — the ID token's issuer and subject — never their e-mail
alone: an e-mail changes, and two providers can vouch for the same address. Who may come in:

* the first person to sign in to a store no one has signed in to becomes its ``owner``;
* a person an admin added by e-mail (``add``): their first sign-in with that e-mail binds them to that row — when
  their provider says it verified the e-mail (``email_verified``), or comes through the provider the admin named
  (``provider``: then that provider's word is trusted, as for Microsoft Entra, which sends no such claim);
* anyone whose verified e-mail is at an allowed domain (``allow_domain``), with the role that domain gives;
* nobody else: they are told to ask an admin.

A disabled user is refused at once: ``current`` is asked on every page view, not only at sign-in (Streamlit keeps a
sign-in's claims for 30 days). The machine's local user (``local``) is the one-person mode's and the command
line's: the store's owner, needing no sign-in.
"""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING, Any

from evalcore.errors import NotFoundError, PermissionDeniedError, UsageError
from evalcore.store.access import Role, User, role_of
from evalcore.store.records import now
from evalcore.store.store import SIGN_IN_NOTES, set_note

if TYPE_CHECKING:
    from evalcore.store.engine import Conn
    from evalcore.store.store import Store

__all__ = ["LOCAL", "MAX_NAME", "Users", "named_user"]

#: The longest display name (a provider's longer one is cut to it).
MAX_NAME = 200
#: The ``iss`` and ``sub`` of the machine's local user.
LOCAL = "local"
_COLUMNS = "id, name, role, email, iss, sub, disabled, created_at, last_seen_at, provider"
_DOMAINS = SIGN_IN_NOTES + "domains"  # the meta note of allowed e-mail domains: {"example.com": "reviewer"}
_NAMED = SIGN_IN_NOTES + "local-named"  # the meta note that the local user chose their name (the app asks once)


def _user(row: tuple[Any, ...]) -> User:
    return User(int(row[0]), row[1], role_of(row[2]), row[3], row[4], row[5], bool(row[6]), row[7], row[8], row[9])


def _login() -> str:
    try:
        return getpass.getuser() or "me"
    except (KeyError, OSError):
        return "me"


class Users:
    """The users of one store (``store.users``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine = store._engine

    # -- reading ------------------------------------------------------------------------------------------

    def get(self, user_id: int) -> User:
        """The user ``user_id``."""
        with self._engine.read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM users WHERE id = ?", [user_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no user #{user_id}")
        return _user(row)

    def find(self, who: str) -> User:
        """The user with e-mail ``who`` (any case), else the user named ``who``."""
        with self._engine.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM users WHERE lower(email) = lower(?) OR name = ? ORDER BY lower(email) = "
                "lower(?) DESC, id LIMIT 1",
                [who, who, who],
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no user {who!r} (by e-mail or name); `evalcore users list` lists them")
        return _user(row)

    def all(self) -> list[User]:
        """Every user, the local user first, then by name."""
        with self._engine.read() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM users ORDER BY iss = ? DESC, name", [LOCAL]).fetchall()
        return [_user(r) for r in rows]

    def current(self, iss: str, sub: str) -> User | None:
        """The user signed in as (``iss``, ``sub``) now — their role and whether they are disabled as the store says
        at this moment (asked on every page view); None when there is none."""
        with self._engine.read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM users WHERE iss = ? AND sub = ?", [iss, sub]).fetchone()
        return None if row is None else _user(row)

    # -- the local user -----------------------------------------------------------------------------------

    @staticmethod
    def statement_of(user: User) -> tuple[str, list[Any]]:
        """The statement reading ``user`` again (the local user by its login: it may have no row yet)."""
        if user.iss == LOCAL:
            return f"SELECT {_COLUMNS} FROM users WHERE iss = ? AND sub = ?", [LOCAL, LOCAL]
        return f"SELECT {_COLUMNS} FROM users WHERE id = ?", [user.id]

    @staticmethod
    def of_rows(user: User, rows: list[Any]) -> User:
        """``user`` as the rows of ``statement_of(user)`` say it is now (a ``NotFoundError`` when they are gone; the
        local user without a row is as ``local`` makes it)."""
        if rows:
            return _user(rows[0])
        if user.iss == LOCAL:
            return User(0, _login(), "owner", None, LOCAL, LOCAL)
        if not user.id:
            return user
        raise NotFoundError(f"no user #{user.id}")

    def local(self) -> User:
        """The machine's local user: the store's owner in one-person mode and on the command line. Until it first
        changes something it has no row (nothing is written to read a store): its id is then 0."""
        unknown = User(0, _login(), "owner", None, LOCAL, LOCAL)
        with self._engine.read() as conn:
            return self.of_rows(unknown, conn.execute(*self.statement_of(unknown)).fetchall())

    def local_row(self, conn: Conn) -> User:
        """The local user, its row made if it has none yet (inside the caller's transaction)."""
        row = conn.execute(f"SELECT {_COLUMNS} FROM users WHERE iss = ? AND sub = ?", [LOCAL, LOCAL]).fetchone()
        if row is not None:
            return _user(row)
        name = _free_name(conn, _login())
        conn.execute(
            "INSERT INTO users (iss, sub, name, role, created_at, created_by) VALUES (?, ?, ?, 'owner', ?, 'evalcore') "
            "ON CONFLICT DO NOTHING",
            [LOCAL, LOCAL, name, now()],
        )
        row = conn.execute(f"SELECT {_COLUMNS} FROM users WHERE iss = ? AND sub = ?", [LOCAL, LOCAL]).fetchone()
        return _user(row)

    def rename(self, user: User, name: str) -> User:
        """Give ``user`` (the acting user themselves, or anyone for an admin) the display name ``name``."""
        name = " ".join(name.split())
        if not name:
            raise UsageError("a name cannot be empty")
        if len(name) > MAX_NAME:
            raise UsageError(f"a name has at most {MAX_NAME} characters")
        acting = self._store.user
        if acting.id != user.id or (user.iss == LOCAL and acting.iss != LOCAL):
            self._store.require("manage_users", f"rename {user.label}")
        with self._engine.write() as conn:
            target = self.local_row(conn) if user.iss == LOCAL and user.id == 0 else user
            taken = conn.execute("SELECT id FROM users WHERE name = ? AND id != ?", [name, target.id]).fetchone()
            if taken is not None:
                raise UsageError(f"the name {name!r} is taken by another user; choose another")
            conn.execute("UPDATE users SET name = ? WHERE id = ?", [name, target.id])
            if target.iss == LOCAL:
                set_note(conn, _NAMED, "1")
        return self.get(target.id)

    def local_named(self) -> bool:
        """Whether the local user has chosen the name their changes carry (one-person mode asks once)."""
        return self._store.meta.get(_NAMED) is not None

    # -- signing in ---------------------------------------------------------------------------------------

    def sign_in(
        self, *, iss: str, sub: str, email: str | None, email_verified: bool, name: str | None, provider: str | None
    ) -> User:
        """The user signing in as (``iss``, ``sub``) with these claims (see the module's docstring for who may
        come in). Refused — ``PermissionDeniedError`` with what to do — for a disabled user or one not allowed in.
        Their e-mail is kept up to date from the claims (when verified); their name and role are the store's, never
        the token's."""
        if not iss or not sub:
            raise PermissionDeniedError("the sign-in gave no issuer and subject: ask an admin")
        if iss == LOCAL:
            raise PermissionDeniedError("that identity is the machine's own: ask an admin")
        stamp = now()
        shown = " ".join((name or email or sub).split())[:MAX_NAME] or sub
        with self._engine.write() as conn:
            self._engine.lock_users(conn)
            row = conn.execute(f"SELECT {_COLUMNS} FROM users WHERE iss = ? AND sub = ?", [iss, sub]).fetchone()
            if row is not None:  # known: the e-mail may have changed at the provider; the role stays ours
                user = _user(row)
                if user.disabled:
                    raise PermissionDeniedError(f"{user.label} is disabled: ask an admin to enable you")
                fresh = email if email and email_verified else user.email  # an unverified one is not taken up
                conn.execute("UPDATE users SET email = ?, last_seen_at = ? WHERE id = ?", [fresh, stamp, user.id])
                return self.get(user.id)
            anyone = conn.execute("SELECT count(*) FROM users WHERE iss IS NULL OR iss != ?", [LOCAL]).fetchone()[0]
            role: Role | None = "owner" if not anyone else None
            if role is None and email:
                added = conn.execute(
                    f"SELECT {_COLUMNS} FROM users WHERE iss IS NULL AND lower(email) = lower(?) "
                    "AND (provider IS NULL OR provider = ?) ORDER BY id LIMIT 1",
                    [email, provider or ""],
                ).fetchone()
                # An e-mail binds when the provider verified it — or when the admin named the provider to trust
                # (Microsoft Entra, for one, sends no email_verified claim).
                if added is not None and (email_verified or _user(added).provider is not None):
                    user = _user(added)
                    if user.disabled:
                        raise PermissionDeniedError(f"{user.label} is disabled: ask an admin to enable you")
                    named = user.name  # the admin's name for them, else (they gave none) the provider's
                    if name and user.name == user.email:
                        named = _free_name(conn, shown, email, but=user.id)
                    conn.execute(
                        "UPDATE users SET iss = ?, sub = ?, provider = ?, name = ?, last_seen_at = ? WHERE id = ?",
                        [iss, sub, provider, named, stamp, user.id],
                    )
                    return self.get(user.id)
            if role is None and email and email_verified:
                role = self.allowed_domains().get(email.rsplit("@", 1)[-1].lower())
            if role is None:
                who = email or sub
                raise PermissionDeniedError(f"{who} may not come in: ask an admin to add you")
            conn.execute(
                "INSERT INTO users (iss, sub, email, name, role, provider, created_at, created_by, last_seen_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [iss, sub, email, _free_name(conn, shown, email), role, provider, stamp,
                 "first sign-in" if role == "owner" and not anyone else "allowed domain", stamp],
            )  # fmt: skip
            found = conn.execute(f"SELECT {_COLUMNS} FROM users WHERE iss = ? AND sub = ?", [iss, sub]).fetchone()
            return _user(found)

    # -- managing users -----------------------------------------------------------------------------------

    def ensure(self, *, iss: str, sub: str, name: str, role: str, email: str | None = None) -> User:
        """The user (``iss``, ``sub``), made with ``name``, ``role`` and ``email`` when there is none (as a sign-in
        would, without asking who may come in: an admin's, an owner's to make an owner)."""
        found = self.current(iss, sub)
        if found is not None:
            return found
        given = role_of(role)
        self._may_give(given, f"add {name} as {given}")
        with self._engine.write() as conn:
            conn.execute(
                "INSERT INTO users (iss, sub, email, name, role, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [iss, sub, email, _free_name(conn, name, email), given, now(), self._store.user.name],
            )
        made = self.current(iss, sub)
        assert made is not None
        return made

    def add(self, email: str, role: str, *, name: str | None = None, provider: str | None = None) -> User:
        """Let the person with ``email`` in, with ``role``: their first sign-in with that e-mail (verified, and from
        ``provider`` if given) is theirs. An admin's (an owner's, to add an owner)."""
        role = role_of(role)
        email = email.strip()
        if "@" not in email or len(email) > 320:
            raise UsageError(f"{email!r} is not an e-mail address")
        self._may_give(role, f"add {email} as {role}")
        with self._engine.write() as conn:
            taken = conn.execute("SELECT id FROM users WHERE lower(email) = lower(?)", [email]).fetchone()
            if taken is not None:
                raise UsageError(f"{email} is a user already; change their role with `evalcore users set-role`")
            conn.execute(
                "INSERT INTO users (email, name, role, provider, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)",
                [email, _free_name(conn, name or email, email), role, provider, now(), self._store.user.name],
            )
        return self.find(email)

    def _target(self, who: str | User) -> User:
        return self.get(who.id) if isinstance(who, User) else self.find(who)

    def set_role(self, who: str | User, role: str) -> User:
        """Give the user ``who`` (a user, or their e-mail or name) ``role``. An admin's; an owner's when an owner is
        made or unmade. The last owner keeps their role."""
        role = role_of(role)
        user = self._target(who)
        self._may_give(role, f"make {user.label} {role}")
        if user.role == "owner":
            self._may_give("owner", f"change the role of {user.label}, an owner")
            self._not_the_last_owner(user, f"make {user.label} {role}")
        with self._engine.write() as conn:
            conn.execute("UPDATE users SET role = ? WHERE id = ?", [role, user.id])
        return self.get(user.id)

    def disable(self, who: str | User) -> User:
        """Refuse the user ``who`` from now on (at their next page view). An admin's; an owner's for an owner."""
        return self._set_disabled(who, True)

    def enable(self, who: str | User) -> User:
        """Let the disabled user ``who`` in again."""
        return self._set_disabled(who, False)

    def _set_disabled(self, who: str | User, disabled: bool) -> User:
        user = self._target(who)
        verb = "disable" if disabled else "enable"
        self._store.require("manage_users", f"{verb} {user.label}")
        if user.role == "owner":
            self._store.require("manage_owners", f"{verb} {user.label}, an owner")
            if disabled:
                self._not_the_last_owner(user, f"disable {user.label}")
        if disabled and user.id == self._store.user.id:
            raise UsageError("you cannot disable yourself")
        with self._engine.write() as conn:
            conn.execute("UPDATE users SET disabled = ? WHERE id = ?", [int(disabled), user.id])
        return self.get(user.id)

    def allowed_domains(self) -> dict[str, Role]:
        """The e-mail domains whose people may come in, each with the role it gives."""
        import json

        raw = self._store.meta.get(_DOMAINS)
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            return {}
        return (
            {str(d): role_of(r) for d, r in data.items() if r in ("viewer", "reviewer")}
            if isinstance(data, dict)
            else {}
        )

    def allow_domain(self, domain: str, role: str | None) -> dict[str, Role]:
        """Let anyone whose verified e-mail is at ``domain`` in as ``role`` (``viewer`` or ``reviewer``; None: no
        longer). An admin's."""
        import json

        self._store.require("manage_users", f"allow the domain {domain}")
        domain = domain.strip().lower().lstrip("@")
        if not domain or "." not in domain or " " in domain:
            raise UsageError(f"{domain!r} is not an e-mail domain (such as example.com)")
        domains: dict[str, Role] = dict(self.allowed_domains())
        if role is None:
            domains.pop(domain, None)
        else:
            given = role_of(role)
            if given not in ("viewer", "reviewer"):
                raise UsageError("a domain lets people in as viewer or reviewer; make admins one by one")
            domains[domain] = given
        with self._engine.write() as conn:
            set_note(conn, _DOMAINS, json.dumps(domains, sort_keys=True))
        return domains

    def _may_give(self, role: Role, what: str) -> None:
        self._store.require("manage_owners" if role in ("owner",) else "manage_users", what)

    def _not_the_last_owner(self, user: User, what: str) -> None:
        owners = [u for u in self.all() if u.role == "owner" and not u.disabled and u.id != user.id]
        if not owners:
            raise UsageError(f"{user.label} is the last owner: make another owner first, then {what}")


def _free_name(conn: Conn, name: str, email: str | None = None, *, but: int = 0) -> str:
    """``name``, or — taken by another user than ``but`` — ``name (email)``, else ``name 2``, ``name 3``... (display
    names are unique: the history shows who made each change by name)."""

    def taken(candidate: str) -> bool:
        return conn.execute("SELECT 1 FROM users WHERE name = ? AND id != ?", [candidate, but]).fetchone() is not None

    for candidate in (name, f"{name} ({email})" if email and email != name else None):
        if candidate and not taken(candidate):
            return candidate
    n = 2
    while taken(f"{name} {n}"):
        n += 1
    return f"{name} {n}"


def named_user(conn: Conn, name: str, at: str, *, issuer: str, made_by: str) -> int:
    """The user called ``name`` — made, when the store has none, as a disabled viewer of ``issuer`` (who cannot sign
    in): the person behind work that came without a user of this store (verdicts given before there were users, the
    answers an import brings), so that it keeps who did it."""
    row = conn.execute("SELECT id FROM users WHERE name = ?", [name]).fetchone()
    if row is not None:
        return int(row[0])
    return int(
        conn.execute(
            "INSERT INTO users (iss, sub, name, role, disabled, created_at, created_by) "
            "VALUES (?, ?, ?, 'viewer', 1, ?, ?) RETURNING id",
            [issuer, name, name, at, made_by],
        ).fetchone()[0]
    )
