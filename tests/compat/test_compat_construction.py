"""COMPAT §2: ``Client(**options)`` ≡ ``create_client(**options)``, every option, the units and
defaults, and a synchronous ``http_transport`` called off the event loop.

Real loopback model servers (`ScriptedModel`) for both wire styles; only the replies are
scripted.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import toolnexus as tn
from toolnexus.client import ProviderError, UrllibTransport
from toolnexus.testing import (
    RecordedRequest,
    Reply,
    ScriptedModel,
    Step,
    call,
    delayed,
    http_error,
    text,
    tool_calls,
)

KEY = "sk-compat"


def base_url(model: ScriptedModel, style: str) -> str:
    return model.openai_base_url if style == "openai" else model.anthropic_base_url


def stalls(arrived: asyncio.Event) -> Step:
    """A step that notes the request's arrival and answers only after 30 s."""

    def step(request: RecordedRequest) -> Reply:
        del request
        arrived.set()
        return delayed(text("too late"), 30)

    return step


@tn.define_tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


# -- Client(**options) ------------------------------------------------------------------------


async def test_client_options_build_the_same_client_as_create_client(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(text("one"), text("two"))
    options: dict[str, Any] = {
        "base_url": base_url(scripted, style),
        "style": style,
        "model": "m-compat",
        "api_key": KEY,
        "system_prompt": "be brief",
        "max_turns": 3,
    }
    async with tn.Client(**options) as direct, tn.create_client(**options) as built:
        assert type(direct) is type(built) is tn.Client
        first = await direct.run("hi")
        second = await built.run("hi")
    assert (first.text, second.text) == ("one", "two")
    a, b = scripted.requests
    assert a.body == b.body
    assert a.path == b.path
    assert a.headers.get("authorization") == b.headers.get("authorization")


def test_the_options_read_back_as_read_only_attributes() -> None:
    def hook(event: dict[str, Any]) -> None:
        del event

    client = tn.Client(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        api_key=KEY,
        headers={"X-Team": "a"},
        system_prompt="sys",
        max_turns=4,
        retries=1,
        retry_base_ms=10,
        retryable_statuses=[418],
        timeout_ms=5000,
        request_params={"temperature": 0},
        on_unsupported_part="text",
        max_part_bytes=1024,
        store="memory",
        on_metric=hook,
    )
    assert (client.base_url, client.style, client.model, client.api_key) == (
        "http://127.0.0.1:9/v1",
        "openai",
        "m",
        KEY,
    )
    assert client.headers == {"X-Team": "a"}
    assert (client.system_prompt, client.max_turns, client.retries, client.retry_base_ms) == (
        "sys",
        4,
        1,
        10,
    )
    assert client.retryable_statuses == frozenset({418})
    assert client.timeout_ms == 5000
    assert client.request_params == {"temperature": 0}
    assert (client.on_unsupported_part, client.max_part_bytes) == ("text", 1024)
    assert client.store == "memory"
    assert client.on_metric is hook
    assert client.wait_for is None
    assert client.on_error is None
    assert client.hooks is None
    assert isinstance(client.conversation_store, tn.ConversationStore)
    with pytest.raises(AttributeError):
        client.max_turns = 9  # type: ignore[misc]  # pyright: ignore[reportAttributeAccessIssue]
    assert KEY not in repr(client)


def test_the_defaults_compat_lists() -> None:
    client = tn.Client(base_url="http://127.0.0.1:9", model="m", api_key=KEY)
    assert (client.style, client.max_turns, client.retries, client.retry_base_ms) == (
        "openai",
        10,
        2,
        500,
    )
    assert client.retryable_statuses is None
    assert client.timeout_ms is None
    assert (client.on_unsupported_part, client.max_part_bytes) == (None, None)


@pytest.mark.parametrize("build", [tn.create_client, tn.Client])
def test_an_unknown_or_missing_option_is_named_in_a_type_error(build: Any) -> None:
    with pytest.raises(TypeError, match=r"unknown client option\(s\): bogus, timeout$"):
        build(base_url="http://127.0.0.1:9/v1", model="m", api_key=KEY, bogus=1, timeout=3)
    with pytest.raises(TypeError, match="needs `model`"):
        build(base_url="http://127.0.0.1:9/v1", api_key=KEY)


def test_giving_an_engine_config_and_options_is_a_usage_error() -> None:
    client = tn.create_client(base_url="http://127.0.0.1:9", model="m", api_key=KEY)
    with pytest.raises(tn.UsageError, match="not both"):
        tn.Client(client.engine_config, store=client.conversation_store, model="m")


def test_a_positional_that_is_not_an_engine_config_is_a_type_error() -> None:
    with pytest.raises(TypeError) as caught:
        tn.Client("http://127.0.0.1:9")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    assert isinstance(caught.value, tn.UsageError)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"retryable_statuses": "429"}, "retryable_statuses"),
        ({"retryable_statuses": [429, "503"]}, "not an HTTP status"),
        ({"retryable_statuses": [True]}, "not an HTTP status"),
        ({"retryable_statuses": [700]}, "not an HTTP status"),
        ({"max_part_bytes": 0}, "max_part_bytes"),
        ({"max_part_bytes": True}, "max_part_bytes"),
        ({"max_part_bytes": "1mb"}, "max_part_bytes"),
        ({"on_unsupported_part": "drop"}, "on_unsupported_part"),
        ({"in_process": "not callable"}, "callable `generate`"),
        ({"nonsense_option": 1}, "nonsense_option"),
    ],
)
def test_bad_options_are_refused_at_construction(options: dict[str, Any], match: str) -> None:
    with pytest.raises((tn.UsageError, TypeError), match=match):
        tn.Client(base_url="http://127.0.0.1:9", model="m", api_key=KEY, **options)


