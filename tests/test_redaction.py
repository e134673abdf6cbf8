"""The secret registry and the boundaries it guards: provider errors, tool results, logs, events.

The model is a real loopback server (`ScriptedModel`); the secrets are random per test, and
each check greps for the raw value where it must not be.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import (
    ProviderError,
    Request,
    ToolResult,
    create_client,
    create_toolkit,
    define_tool,
)
from toolnexus.errors import TransportError
from toolnexus.redaction import MASK, Redactor, is_secret_name
from toolnexus.testing import ScriptedModel, call, http_error, text, tool_calls

ClientFor = Callable[..., Any]


def _secret(prefix: str = "sk-live-") -> str:
    return f"{prefix}{uuid.uuid4().hex}"


# -- the registry ------------------------------------------------------------------------------


def test_a_registered_value_is_masked_longest_first() -> None:
    secrets = Redactor("abcd", "abcdefgh")
    assert secrets.text("x abcdefgh y abcd") == f"x {MASK} y {MASK}"


def test_short_and_empty_values_are_never_secrets() -> None:
    secrets = Redactor("abc", "", None)
    assert not secrets
    assert secrets.text("abc abc") == "abc abc"


def test_an_env_reference_is_looked_up_when_masking(monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = Redactor()
    secrets.add_setting("Accept", "${TN_ROTATING}")
    monkeypatch.setenv("TN_ROTATING", "first-value")
    assert secrets.text("first-value") == MASK
    monkeypatch.setenv("TN_ROTATING", "second-value")
    assert secrets.text("first-value second-value") == f"first-value {MASK}"


def test_an_env_secret_set_unset_and_set_again_after_masking_began_is_followed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Set by `os.environ` (as monkeypatch does), not only at start-up: every masking reads
    # the environment again, whichever way it reads it.
    monkeypatch.delenv("TN_LATE_TOKEN", raising=False)
    secrets = Redactor()
    secrets.add_env("TN_LATE_TOKEN")
    assert secrets.text("late-value-1") == "late-value-1"
    monkeypatch.setenv("TN_LATE_TOKEN", "late-value-1")
    assert secrets.text("a late-value-1 b") == f"a {MASK} b"
    monkeypatch.delenv("TN_LATE_TOKEN")
    assert secrets.text("a late-value-1 b") == "a late-value-1 b"
    os.environ["TN_LATE_TOKEN"] = "late-value-2"
    try:
        assert secrets.text("late-value-1 late-value-2") == f"late-value-1 {MASK}"
    finally:
        del os.environ["TN_LATE_TOKEN"]


def test_an_environment_replaced_by_a_plain_mapping_is_read_the_public_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secrets = Redactor()
    secrets.add_env("TN_SWAPPED")
    monkeypatch.setenv("TN_SWAPPED", "real-environ-value")
    assert secrets.text("real-environ-value") == MASK
    fake: dict[str, str] = {"TN_SWAPPED": "fake-environ-value"}
    monkeypatch.setattr(os, "environ", fake)
    assert secrets.text("real-environ-value fake-environ-value") == f"real-environ-value {MASK}"
    fake["TN_SWAPPED"] = "rotated-fake-value"
    assert secrets.text("fake-environ-value rotated-fake-value") == f"fake-environ-value {MASK}"
    other = Redactor()  # names first seen while the environment is the plain mapping
    other.add_env("TN_SWAPPED")
    assert other.text("rotated-fake-value") == MASK


def test_a_literal_counts_only_under_a_credential_name() -> None:
    secrets = Redactor()
    secrets.add_setting("Accept", "application/json")
    secrets.add_setting("Authorization", "Bearer abc123xyz")
    secrets.add_setting(None, "--verbose")
    assert secrets.text("application/json --verbose") == "application/json --verbose"
    assert secrets.text("got Bearer abc123xyz") == f"got {MASK}"
    assert secrets.text("token abc123xyz") == f"token {MASK}"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("Authorization", True),
        ("X-Api-Key", True),
        ("GITHUB_TOKEN", True),
        ("DB_PASSWORD", True),
        ("Cookie", True),
        ("Accept", False),
        ("PYTHONPATH", False),
    ],
)
def test_credential_names_are_recognised(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_a_joined_redactor_sees_what_its_parts_learn_later() -> None:
    client, toolkit = Redactor("client-key"), Redactor()
    joined = Redactor.joined(client, toolkit)
    toolkit.add("learned-at-connect")
    assert joined.text("client-key learned-at-connect") == f"{MASK} {MASK}"


def test_scrub_masks_the_message_the_body_and_the_cause() -> None:
    secrets = Redactor("quoted-key-1")
    exc = ProviderError("HTTP 401: quoted-key-1", status=401, body="quoted-key-1")
    exc.__cause__ = OSError("low level quoted-key-1")
    assert secrets.scrub(exc) is exc
    assert str(exc) == f"HTTP 401: {MASK}"
    assert exc.body == MASK
    assert exc.__cause__ is not None
    assert str(exc.__cause__) == f"low level {MASK}"


def test_value_masks_nested_data_and_keeps_other_objects() -> None:
    marker = object()
    masked = Redactor("deep-secret").value({"a": ["x deep-secret", ("deep-secret",)], "b": marker})
    assert masked == {"a": [f"x {MASK}", (MASK,)], "b": marker}


def test_what_holds_no_secret_comes_back_as_the_same_object() -> None:
    redactor = Redactor("deep-secret")
    clean = {"a": ["x", ("y",)], "req": Request(id="r1", kind="approval", prompt="ok?")}
    assert redactor.value(clean) is clean
    result = ToolResult("fine", metadata=clean)
    assert redactor.result(result) is result
    # One secret deep inside: only its path is copied, the original stays as it was.
    dirty = {"keep": clean, "req": Request(id="r2", kind="input", prompt="deep-secret?")}
    masked = redactor.value(dirty)
    assert masked is not dirty
    assert masked["keep"] is clean
    assert masked["req"].prompt == f"{MASK}?"
    assert dirty["req"].prompt == "deep-secret?"
    assert redactor.result(ToolResult("deep-secret")).output == MASK
    # Two keys that mask to the same text: the masked dict has one, never the original.
    assert redactor.value({"deep-secret": 1, MASK: 2}) == {MASK: 2}


# -- the provider boundary ---------------------------------------------------------------------


def _ignore(delta: str) -> None:
    """An ``on_text`` that drops the deltas."""


async def test_a_provider_401_quoting_the_key_never_shows_it(
    scripted: ScriptedModel, client_for: ClientFor, style: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = _secret()
    events: list[dict[str, Any]] = []
    decisions: list[str] = []

    def on_error(info: Any) -> str:
        decisions.append(str(info["error"]))
        return "fail"

    body = {"error": {"message": f"Incorrect API key provided: {key}", "type": "auth"}}
    scripted.add(http_error(401, body), http_error(401, body))
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    async with client_for(
        scripted, style, api_key=key, on_metric=events.append, on_error=on_error
    ) as client:
        with pytest.raises(ProviderError) as raised:
            await client.run("hi")
        with pytest.raises(ProviderError) as streamed:
            await client.ask("hi", on_text=_ignore)
        metrics = client.metrics()
    for error in (raised.value, streamed.value):
        assert error.status == 401
        assert "Incorrect API key provided: ***" in str(error)
        assert key not in str(error)
        assert key not in error.body
    assert decisions
    assert all(key not in d for d in decisions)
    runs = [e for e in events if e["event"] == "run"]
    assert len(runs) == 2
    # The run event's error is ``str(e)`` (COMPAT §7): the provider's message, masked.
    assert all("401" in e["error"] and "***" in e["error"] for e in runs), runs
    assert key not in json.dumps(events, default=str)
    assert key not in metrics
    assert key not in caplog.text


async def test_a_transport_failure_naming_the_key_is_masked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = _secret()

    class Leaky:
        def post(self, url: str, headers: Any, payload: Any, timeout: Any) -> Any:
            raise ConnectionError(f"proxy refused credentials {headers['Authorization']}")

    client = create_client(
        base_url="https://api.example.invalid/v1", model="m", api_key=key, http_transport=Leaky()
    )
    async with client:
        with pytest.raises(TransportError) as raised:
            await client.run("hi")
    assert "proxy refused credentials" in str(raised.value)
    assert key not in str(raised.value)


# -- the tool boundary -------------------------------------------------------------------------


@define_tool
def show_env(name: str) -> str:
    """Print one environment variable (a tool that leaks by design)."""
    return os.environ.get(name, "")


@define_tool
def explode(why: str) -> str:
    """Raise with ``why`` in the message."""
    raise RuntimeError(f"cannot continue: {why}")


async def test_a_provider_key_from_the_environment_is_masked_in_tool_results(
    scripted: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = _secret()
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    scripted.add(tool_calls(call("show_env", {"name": "OPENAI_API_KEY"})), text("ok"))
    async with create_client(base_url=scripted.openai_base_url, model="m") as client:
        result = await client.run("leak it", [show_env])
    assert result.tool_calls[0].output == MASK
    assert key not in json.dumps(scripted.requests[1].body)
    assert key not in json.dumps(result.messages)


async def test_a_credential_header_of_the_client_is_masked_in_tool_results(
    scripted: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = _secret("gw-")
    monkeypatch.setenv("TN_GATEWAY_HEADER", value)
    scripted.add(tool_calls(call("show_env", {"name": "TN_GATEWAY_HEADER"})), text("ok"))
    client = create_client(
        base_url=scripted.openai_base_url,
        model="m",
        api_key="sk-x-unrelated",
        headers={"X-Gateway-Token": value},
    )
    async with client:
        result = await client.run("leak it", [show_env])
    assert result.tool_calls[0].output == MASK
    assert scripted.requests[0].headers.get("x-gateway-token") == value  # still sent


@define_tool
def say(words: str) -> str:
    """Say ``words`` back."""
    return words


async def test_runs_of_many_clients_over_one_toolkit_each_mask_their_own_key(
    scripted: ScriptedModel,
) -> None:
    # More clients than the toolkit keeps joined redactors for, taking turns: each run masks
    # its own client's key, and only that one.
    keys = [_secret() for _ in range(10)]
    toolkit = await create_toolkit(extra_tools=[say], builtins=False)
    clients = [
        create_client(base_url=scripted.openai_base_url, model="m", api_key=key) for key in keys
    ]
    try:
        for _ in range(2):
            for i, client in enumerate(clients):
                other = keys[(i + 1) % len(keys)]
                scripted.add(tool_calls(call("say", {"words": f"{keys[i]} {other}"})), text("ok"))
                result = await client.run("say the keys", toolkit)
                assert result.tool_calls[0].output == f"{MASK} {other}"
    finally:
        for client in clients:
            await client.aclose()


async def test_a_raising_tool_logs_a_masked_traceback_at_debug_only(
    scripted: ScriptedModel, client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    key = _secret()
    scripted.add(tool_calls(call("explode", {"why": f"key {key}"})), text("ok"))
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    async with client_for(scripted, api_key=key) as client:
        result = await client.run("go", [explode])
    output = result.tool_calls[0].output
    assert output == "RuntimeError: cannot continue: key ***"
    assert "Traceback" not in json.dumps(scripted.requests[1].body)
    traces = [r for r in caplog.records if "Traceback" in r.getMessage()]
    assert len(traces) == 1
    assert traces[0].levelno == logging.DEBUG
    assert "RuntimeError: cannot continue: key ***" in traces[0].getMessage()
    assert key not in caplog.text


async def test_no_traceback_is_formatted_above_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolnexus")
    async with await create_toolkit(extra_tools=[explode], builtins=False) as tk:
        result = await tk.execute("explode", {"why": "x"})
    assert result.is_error
    assert "Traceback" not in caplog.text


async def test_the_toolkit_masks_an_http_tool_header_in_another_tools_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolnexus import http_tool

    value = _secret("svc-")
    monkeypatch.setenv("TN_SERVICE_TOKEN", value)
    service = http_tool(
        name="svc",
        description="a service",
        method="GET",
        url="http://127.0.0.1:9/x",
        headers={"Authorization": "Bearer ${TN_SERVICE_TOKEN}"},
        input_schema={"type": "object", "properties": {}},
    )
    async with await create_toolkit(extra_tools=[service, show_env], builtins=False) as tk:
        result = await tk.execute("show_env", {"name": "TN_SERVICE_TOKEN"})
    assert result.output == MASK
