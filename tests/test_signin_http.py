"""The sign-in's real OpenID Connect round trip over HTTP, against a mock provider on loopback (tests/idp.py) and
the real ``streamlit run app.py`` configured by a ``.streamlit/secrets.toml``: what the cookie holds, how it is
set, and what a callback or a login for a provider the app does not know gets."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from app_server import free_port, streamlit_server, wait_healthy
from idp import COOKIE, Provider, login_url, provider, read_cookie, sign_in_over_http, write_secrets


@pytest.fixture(scope="module")
def idp() -> Iterator[Provider]:
    with provider() as running:
        yield running


@pytest.fixture(scope="module")
def other_idp() -> Iterator[Provider]:
    """A second provider, which the app is not configured for."""
    with provider() as running:
        yield running


@pytest.fixture(scope="module")
def app(idp: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("signin")
    write_secrets(folder, {"default": idp})
    with streamlit_server(folder / "store.db", folder=folder, log=folder / "server.log") as url:
        yield url.replace("127.0.0.1", "localhost")  # one host name for the redirect URI and the browser


def test_the_round_trip_leaves_a_signed_cookie_with_the_id_tokens_claims(app: str, idp: Provider) -> None:
    idp.person("ann-sub", email="ann@corp.com", name="Ann Lee")
    with httpx.Client(timeout=20) as client:
        to_provider = client.get(login_url(app))
        assert to_provider.status_code == 302 and to_provider.headers["location"].startswith(idp.url)
        form = client.post(to_provider.headers["location"], data={"sub": "ann-sub"})
        callback = client.get(form.headers["location"])
        assert callback.status_code == 302 and callback.headers["location"].rstrip("/") in ("", app)
        set_cookie = next(h for h in callback.headers.get_list("set-cookie") if h.startswith(f"{COOKIE}="))
        flags = {part.strip().split("=")[0].lower() for part in set_cookie.split(";")[1:]}
        assert {"httponly", "samesite", "max-age"} <= flags and "secure" not in flags  # (hence: TLS in front)
        assert "max-age=2592000" in set_cookie.lower()  # Streamlit's fixed 30 days
        claims = read_cookie(client.cookies[COOKIE])
    assert (claims["iss"], claims["sub"], claims["email"], claims["name"]) == (idp.url, "ann-sub", "ann@corp.com",
                                                                              "Ann Lee")  # fmt: skip
    assert (claims["is_logged_in"], claims["provider"], claims["email_verified"]) == (True, "default", True)


def test_a_login_for_a_provider_the_app_does_not_know_is_refused(app: str) -> None:
    with httpx.Client(timeout=20) as client:
        unknown = client.get(login_url(app, "other"))  # a provider named nowhere in the secrets
        assert (unknown.status_code, unknown.text) == (400, "Authentication error")
        forged = client.get(login_url(app, "default", secret="not-the-cookie-secret-0123456789abcdef"))
        assert (forged.status_code, forged.headers["location"]) == (302, "/")  # back to the app, signed in as no one
        assert COOKIE not in client.cookies


def test_a_code_from_a_second_issuer_signs_no_one_in(app: str, idp: Provider, other_idp: Provider) -> None:
    other_idp.person("mallory", email="ann@corp.com", name="Not Ann")
    with httpx.Client(timeout=20) as client:
        to_provider = client.get(login_url(app))
        authorize = to_provider.headers["location"]
        # Mallory's provider is asked instead of the app's (same client, redirect URI and state): its code comes
        # back to the app's callback, which redeems it at the provider it is configured for, in vain.
        elsewhere = authorize.replace(idp.url, other_idp.url)
        form = client.post(elsewhere, data={"sub": "mallory"})
        assert form.status_code == 302
        callback = client.get(form.headers["location"])
        assert callback.status_code == 302
        assert COOKIE not in client.cookies


def test_evalcore_app_started_in_a_folder_with_secrets_signs_people_in(idp: Provider, tmp_path: Path) -> None:
    write_secrets(tmp_path, {"default": idp})
    port = free_port()
    evalcore = str(Path(sys.executable).parent / "evalcore")
    command = [evalcore, "app", "--db", str(tmp_path / "s.db"), "--port", str(port), "--address", "127.0.0.1"]
    env = dict(os.environ, EVALCORE_SAMPLE_DATA=str(tmp_path / "none"))
    log = (tmp_path / "app.log").open("wb")
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process, tmp_path / "app.log")
        idp.person("bob-sub", email="bob@corp.com")
        client = sign_in_over_http(f"http://localhost:{port}", "bob-sub")
        assert read_cookie(client.cookies[COOKIE])["email"] == "bob@corp.com"
        client.close()
    finally:
        process.terminate()
        process.wait(10)
        log.close()


def test_the_secrets_name_the_app_and_the_provider(tmp_path: Path, idp: Provider) -> None:
    path = write_secrets(tmp_path, {"default": idp, "keycloak": idp})
    text = path.read_text()
    assert "[auth.keycloak]" in text and text.count("server_metadata_url") == 2