# -- retryable_statuses -----------------------------------------------------------------------


async def test_retryable_statuses_widen_the_default_set(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(http_error(418, "teapot"), text("brewed"))
    infos: list[dict[str, Any]] = []

    def on_error(info: Any) -> str:
        infos.append(dict(info))
        return "retry" if info["retryable"] else "fail"

    async with tn.Client(
        base_url=base_url(scripted, style),
        style=style,
        model="m",
        api_key=KEY,
        retry_base_ms=1,
        retryable_statuses=[418],
        on_error=on_error,
    ) as client:
        result = await client.run("tea?")
    assert result.text == "brewed"
    assert [(i["status"], i["attempt"], i["retryable"]) for i in infos] == [(418, 0, True)]


async def test_without_the_option_that_status_is_final(scripted: ScriptedModel) -> None:
    scripted.add(http_error(418, "teapot"), text("never"))
    async with tn.Client(
        base_url=scripted.openai_base_url, model="m", api_key=KEY, retry_base_ms=1
    ) as client:
        with pytest.raises(tn.ProviderError) as caught:
            await client.run("tea?")
    assert caught.value.status == 418
    assert len(scripted.requests) == 1


async def test_529_is_retryable_by_default(scripted: ScriptedModel, style: str) -> None:
    scripted.add(http_error(529, "overloaded"), text("ok"))
    async with tn.Client(
        base_url=base_url(scripted, style), style=style, model="m", api_key=KEY, retry_base_ms=1
    ) as client:
        result = await client.run("hi")
    assert result.text == "ok"
    assert len(scripted.requests) == 2


# -- a synchronous http_transport -------------------------------------------------------------


class Recording:
    """The existing package's transport shape: a blocking ``post``, in front of a real one."""

    def __init__(self, inner: UrllibTransport, *, fail_first: ProviderError | None = None) -> None:
        self.inner = inner
        self.fail_first = fail_first
        self.calls: list[tuple[str, dict[str, str], dict[str, Any], Any]] = []
        self.threads: set[int] = set()
        self.lock = threading.Lock()

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        with self.lock:
            self.calls.append((url, dict(headers), payload, timeout))
            self.threads.add(threading.get_ident())
            failure, self.fail_first = self.fail_first, None
        if failure is not None:
            raise failure
        return self.inner.post(url, headers, payload, timeout)


async def test_a_sync_transport_is_called_in_a_worker_thread_with_the_final_payload(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    transport = Recording(UrllibTransport())

    def transform(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "metadata": {"via": "transform"}}

    async with tn.Client(
        base_url=base_url(scripted, style),
        style=style,
        model="m",
        api_key=KEY,
        headers={"X-Team": "compat"},
        request_params={"temperature": 0.5},
        body_transform=transform,
        http_transport=transport,
    ) as client:
        result = await client.run("1+2", [add])
    assert result.text == "3"
    assert threading.get_ident() not in transport.threads
    assert len(transport.calls) == 2
    for (url, headers, payload, timeout), seen in zip(
        transport.calls, scripted.requests, strict=True
    ):
        assert url.endswith("/chat/completions" if style == "openai" else "/v1/messages")
        assert headers["Content-Type"] == "application/json"
        assert headers["X-Team"] == "compat"
        assert payload["temperature"] == 0.5
        assert payload["metadata"] == {"via": "transform"}
        assert payload == seen.body
        assert timeout == 120.0
        assert isinstance(timeout, float)


async def test_the_timeout_is_what_is_left_of_timeout_ms_in_seconds(
    scripted: ScriptedModel,
) -> None:
    scripted.add(text("ok"))
    transport = Recording(UrllibTransport())
    async with tn.Client(
        base_url=scripted.openai_base_url,
        model="m",
        api_key=KEY,
        timeout_ms=4000,
        http_transport=transport,
    ) as client:
        await client.run("hi")
    ((_, _, _, timeout),) = transport.calls
    assert isinstance(timeout, float)
    assert 0 < timeout <= 4.0


async def test_a_provider_error_in_the_package_form_is_retried_after_its_header(
    scripted: ScriptedModel,
) -> None:
    scripted.add(text("after the wait"))
    failure = ProviderError(429, '{"error": "slow down", "user_id": "u-1"}', "0")
    transport = Recording(UrllibTransport(), fail_first=failure)
    async with tn.Client(
        base_url=scripted.openai_base_url, model="m", api_key=KEY, http_transport=transport
    ) as client:
        result = await client.run("hi")
    assert result.text == "after the wait"
    assert len(transport.calls) == 2
    assert len(scripted.requests) == 1


def test_provider_error_takes_the_package_positional_form() -> None:
    error = ProviderError(503, "x" * 300, "7")
    assert (error.status, error.retry_after, error.retry_after_s) == (503, "7", 7.0)
    assert str(error) == "LLM 503: " + "x" * 200 + "…"
    assert error.text == error.body == "x" * 300
    assert str(ProviderError(500, "", None)) == "LLM 500"
    hidden = ProviderError(401, "invalid key sk-live-123", None)
    assert (hidden.body, str(hidden)) == ("", "LLM 401")
    masked = ProviderError(400, '{"org_id": "org-7"}', "soon")
    assert masked.body == '{"org_id": "«redacted»"}'
    assert (masked.retry_after, masked.retry_after_s) == ("soon", None)
    ours = ProviderError("HTTP 503: busy", status=503, body="busy", retry_after=2.0)
    assert (ours.status, ours.retry_after, ours.retry_after_s, ours.text) == (503, 2.0, 2.0, "busy")


async def test_the_urllib_transport_speaks_both_wires(scripted: ScriptedModel, style: str) -> None:
    scripted.add(tool_calls(call("add", {"a": 2, "b": 2})), text("4"))
    async with tn.Client(
        base_url=base_url(scripted, style),
        style=style,
        model="m",
        api_key=KEY,
        http_transport=tn.UrllibTransport(),
    ) as client:
        result = await client.run("2+2", [add])
    assert (result.text, result.tool_calls[0].output) == ("4", "4.0")
    assert scripted.requests[0].headers["content-type"] == "application/json"


async def test_the_urllib_transport_raises_http_errors_in_the_package_form(
    scripted: ScriptedModel,
) -> None:
    scripted.add(http_error(503, "busy", headers={"Retry-After": "3"}))
    transport = tn.UrllibTransport()
    url = scripted.openai_base_url + "/chat/completions"
    with pytest.raises(ProviderError) as caught:
        await asyncio.to_thread(transport.post, url, {}, {"model": "m", "messages": []}, 5.0)
    assert (caught.value.status, caught.value.retry_after, caught.value.body) == (503, "3", "busy")


async def test_the_urllib_transport_streams_through_open(scripted: ScriptedModel) -> None:
    scripted.add(text("streamed words"))
    async with tn.Client(
        base_url=scripted.openai_base_url,
        model="m",
        api_key=KEY,
        http_transport=tn.UrllibTransport(),
    ) as client:
        deltas = [e["delta"] async for e in client.stream("hi") if e["type"] == "text"]
    assert "".join(deltas) == "streamed words"
    assert scripted.requests[0].body["stream"] is True


async def test_a_cancel_during_a_blocked_sync_call_raises_run_cancelled_at_once(
    scripted: ScriptedModel,
) -> None:
    arrived, cancel = asyncio.Event(), asyncio.Event()
    scripted.add(stalls(arrived))
    transport = Recording(UrllibTransport())
    async with tn.Client(
        base_url=scripted.openai_base_url, model="m", api_key=KEY, http_transport=transport
    ) as client:
        run = asyncio.ensure_future(client.run("hi", cancel=cancel))
        await asyncio.wait_for(arrived.wait(), 10)
        cancel.set()
        with pytest.raises(tn.RunCancelled, match=r"^run cancelled$"):
            await asyncio.wait_for(run, 5)


async def test_the_run_timeout_uses_the_package_wording(scripted: ScriptedModel) -> None:
    scripted.add(delayed(text("too late"), 30))
    async with tn.Client(
        base_url=scripted.openai_base_url, model="m", api_key=KEY, timeout_ms=200
    ) as client:
        with pytest.raises(tn.RunTimeout) as caught:
            await client.run("hi")
    assert str(caught.value) == "run timeout after 200ms (client timeout_ms budget)"
    assert isinstance(caught.value, TimeoutError)


# -- in-process models ------------------------------------------------------------------------


def _generate(request: dict[str, Any]) -> dict[str, Any]:
    tools_seen = [m for m in request["messages"] if m["role"] == "tool"]
    if not tools_seen:
        return {"toolCalls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]}
    return {"content": f"sum {tools_seen[-1]['content']}"}


async def test_in_process_runs_through_client_options_and_the_factory() -> None:
    events: list[dict[str, Any]] = []
    async with tn.Client(model="local", in_process=_generate, on_metric=events.append) as direct:
        assert (direct.retries, direct.base_url) == (0, None)
        result = await direct.run("1+1", [add])
    assert result.text == "sum 2.0"
    async with tn.create_in_process_client(
        model="local",
        generate=_generate,
        retryable_statuses=[418],
        on_unsupported_part="error",
        max_part_bytes=10,
        on_error=lambda info: "fail",
        retries=1,
    ) as built:
        assert (built.retries, built.max_part_bytes, built.on_unsupported_part) == (1, 10, "error")
        assert (await built.run("1+1", [add])).text == "sum 2.0"
    assert [e["event"] for e in events] == ["llm", "tool", "llm", "run"]


@pytest.mark.parametrize("name", ["base_url", "api_key", "style", "http_transport"])
def test_in_process_refuses_the_wire_options_with_the_package_text(name: str) -> None:
    with pytest.raises(TypeError) as caught:
        tn.create_in_process_client(model="m", generate=_generate, **{name: "x"})
    assert isinstance(caught.value, tn.UsageError)
    assert str(caught.value) == (
        f"toolnexus: create_in_process_client does not take `{name}` — an in-process model "
        "has no wire to configure. Use create_client for a network-backed model."
    )


def test_in_process_needs_a_callable_generate() -> None:
    with pytest.raises(TypeError, match="requires a callable `generate`") as caught:
        tn.create_in_process_client(model="m", generate="nope")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    assert isinstance(caught.value, tn.UsageError)


async def test_in_process_streaming_is_not_implemented_with_the_package_phrase() -> None:
    client = tn.create_in_process_client(model="m", generate=_generate)
    with pytest.raises(NotImplementedError) as caught:
        async for _ in client.stream("hi"):
            pass
    assert isinstance(caught.value, tn.UsageError)
    assert str(caught.value).startswith(
        "toolnexus: create_in_process_client does not support streaming — "
    )
    with pytest.raises(NotImplementedError):
        await client.ask("hi", on_text=print)


async def test_conversation_takes_a_cancel_event(scripted: ScriptedModel) -> None:
    arrived, cancel = asyncio.Event(), asyncio.Event()
    scripted.add(text("first"), stalls(arrived))
    async with tn.Client(base_url=scripted.openai_base_url, model="m", api_key=KEY) as client:
        conv = client.conversation(None, cancel)
        assert (await conv.send("one")).text == "first"
        sending = asyncio.ensure_future(conv.send("two"))
        await asyncio.wait_for(arrived.wait(), 10)
        cancel.set()
        with pytest.raises(tn.RunCancelled):
            await asyncio.wait_for(sending, 5)
    assert [m["role"] for m in conv.messages] == ["user", "assistant"]


async def test_generate_gets_the_package_request_shape_and_may_report_camel_case_usage() -> None:
    seen: list[dict[str, Any]] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {
            "content": "done",
            "usage": {"promptTokens": 11, "completionTokens": 4, "totalTokens": 15},
        }

    async with tn.create_in_process_client(model="local", generate=generate) as c:
        bare = await c.run("no tools")
        await c.run("with tools", [add])
    first, second = seen
    assert first["tools"] == []
    assert first["model"] == "local"
    assert first["messages"] == [{"role": "user", "content": "no tools"}]
    assert first["body"]["messages"] == first["messages"]
    assert "tools" not in first["body"]
    assert [t["function"]["name"] for t in second["tools"]] == ["add"]
    assert bare.usage == {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}


@pytest.mark.parametrize("usage", ["lots", [1, 2], {"promptTokens": "eleven"}, None])
async def test_a_malformed_generate_usage_counts_zero(usage: Any) -> None:
    def generate(request: dict[str, Any]) -> dict[str, Any]:
        return {"content": "ok", "usage": usage}

    async with tn.create_in_process_client(model="local", generate=generate) as c:
        result = await c.run("hi")
    assert result.text == "ok"
    assert result.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
