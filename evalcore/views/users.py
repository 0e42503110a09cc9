"""The users of a store as the Users page and ``evalcore users list`` show them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalcore.signin import minute, user_state
from evalcore.store.access import ROLES, Action, Role, User
from evalcore.store.users import LOCAL
from evalcore.views.table import column
from evalcore.views.text import visible

__all__ = ["PAGES", "ROLE_NOTES", "UserRow", "pages_for", "role_table", "user_choice", "user_rows"]

#: The app's pages, each with the action a person's role must allow for the page to be theirs (None: anyone's).
PAGES: dict[str, Action | None] = {
    "datasets": None,
    "sessions": None,
    "review": None,
    "labeling": None,
    "metrics": None,
    "dashboard": None,
    "compare": None,
    "export": "export",
    "simulate": "score",
    "users": "manage_users",
}

#: What each role may do, in a sentence (the Users page's legend, the README's table).
ROLE_NOTES: dict[Role, str] = {
    "viewer": "reads everything, changes nothing",
    "reviewer": "reviews: ground truth, status, tags, verdicts, answers to questions, comments",
    "admin": "imports, scores, solves, exports, manages datasets, questions, queues and users, settles gold",
    "owner": "everything; makes and unmakes owners and admins",
}


@dataclass(frozen=True)
class UserRow:
    """One user, as a row of the Users page's table."""

    id: int = column("#")
    name: str = column("Name")
    email: str = column("E-mail")
    role: str = column("Role")
    state: str = column("State")
    provider: str = column("Signs in through")
    last_seen: str = column("Last seen")
    added: str = column("Added")


def user_rows(users: Sequence[User]) -> list[UserRow]:
    """``users`` as table rows."""
    return [
        UserRow(
            u.id, visible(u.name), visible(u.email or ""), u.role, user_state(u),
            "" if u.iss == LOCAL else visible(u.provider or ("any" if not u.signed_in_yet else "")),
            minute(u.last_seen_at), minute(u.created_at),
        )
        for u in users
    ]  # fmt: skip


def user_choice(user: User) -> str:
    """A user as a choice of the Users page: ``Ann Lee (ann@example.com) · reviewer · disabled``."""
    return visible(f"{user.label} · {user.role}" + (" · disabled" if user.disabled else ""))


def role_table() -> list[dict[str, str]]:
    """Each role with what it may do (the Users page's legend)."""
    return [{"Role": role, "May": ROLE_NOTES[role]} for role in ROLES]


def pages_for(user: User) -> set[str]:
    """The pages ``user`` may open (the rest are not in their navigation, and their URLs open nothing)."""
    return {page for page, needs in PAGES.items() if needs is None or user.can(needs)}
