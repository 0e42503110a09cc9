"""Who may do what: the four roles, the actions each allows, and the acting user every change is made by.

A store is always used by someone (``Store.user``): the person signed in to the app, or — on the command line and
in one-person mode — the machine's local user, who owns the store (whoever can reach its database file or its
credentials can do anything with it anyway). Every change the store makes checks that user's role here first, so
a button a page hides is never the only thing standing between a viewer and a change.

| role | may |
|---|---|
| ``viewer`` | read everything, change nothing |
| ``reviewer`` | what a viewer may, and review: ground truth, status, tags, verdicts, comments |
| ``admin`` | what a reviewer may, and settle answers into gold, import, score, solve, export, manage datasets, users |
| ``owner`` | everything, owners and admins included; the first user of a store is one |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from evalcore.errors import PermissionDeniedError, UsageError

__all__ = ["ACTIONS", "ROLES", "Action", "Role", "User", "allows", "require", "role_of"]

Role = Literal["viewer", "reviewer", "admin", "owner"]
ROLES: tuple[Role, ...] = get_args(Role)
_RANK = {role: rank for rank, role in enumerate(ROLES)}

Action = Literal[
    "review", "adjudicate", "import", "score", "export", "manage_datasets", "manage_users", "manage_owners"
]
#: The least role each action needs.
ACTIONS: dict[Action, Role] = {
    "review": "reviewer",
    "adjudicate": "admin",
    "import": "admin",
    "score": "admin",
    "export": "admin",
    "manage_datasets": "admin",
    "manage_users": "admin",
    "manage_owners": "owner",
}


@dataclass(frozen=True)
class User:
    """A person (or the machine's local user) as the store knows them: who they are at their identity provider
    (``iss``, ``sub``: the ID token's issuer and subject; ``local`` for the local user; None until the first
    sign-in of someone an admin added by e-mail), their e-mail and display name, their role, whether they are
    disabled, and the sign-in provider (the ``[auth]`` section's name) they came through."""

    id: int
    name: str
    role: Role
    email: str | None = None
    iss: str | None = None
    sub: str | None = None
    disabled: bool = False
    created_at: str = ""
    last_seen_at: str | None = None
    provider: str | None = None

    @property
    def signed_in_yet(self) -> bool:
        """Whether they have signed in (a user an admin added by e-mail has no identity until then)."""
        return self.iss is not None

    def can(self, action: Action) -> bool:
        """Whether this user may ``action`` (never, when disabled)."""
        return allows(self.role, action) and not self.disabled

    @property
    def label(self) -> str:
        """The user as a list shows them: ``Ann Lee (ann@example.com)``."""
        return f"{self.name} ({self.email})" if self.email and self.email != self.name else self.name


def role_of(value: str) -> Role:
    """``value`` as a role; an unknown one is a ``UsageError`` naming the known ones."""
    for role in ROLES:
        if value == role:
            return role
    raise UsageError(f"unknown role {value!r}; use one of {', '.join(ROLES)}")


def allows(role: Role, action: Action) -> bool:
    """Whether ``role`` may ``action``."""
    return _RANK[role] >= _RANK[ACTIONS[action]]


def require(user: User, action: Action, what: str) -> None:
    """A ``PermissionDeniedError`` unless ``user`` may ``action`` (``what``: the change, as a person reads it)."""
    if user.disabled:
        raise PermissionDeniedError(f"{user.label} is disabled: {what} was refused; ask an admin")
    if not allows(user.role, action):
        needed = ACTIONS[action]
        raise PermissionDeniedError(
            f"{user.label} is a {user.role} and may not {what}: that needs the role {needed} or above; ask an admin"
        )
