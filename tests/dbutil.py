"""Tests' own look into a store's database, beside the store (which hands out no connection): plain SQL through a
connection of their own, and — for white-box tests of the SQLite engine — the connection the engine gives this
thread."""

from __future__ import annotations

import sqlite3
from typing import Any

from evalcore.store import Store


def query(store: Store, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (``?`` placeholders) read through a connection of the test's own."""
    if store.kind == "sqlite":
        conn = sqlite3.connect(store.url.removeprefix("sqlite:///"))
        try:
            return [tuple(row) for row in conn.execute(sql, list(args)).fetchall()]
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(store.url, autocommit=True) as pg:
        cursor = pg.execute(sql.replace("%", "%%").replace("?", "%s"), list(args) or None)
        return [tuple(row) for row in cursor.fetchall()] if cursor.description else []


def execute(store: Store, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> int:
    """Run ``sql`` (committed) through a connection of the test's own; how many rows it changed."""
    if store.kind == "sqlite":
        conn = sqlite3.connect(store.url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            return conn.execute(sql, list(args)).rowcount
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(store.url, autocommit=True) as pg:
        return pg.execute(sql.replace("%", "%%").replace("?", "%s"), list(args) or None).rowcount


def own_connection(store: Store) -> sqlite3.Connection:
    """The SQLite connection the store's engine gives this thread (white-box tests of the SQLite engine)."""
    from evalcore.store.sqlite import SqliteEngine

    engine = store._engine
    assert isinstance(engine, SqliteEngine), "a test of the SQLite engine"
    return engine.connection()


#: The issuer of the people the tests make (``as_user``; ``apptest_util.person`` signs the same people in).
ISSUER = "https://idp.example.test"


def as_user(store: Store, name: str, role: str = "owner") -> Store:
    """The store used by the user ``name`` (made on first use, with ``role``): what a test's change is made by."""
    return store.as_user(store.users.ensure(iss=ISSUER, sub=name, name=name, role=role, email=f"{name}@example.com"))
