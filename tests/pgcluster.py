"""A throwaway PostgreSQL server for the tests: Debian's postgresql binaries, a cluster in a temporary folder,
reached on a unix socket there (no TCP port), fsync off. ``initdb`` refuses root, so as root the cluster runs as
the ``postgres`` user (``runuser``); as anyone else, as that user.

Each test gets a database of its own, cloned from a template the schema was applied to once (~30 ms).
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

TEMPLATE = "evalcore_template"


def bin_dir() -> Path:
    """The folder of PostgreSQL's server programs (the newest installed)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    if not found:
        raise RuntimeError(
            "PostgreSQL's server is not installed: apt-get install -y postgresql (make test and .ci/run do this)"
        )
    return Path(found[-1]).parent


class Cluster:
    """A running throwaway cluster: ``url(db)`` reaches a database of it."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        """``settings``: the server's, beyond the throwaway cluster's own (``{"shared_buffers": "2GB"}``)."""
        self.folder = Path(tempfile.mkdtemp(prefix="evalcore-pg-"))
        self.bin = bin_dir()
        self._as_root = os.geteuid() == 0
        if self._as_root:
            owner = pwd.getpwnam("postgres")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
        self._names = itertools.count(1)
        self._run(
            "initdb", "-D", str(self.folder / "data"), "-A", "trust", "-U", "evalcore", "--no-sync", "-E", "UTF8",
            "--locale=C.UTF-8",
        )  # fmt: skip
        self._options = (
            f"-c listen_addresses='' -c unix_socket_directories={self.folder} -c fsync=off -c max_connections=300"
        ) + "".join(f" -c {name}={value}" for name, value in (settings or {}).items())
        self._mounts: list[Path] = []
        self._template_made = False
        self.start()

    def start(self) -> None:
        data, log = str(self.folder / "data"), str(self.folder / "log")
        self._run("pg_ctl", "-D", data, "-w", "-l", log, "-o", self._options, "start")

    def restart(self) -> None:
        """Stop the server at once (as a crash or an upgrade would) and start it again."""
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        self.start()

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self._as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def url(self, database: str = "postgres", *, user: str = "evalcore") -> str:
        return f"postgresql://{user}@/{database}?host={self.folder}"

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def new_database(self, *, migrated: bool = True) -> str:
        """The URL of a new, empty database (with evalcore's schema when ``migrated``)."""
        return self.url(self.new_database_name(migrated=migrated))

    def new_database_name(self, *, migrated: bool = True, tablespace: str | None = None) -> str:
        """A new, empty database's name (with evalcore's schema when ``migrated``)."""
        name = f"t{os.getpid()}_{next(self._names)}"
        if migrated and not self._template_made:
            self.admin(f"CREATE DATABASE {TEMPLATE}")
            from evalcore.store.store import Store

            with Store(self.url(TEMPLATE), check=False) as store:
                store.upgrade()
            self._template_made = True
        template = f" TEMPLATE {TEMPLATE}" if migrated else ""
        self.admin(f"CREATE DATABASE {name}{template}" + (f" TABLESPACE {tablespace}" if tablespace else ""))
        return name

    def new_database_on_small_disk(self, *, megabytes: int) -> str:
        """The URL of a new database on a disk of its own that holds ``megabytes`` in all (a tmpfs): to fill."""
        folder = self.folder / f"disk{next(self._names)}"
        folder.mkdir()
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder)], capture_output=True, text=True
        )
        if mounted.returncode != 0:
            raise RuntimeError(f"a small disk cannot be made here (mount: {mounted.stderr.strip()})")
        self._mounts.append(folder)
        if self._as_root:
            owner = pwd.getpwnam("postgres")
            os.chown(folder, owner.pw_uid, owner.pw_gid)
        space = f"small_{folder.name}"
        self.admin(f"CREATE TABLESPACE {space} LOCATION '{folder}'")
        return self.url(self.new_database_name(tablespace=space))

    def require_password(self, user: str, password: str) -> None:
        """Make ``user`` a role that signs in with ``password`` (the others keep signing in without one)."""
        self.admin(f"CREATE ROLE {user} LOGIN PASSWORD '{password}'")
        hba = self.folder / "data" / "pg_hba.conf"
        hba.write_text(f"local all {user} scram-sha-256\n" + hba.read_text())
        self.admin("SELECT pg_reload_conf()")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "stop")
        finally:
            for folder in self._mounts:
                subprocess.run(["umount", "-l", str(folder)], capture_output=True)
            shutil.rmtree(self.folder, ignore_errors=True)
