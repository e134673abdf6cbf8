"""Shared fixtures: a scripted model on loopback and clients pointed at it.

``scripted`` is a started `ScriptedModel` with an empty script; a test adds the replies it
needs (``scripted.add(text("hi"))``) and reads ``scripted.requests`` afterwards. ``client_for``
builds a client for one wire style against such a model::

    async def test_something(scripted, client_for, style):
        scripted.add(text("hi"))
        async with client_for(scripted, style) as client:
            result = await client.run("hello")
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from toolnexus import Client, create_client
from toolnexus.testing import ScriptedModel

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
