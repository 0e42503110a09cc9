"""Who is using the app: the signed-in person (Streamlit's OpenID Connect sign-in) or the machine's local user.

Streamlit signs people in (``st.login``, configured by the ``[auth]`` section of ``.streamlit/secrets.toml``) and
hands the app the ID token's claims (``st.user``); it decides nothing about who may do what. This module turns
those claims into a user of the store (``admit``): a person is their (``iss``, ``sub``), their role is the
store's (``evalcore.store.users``), and it is asked again on every page view, so that a disabled user or a lowered
role takes effect at the next click, not when Streamlit's 30-day cookie ends.

With no ``[auth]`` section the app is one person's: the machine's local user, the store's owner, whose name is
asked once and kept in the store.
"""

from __future__ import annotations

import ipaddress
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcore.errors import PermissionDeniedError
from evalcore.store.access import Role, User
from evalcore.store.users import LOCAL, Users

__all__ = [
    "Admission",
    "Identity",
    "admit",
    "auth_configured",
    "identity_of",
    "is_loopback",
    "minute",
    "providers",
    "sign_in_mode",
    "user_lines",
    "user_state",
]


@dataclass(frozen=True)
class Identity:
    """The claims of a signed-in person that evalcore reads."""

    iss: str
    sub: str
    email: str | None
    email_verified: bool
    name: str | None
    provider: str | None


@dataclass(frozen=True)
class Admission:
    """Whether a signed-in person may use the app now: their user, else what to tell them."""

    user: User | None
    refusal: str | None = None
    stranger: bool = False  # refused as someone the store does not know (not a disabled user)


def sign_in_mode(claims: Mapping[str, Any]) -> bool:
    """Whether the app has sign-in configured: Streamlit gives ``is_logged_in`` only when an ``[auth]`` section
    exists (``st.user.is_logged_in`` itself raises without one)."""
    return "is_logged_in" in claims


def identity_of(claims: Mapping[str, Any]) -> Identity | None:
    """The person ``claims`` (``st.user``) say is signed in; None when no one is."""
    if claims.get("is_logged_in") is not True:
        return None
    email = claims.get("email")
    name = claims.get("name") or claims.get("preferred_username")
    verified = claims.get("email_verified")
    return Identity(
        iss=str(claims.get("iss") or ""),
        sub=str(claims.get("sub") or ""),
        email=str(email) if isinstance(email, str) and email else None,
        email_verified=verified is True or verified == "true",
        name=str(name) if isinstance(name, str) and name.strip() else None,
        provider=str(claims["provider"]) if isinstance(claims.get("provider"), str) else None,
    )


def admit(users: Users, identity: Identity, *, first_view: bool) -> Admission:
    """The user ``identity`` is, as the store says now. The first page view of a browser session signs them in
    (``Users.sign_in``: who may come in, the first owner, a binding by e-mail); every later one only looks them up,
    so a disabled user is refused and a changed role applies at their next click."""
    try:
        if not first_view:
            known = users.current(identity.iss, identity.sub)
            if known is not None:
                if known.disabled:
                    return Admission(None, f"{known.label} is disabled: ask an admin to enable you")
                return Admission(known)
        return Admission(
            users.sign_in(
                iss=identity.iss, sub=identity.sub, email=identity.email, email_verified=identity.email_verified,
                name=identity.name, provider=identity.provider,
            )
        )  # fmt: skip
    except PermissionDeniedError as exc:
        return Admission(None, str(exc), stranger=users.current(identity.iss, identity.sub) is None)


def providers(auth: Mapping[str, Any]) -> list[str]:
    """The sign-in providers of an ``[auth]`` section: ``default`` when it holds a ``client_id`` itself, then each
    ``[auth.NAME]`` section that does."""
    named = [key for key, value in auth.items() if isinstance(value, Mapping) and "client_id" in value]
    return (["default"] if "client_id" in auth else []) + named


def _secrets_files(folder: Path) -> list[Path]:
    return [Path.home() / ".streamlit" / "secrets.toml", folder / ".streamlit" / "secrets.toml"]


def auth_configured(folder: Path) -> bool:
    """Whether Streamlit started in ``folder`` would have sign-in: an ``[auth]`` section in the secrets file of the
    folder or of the home directory. A file that cannot be read has none (Streamlit would refuse it too)."""
    for path in _secrets_files(folder):
        try:
            with path.open("rb") as file:
                if isinstance(tomllib.load(file).get("auth"), dict):
                    return True
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
    return False


def is_loopback(address: str) -> bool:
    """Whether a server listening on ``address`` is reachable from this machine only."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def user_state(user: User) -> str:
    """A user's state, in a word or three: disabled, this machine (the local user), active, not signed in yet."""
    if user.disabled:
        return "disabled"
    if user.iss == LOCAL:
        return "this machine"
    return "active" if user.signed_in_yet else "not signed in yet"


def minute(stamp: str | None) -> str:
    """A stored time to the minute, as lists show it: ``2026-11-27 03:28``."""
    return (stamp or "")[:16].replace("T", " ")


def user_lines(users: Sequence[User], domains: Mapping[str, Role]) -> list[str]:
    """``evalcore users list``: one aligned line per user, then the allowed domains."""
    heads = ("name", "e-mail", "role", "state", "last seen")
    cells = [(u.name, u.email or "-", u.role, user_state(u), minute(u.last_seen_at) or "-") for u in users]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip() for cell in [heads, *cells]]
    if not cells:
        lines = ["no users yet: the first person to sign in to the app becomes its owner"]
    lines += [f"anyone with a verified e-mail at {d} may sign in as {r}" for d, r in sorted(domains.items())]
    return lines
