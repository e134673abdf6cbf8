"""Postgres helpers for the store tests (kept out of conftest so imports never collide)."""

from __future__ import annotations

from typing import Any


def with_schema(url: str, schema: str) -> str:
    """``url`` with its search_path set to ``schema`` (libpq's ``options`` parameter)."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


def pg_connect(url: str) -> Any:
    """A plain autocommit psycopg connection (for setup and for poking at rows)."""
    import psycopg

    return psycopg.connect(url, autocommit=True)
