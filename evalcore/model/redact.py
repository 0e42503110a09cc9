"""Keeping credentials out of everything the judge leaves behind: errors, answers, stored URLs and logs.

The API key, and credentials written into the base URL (``https://user:pass@host/v1``, or a query
parameter such as ``?api-key=...``), are needed to call the endpoint and nowhere else. The client
redacts every text it builds from a response or an exception (an endpoint may echo the key back),
and only the URL without its credentials (``public_url``) is ever stored, hashed or shown.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import urllib.parse
from dataclasses import dataclass

__all__ = ["REDACTED", "Endpoint", "Redactor", "install_log_filter", "public_url", "scrub", "split_url"]

REDACTED = "[REDACTED]"

#: Query parameters whose values are credentials (``api-key``, ``access_token``, ``sig``, Azure's ``code``...).
_SECRET_NAME = r"[^=&\s\"'<>#?]*(?:key|token|secret|passw|pwd|auth|sig|credential|session|code)[^=&\s\"'<>#]*"
_SECRET_PARAM = re.compile(_SECRET_NAME, re.IGNORECASE)

#: Credential shapes redacted from any text, whoever's they are (a part already redacted is left as it is).
_DONE = r"(?!\[REDACTED\])"
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"(?i)\b(bearer)(\s+|%20){_DONE}[^\s\"',;}}\]\\]+"), rf"\1\2{REDACTED}"),
    (re.compile(rf"(?i)\b(basic)(\s+|%20){_DONE}[A-Za-z0-9+/=_-]{{6,}}"), rf"\1\2{REDACTED}"),
    (
        re.compile(
            r"(?i)((?:authorization|proxy-authorization|x-api-key|api[-_]?key)[\"']?\s*[:=]\s*[\"']?"
            rf"(?:(?:bearer|basic)\s+)?+){_DONE}[^\"'\s,;}}&]+"
        ),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]+@"), rf"\1{REDACTED}@"),
    (re.compile(rf"(?i)([?&]{_SECRET_NAME}=){_DONE}[^&\s\"'<>#]+"), rf"\1{REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),  # an OpenAI-style key, anyone's
]


def scrub(text: str) -> str:
    """``text`` with every credential-shaped part (bearer tokens, URL credentials, ``sk-`` keys) redacted."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


@dataclass(frozen=True)
class Endpoint:
    """A base URL taken apart: where to send requests, and the credentials it carried."""

    base: str  # scheme, host, port and path: no user, password, query or fragment
    auth: tuple[str, str] | None  # user and password written into the URL
    params: tuple[tuple[str, str], ...]  # its query parameters, credentials included
    secrets: tuple[str, ...]  # every credential in it (password, its basic-auth token, secret parameters' values)


def split_url(url: str) -> Endpoint:
    """``url`` taken apart (see ``Endpoint``); a URL that cannot be parsed is kept whole, with no secrets."""
    url = url.strip()
    try:
        parts = urllib.parse.urlsplit(url)
        params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError:
        return Endpoint(url.rstrip("/"), None, (), ())
    userinfo, at, host = parts.netloc.rpartition("@")
    secrets: list[str] = []
    auth = None
    if at:
        user, _, password = userinfo.partition(":")
        auth = (urllib.parse.unquote(user), urllib.parse.unquote(password))
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()  # as basic auth sends them
        secrets += [s for s in (password, auth[1], token) if s]
    secrets += [value for name, value in params if value and _SECRET_PARAM.fullmatch(name)]
    base = urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", "")).rstrip("/")
    return Endpoint(base, auth, tuple(params), tuple(dict.fromkeys(secrets)))


def public_url(url: str) -> str:
    """``url`` without credentials: no user or password, no secret query parameter, no fragment.

    A URL with none is returned as it was (less a trailing slash), so that what was stored or
    hashed before stays the same.
    """
    url = url.strip().rstrip("/")
    try:
        parts = urllib.parse.urlsplit(url)
        params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return scrub(url)
    kept = [(name, value) for name, value in params if not _SECRET_PARAM.fullmatch(name)]
    if "@" not in parts.netloc and len(kept) == len(params) and not parts.fragment:
        return scrub(url)  # nothing of ours to strip (scrub: a credential-shaped leftover, just in case)
    host = parts.netloc.rpartition("@")[2]
    query = urllib.parse.urlencode(kept)
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, query, "")).rstrip("/")


#: A secret shorter than this is not searched for in texts: it would match everywhere (real keys are long).
MIN_SECRET_CHARS = 4


class Redactor:
    """Removes given secrets (and anything credential-shaped) from texts."""

    def __init__(self, secrets: list[str | None] | tuple[str | None, ...]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if not secret or len(secret.strip()) < MIN_SECRET_CHARS:
                continue
            # The secret as written, as JSON escapes it and as a URL encodes it; and as an endpoint echoing it might
            # turn it: reversed, and in base64 (standard and URL-safe, with or without its padding). Its upper and
            # lower case are matched by ignoring case.
            written = {secret, json.dumps(secret)[1:-1], urllib.parse.quote(secret, safe=""), secret.strip()}
            forms |= written | {form[::-1] for form in written}
            raw = secret.strip().encode()
            for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
                forms |= {encoded, encoded.rstrip("=")}
        forms = {form for form in forms if len(form) >= MIN_SECRET_CHARS}
        self.secrets = sorted(forms, key=len, reverse=True)  # longest first: no half-redacted leftovers
        pattern = "|".join(map(re.escape, self.secrets))
        self._literal = re.compile(pattern, re.IGNORECASE) if self.secrets else None

    def __call__(self, text: str) -> str:
        """``text`` with the secrets and every credential-shaped part replaced by ``[REDACTED]``."""
        if self._literal is not None:
            text = self._literal.sub(REDACTED, text)
        return scrub(text)


class _LogRedactor(logging.Filter):
    """Redacts credential-shaped parts (and registered secrets) from HTTP libraries' log records."""

    def __init__(self) -> None:
        super().__init__()
        self.redactors: dict[tuple[str, ...], Redactor] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the logging module's business, not ours
            return True
        clean = scrub(message)
        for redactor in list(self.redactors.values()):
            clean = redactor(clean)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_LOG_FILTER = _LogRedactor()
#: The loggers of httpx and httpcore (a logger's filters see only what is logged to it by name).
_HTTP_LOGGERS = ("httpx", "httpcore", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy")


def install_log_filter(redactor: Redactor | None = None) -> None:
    """Make the HTTP libraries' log records redact credentials (and ``redactor``'s secrets)."""
    if redactor is not None and redactor.secrets:
        _LOG_FILTER.redactors.setdefault(tuple(redactor.secrets), redactor)
    for name in _HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if _LOG_FILTER not in logger.filters:
            logger.addFilter(_LOG_FILTER)
