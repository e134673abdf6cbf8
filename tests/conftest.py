"""Shared fixtures: a scripted model on loopback and clients pointed at it; a private Postgres
schema per test (``pg_url``).

The Postgres tests read ``TOOLNEXUS_PG_URL`` (``bash scripts/pg.sh start`` prints one). Without
it they skip, except under CI (``CI`` set), where a missing URL or a missing psycopg fails the
test: CI must never pass by silently skipping Postgres.

``scripted`` is a started `ScriptedModel` with an empty script; a test adds the replies it
needs (``scripted.add(text("hi"))``) and reads ``scripted.requests`` afterwards. ``client_for``
builds a client for one wire style against such a model::

    async def test_something(scripted, client_for, style):
        scripted.add(text("hi"))
        async with client_for(scripted, style) as client:
            result = await client.run("hello")
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from pg_support import pg_connect, with_schema
from toolnexus import Client, create_client
from toolnexus.testing import ScriptedModel

# Every child process a test starts prints its threads' stacks when it is aborted (a process
# that outlives SIGTERM, in `proc_support.stop`).
os.environ.setdefault("PYTHONFAULTHANDLER", "1")

STYLES = ("openai", "anthropic")
MODEL = "m-1"
API_KEY = "sk-test"

ClientFor = Callable[..., Client]


def base_url_for(model: ScriptedModel, style: str) -> str:
    """The base URL a client of ``style`` takes for ``model``."""
    return model.openai_base_url if style == "openai" else model.anthropic_base_url


def make_client(server: ScriptedModel, style: str = "openai", **opts: Any) -> Client:
    """A client of ``style`` against ``server``; ``opts`` go to `create_client` as given.

    The model name defaults to ``m-1`` and the key to ``sk-test``, so no test depends on the
    environment unless it says so.
    """
    opts.setdefault("model", MODEL)
    opts.setdefault("api_key", API_KEY)
    return create_client(base_url=base_url_for(server, style), style=style, **opts)


@pytest.fixture
async def scripted() -> AsyncIterator[ScriptedModel]:
    """A started scripted model with an empty script."""
    async with ScriptedModel() as model:
        yield model


@pytest.fixture
def client_for() -> ClientFor:
    """``client_for(server, style="openai", **opts)``: see `make_client`."""
    return make_client


@pytest.fixture(params=STYLES)
def style(request: pytest.FixtureRequest) -> str:
    """Each wire style in turn, for behaviour that depends on the dialect."""
    return request.param


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the Postgres tests (see scripts/pg.sh)")
    pytest.skip(reason)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose tables live in a fresh schema, dropped after the test."""
    base = os.environ.get("TOOLNEXUS_PG_URL")
    if not base:
        _unavailable("TOOLNEXUS_PG_URL is not set")
        raise AssertionError("unreachable")
    try:
        import psycopg  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        _unavailable("psycopg is not installed (pip install -e '.[postgres]')")
    schema = f"t_{uuid.uuid4().hex}"
    with pg_connect(base) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(base, schema)
    finally:
        with pg_connect(base) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
