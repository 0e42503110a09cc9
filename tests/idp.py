"""A mock OpenID provider on loopback for the sign-in tests (``oidc-provider-mock``), the ``secrets.toml`` that
points the app at it, and the sign-in's HTTP round trip done as a browser would (no browser).

The provider runs in a process of its own on 127.0.0.1, reached as ``localhost`` (its Werkzeug debugger is on:
loopback only).
Its people are set with ``PUT /users/{sub}``; its sign-in form takes any ``sub``. Streamlit's cookie is signed (not
encrypted) with the ``cookie_secret``: ``read_cookie`` and ``forge_cookie`` open and make one as Streamlit does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

COOKIE = "_streamlit_user"
SECRET = "a-cookie-secret-for-the-tests-only-0123456789"


@dataclass
class Provider:
    """A running mock provider."""

    url: str  # its issuer, http://localhost:PORT

    @property
    def metadata(self) -> str:
        return f"{self.url}/.well-known/openid-configuration"

    def person(self, sub: str, **claims: Any) -> None:
        """Let ``sub`` sign in, with these claims in their ID token (``email_verified`` True unless given)."""
        claims.setdefault("email_verified", True)
        response = httpx.put(f"{self.url}/users/{sub}", json=claims, timeout=10)
        response.raise_for_status()


@contextmanager
def provider(log: Path | None = None) -> Iterator[Provider]:
    """A mock OpenID provider on a free loopback port, in a process of its own (stopped by its PID)."""
    from app_server import free_port

    port = free_port()
    out = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    command = [sys.executable, "-W", "ignore", "-m", "oidc_provider_mock", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    running = Provider(f"http://localhost:{port}")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(running.metadata, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the mock OpenID provider did not start (exit {process.poll()})")
            time.sleep(0.1)
        yield running
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log is not None:
            out.close()  # type: ignore[union-attr]


def write_secrets(folder: Path, providers: dict[str, Provider], *, secret: str = SECRET) -> Path:
    """``folder/.streamlit/secrets.toml`` with an ``[auth]`` section for these providers (``default`` is the
    section's own keys, any other name an ``[auth.NAME]`` section); the app is reached at ``localhost``."""
    lines = ["[auth]", 'redirect_uri = "http://localhost:{port}/oauth2callback"', f'cookie_secret = "{secret}"']
    for name, idp in providers.items():
        keys = [f'client_id = "evalcore-{name}"', 'client_secret = "not-a-secret"',
                f'server_metadata_url = "{idp.metadata}"']  # fmt: skip
        lines += keys if name == "default" else ["", f"[auth.{name}]", *keys]
    path = folder / ".streamlit" / "secrets.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def login_url(app: str, provider_name: str = "default", *, secret: str = SECRET) -> str:
    """The URL ``st.login(provider_name)`` sends the browser to: a short-lived token naming the provider, signed
    with the cookie secret as Streamlit signs it."""
    from joserfc import jwt
    from joserfc.jwk import OctKey

    token = jwt.encode({"alg": "HS256"}, {"provider": provider_name, "exp": int(time.time()) + 120},
                       OctKey.import_key(secret))  # fmt: skip
    return f"{app}/auth/login?provider={token}"


def sign_in_over_http(app: str, sub: str, provider_name: str = "default") -> httpx.Client:
    """The whole sign-in of ``sub`` over HTTP, as a browser follows it: the app's login route, the provider's form,
    the callback. Returns the client holding the app's cookies (``COOKIE`` among them when it worked)."""
    client = httpx.Client(timeout=20)
    to_provider = client.get(login_url(app, provider_name))
    assert to_provider.status_code == 302, to_provider.text
    form = client.post(to_provider.headers["location"], data={"sub": sub})
    assert form.status_code == 302, form.text
    back = client.get(form.headers["location"])  # the app's /oauth2callback
    assert back.status_code == 302, back.text
    return client


def read_cookie(value: str, *, secret: str = SECRET) -> dict[str, Any]:
    """The claims a ``_streamlit_user`` cookie holds (checking its signature)."""
    from itsdangerous import URLSafeTimedSerializer

    return dict(json.loads(URLSafeTimedSerializer(secret, salt=COOKIE).loads(value)))


def forge_cookie(claims: dict[str, Any], *, secret: str = SECRET, age_days: float = 0) -> str:
    """A ``_streamlit_user`` cookie holding ``claims``, signed with ``secret``, made ``age_days`` ago."""
    from itsdangerous import URLSafeTimedSerializer

    serializer = URLSafeTimedSerializer(secret, salt=COOKIE)
    if age_days:
        signer = serializer.make_signer(COOKIE)
        old = int(time.time() - age_days * 86400)
        signer.get_timestamp = lambda: old  # type: ignore[method-assign]
        payload = serializer.dump_payload(json.dumps(claims))
        return signer.sign(payload).decode()
    return str(serializer.dumps(json.dumps(claims)))
