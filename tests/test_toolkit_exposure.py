"""The one WARNING a toolkit logs when it hands unconfined built-ins to a model elsewhere.

The remote model is a host transport (the existing package's blocking ``post`` shape) that
answers every call with the same text, so the client really talks to a non-loopback URL without
any network; the loopback case uses the scripted model on 127.0.0.1.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from toolnexus import create_client, create_toolkit
from toolnexus.testing import ScriptedModel, text

REMOTE = "https://models.example.com/v1"


class FixedReply:
    """A blocking transport that answers every chat completion with ``hello``."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def post(self, url: str, headers: Any, payload: Any, timeout: Any) -> dict[str, Any]:
        self.urls.append(url)
        return {
            "choices": [{"message": {"role": "assistant", "content": "hello"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "not loopback" in r.getMessage()
    ]


async def test_unconfined_builtins_for_a_remote_model_warn_once_per_toolkit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    transport = FixedReply()
    client = create_client(base_url=REMOTE, model="m", api_key="k-1", http_transport=transport)
    async with client, await create_toolkit() as first, await create_toolkit() as second:
        await client.run("one", first)
        await client.run("two", first)
        assert len(_warnings(caplog)) == 1
        await client.run("three", second)
    assert transport.urls[0].startswith(REMOTE)
    messages = _warnings(caplog)
    assert len(messages) == 2
    assert "models.example.com" in messages[0]
    assert "unconfined bash" in messages[0]
    assert "webfetch with private-network access" in messages[0]


@pytest.mark.parametrize(
    ("builtins", "named"),
    [
        ({"bash": {"allow": ["git"]}}, "webfetch"),
        ({"private_network": False}, "unconfined bash"),
    ],
)
async def test_the_warning_names_only_what_is_left_unconfined(
    caplog: pytest.LogCaptureFixture, builtins: dict[str, Any], named: str
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    client = create_client(base_url=REMOTE, model="m", api_key="k-1", http_transport=FixedReply())
    async with client, await create_toolkit(builtins=builtins) as tk:
        await client.run("hi", tk)
    (message,) = _warnings(caplog)
    assert named in message
    assert ("unconfined bash" in message) is (named == "unconfined bash")
    assert ("private-network" in message) is (named == "webfetch")


@pytest.mark.parametrize(
    "builtins",
    [
        {"bash": {"allow": ["git"]}, "private_network": False},
        {"bash": False, "tools": {"webfetch": False}},
        False,
    ],
)
async def test_a_confined_toolkit_does_not_warn(
    caplog: pytest.LogCaptureFixture, builtins: Any
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    client = create_client(base_url=REMOTE, model="m", api_key="k-1", http_transport=FixedReply())
    async with client, await create_toolkit(builtins=builtins) as tk:
        result = await client.run("hi", tk)
    assert result.text == "hello"
    assert _warnings(caplog) == []


async def test_a_loopback_model_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    async with ScriptedModel() as model:
        model.add(text("hi"))
        client = create_client(base_url=model.openai_base_url, model="m", api_key="k-1")
        async with client, await create_toolkit() as tk:
            result = await client.run("hi", tk)
    assert result.text == "hi"
    assert _warnings(caplog) == []
