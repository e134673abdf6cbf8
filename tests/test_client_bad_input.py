"""Resilience and bad input: every failure has a clear error and loses nothing (DESIGN §7)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from toolnexus import (
    BadResponse,
    CallbackError,
    Client,
    ProviderError,
    RunCancelled,
    RunTimeout,
    SqliteStore,
    StoreError,
    Tool,
    ToolContext,
    TransportError,
    UsageError,
    define_tool,
)
from toolnexus.testing import (
    RecordedRequest,
    Reply,
    ScriptedModel,
    call,
    cut_stream,
    delayed,
    empty_choices,
    empty_reply,
    garbage,
    http_error,
    reset,
    reset_mid_stream,
    stream_error,
    text,
    tool_calls,
)

ClientFor = Callable[..., Client]


@define_tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def counting_tool(runs: list[dict[str, Any]]) -> Tool:
    """``add`` that records every execution in ``runs``."""

    def execute(args: dict[str, Any], ctx: ToolContext | None) -> str:
        runs.append(args)
        return str(args["a"] + args["b"])

    return Tool(
        name="add",
        description="Add two numbers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        source="native",
        execute=execute,
    )


async def drain(client: Client, prompt: str, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    return [e async for e in client.stream(prompt, *args, **kwargs)]


async def collect(events: list[dict[str, Any]], client: Client, prompt: str) -> None:
    """Stream ``prompt``, appending each event to ``events`` as it arrives."""
    async for event in client.stream(prompt):
        events.append(event)


async def run_or_stream(client: Client, streaming: bool, prompt: str, **kwargs: Any) -> Any:
    """The RunResult of ``prompt``, through ``stream`` or through ``run``."""
    if streaming:
        return (await drain(client, prompt, **kwargs))[-1]["result"]
    return await client.run(prompt, **kwargs)


# -- what the model asks for ------------------------------------------------------------------


async def test_malformed_tool_arguments_become_an_error_result_naming_the_tool(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    runs: list[dict[str, Any]] = []
    scripted.add(tool_calls(call("add", '{"a": 1, "b":', id="m1")), text("sorry"))
    async with client_for(scripted, style) as client:
        result = await client.run("add", [counting_tool(runs)])
    record = result.tool_calls[0]
    assert record.is_error is True
    assert "add" in record.output
    assert "malformed" in record.output
    assert (result.status, result.text, runs) == ("done", "sorry", [])
    assert len(scripted.requests) == 2


async def test_a_call_to_an_unknown_tool_lists_the_available_ones_and_the_run_goes_on(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(tool_calls(call("multiply", {"a": 2, "b": 3}, id="u1")), text("I cannot."))
    async with client_for(scripted, style) as client:
        result = await client.run("2*3", [add])
    record = result.tool_calls[0]
    assert record.is_error is True
    assert record.output == 'unknown tool "multiply" (available: add)'
    assert result.text == "I cannot."


async def test_arguments_failing_the_schema_are_an_error_and_the_tool_never_runs(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    runs: list[dict[str, Any]] = []
    scripted.add(tool_calls(call("add", {"a": "one"}, id="s1")), text("oops"))
    async with client_for(scripted, style) as client:
        result = await client.run("add", [counting_tool(runs)])
    record = result.tool_calls[0]
    assert record.is_error is True
    assert record.output.startswith('invalid arguments for tool "add": ')
    assert "'b' is a required property" in record.output
    assert "'one' is not of type 'number'" in record.output
    assert runs == []


async def test_arguments_that_are_json_but_not_an_object_are_an_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", "[1, 2]", id="a1")), text("oops"))
    async with client_for(scripted) as client:
        result = await client.run("add", [add])
    assert result.tool_calls[0].is_error is True
    assert "expected a JSON object, got array" in result.tool_calls[0].output


async def test_a_raising_tool_becomes_an_error_result_and_the_run_goes_on(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    def explode(args: dict[str, Any], ctx: ToolContext | None) -> str:
        raise RuntimeError("disk on fire")

    tool = Tool(
        name="explode",
        description="",
        input_schema={"type": "object", "properties": {}},
        source="custom",
        execute=explode,
    )
    scripted.add(tool_calls(call("explode", {}, id="e1")), text("it failed"))
    async with client_for(scripted) as client:
        result = await client.run("go", [tool])
    assert result.tool_calls[0].is_error is True
    assert "RuntimeError: disk on fire" in result.tool_calls[0].output
    assert result.text == "it failed"


async def test_duplicate_tool_call_ids_still_get_one_result_each(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(
        tool_calls(
            call("add", {"a": 1, "b": 1}, id="dup"), call("add", {"a": 2, "b": 2}, id="dup")
        ),
        text("2 and 4"),
    )
    async with client_for(scripted, style) as client:
        result = await client.run("sums", [add])
    call_ids = [c["id"] for c in result.messages[1]["tool_calls"]]
    result_ids = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
    assert len(set(call_ids)) == 2
    assert result_ids == call_ids
    assert [r.output for r in result.tool_calls] == ["2", "4"]
    assert result.text == "2 and 4"


async def test_an_empty_openai_tool_call_id_is_replaced_by_a_generated_one(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 1}, id="")), text("2"))
    async with client_for(scripted) as client:
        result = await client.run("1+1", [add])
    generated = result.messages[1]["tool_calls"][0]["id"]
    assert generated
    assert result.messages[2] == {"role": "tool", "tool_call_id": generated, "content": "2"}
    assert scripted.requests[1].body["messages"][2]["tool_call_id"] == generated


async def test_an_empty_anthropic_tool_use_id_is_a_bad_response(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 1}, id="")))
    async with client_for(scripted, "anthropic") as client:
        with pytest.raises(BadResponse, match="tool_use block without id"):
            await client.run("1+1", [add])


# -- what the provider answers -----------------------------------------------------------------


async def test_a_400_is_a_provider_error_with_status_and_body_and_is_not_retried(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(http_error(400, {"error": {"message": "context too long"}}))
    async with client_for(scripted, style, retry_base_ms=1) as client:
        with pytest.raises(ProviderError) as caught:
            await client.run("hi")
    assert caught.value.status == 400
    assert caught.value.body == '{"error": {"message": "context too long"}}'
    assert "context too long" in str(caught.value)
    assert len(scripted.requests) == 1


async def test_a_failed_ask_keeps_the_previously_stored_transcript(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("first answer"), http_error(400))
    async with client_for(scripted) as client:
        before = (await client.ask("first", id="keep")).messages
        with pytest.raises(ProviderError):
            await client.ask("second", id="keep")
        assert await client.conversation_store.get("keep") == before


def retry_after(value: str) -> Reply:
    return http_error(429, headers={"Retry-After": value})


def recording_on_error(infos: list[dict[str, Any]]) -> Callable[[Any], str]:
    def on_error(info: Any) -> str:
        infos.append(dict(info))
        return "retry"

    return on_error


async def test_retry_after_zero_is_honoured_as_no_wait_at_all(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    # A backoff base of a minute would blow the test's timeout: only the header's 0 passes.
    infos: list[dict[str, Any]] = []
    scripted.add(retry_after("0"), text("ok"))
    async with client_for(
        scripted, retry_base_ms=60_000, on_error=recording_on_error(infos)
    ) as client:
        result = await client.run("hi")
    assert result.text == "ok"
    assert infos[0]["error"].retry_after == 0.0


async def test_the_retry_after_header_name_is_case_insensitive(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(http_error(503, headers={"rEtRy-AfTeR": "0"}), text("ok"))
    async with client_for(scripted, retry_base_ms=60_000) as client:
        assert (await client.run("hi")).text == "ok"


async def test_retry_after_delay_seconds_are_waited_exactly_instead_of_the_backoff(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    infos: list[dict[str, Any]] = []
    scripted.add(retry_after("1"), text("ok"))
    async with client_for(scripted, retry_base_ms=1, on_error=recording_on_error(infos)) as client:
        started = time.monotonic()
        result = await client.run("hi")
        waited = time.monotonic() - started
    assert result.text == "ok"
    assert infos[0]["error"].retry_after == 1.0
    assert waited >= 1.0


async def test_the_largest_delay_seconds_value_is_still_read_as_a_delay(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(retry_after("2147483647"))
    async with client_for(scripted, on_error=lambda info: "fail") as client:
        with pytest.raises(ProviderError) as caught:
            await client.run("hi")
    assert caught.value.retry_after == 2147483647.0


@pytest.mark.parametrize(
    "value",
    ["30.5", "-30", "Fri, 31 Dec 2100 23:59:59 GMT", "", "2147483648", "+5", "1e3"],
    ids=["fractional", "negative", "http-date", "empty", "out-of-range", "signed", "exponent"],
)
async def test_a_retry_after_that_is_not_delay_seconds_falls_back_to_backoff(
    scripted: ScriptedModel, client_for: ClientFor, value: str
) -> None:
    # Honouring any of these as a delay would wait far past the test's timeout.
    infos: list[dict[str, Any]] = []
    scripted.add(retry_after(value), text("ok"))
    async with client_for(scripted, retry_base_ms=1, on_error=recording_on_error(infos)) as client:
        result = await client.run("hi")
    assert result.text == "ok"
    assert infos[0]["error"].retry_after is None
    assert len(scripted.requests) == 2


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
async def test_a_retryable_status_then_success_completes_the_run(
    scripted: ScriptedModel, client_for: ClientFor, style: str, status: int
) -> None:
    scripted.add(http_error(status), text("recovered"))
    async with client_for(scripted, style, retry_base_ms=1) as client:
        result = await client.run("hi")
    assert result.text == "recovered"
    assert len(scripted.requests) == 2


async def test_exhausted_retries_raise_the_last_provider_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(http_error(503), http_error(503), http_error(503), text("never"))
    async with client_for(scripted, retries=2, retry_base_ms=1) as client:
        with pytest.raises(ProviderError) as caught:
            await client.run("hi")
    assert caught.value.status == 503
    assert len(scripted.requests) == 3


async def test_on_error_fail_surfaces_a_retryable_error_at_once(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(http_error(503), text("never"))
    async with client_for(scripted, retry_base_ms=1, on_error=lambda info: "fail") as client:
        with pytest.raises(ProviderError):
            await client.run("hi")
    assert len(scripted.requests) == 1


async def test_on_error_retry_retries_even_a_400_but_stays_bounded_by_retries(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    infos: list[dict[str, Any]] = []
    scripted.add(http_error(400), http_error(400), text("never"))
    async with client_for(
        scripted, retries=1, retry_base_ms=1, on_error=recording_on_error(infos)
    ) as client:
        with pytest.raises(ProviderError):
            await client.run("hi")
    assert len(scripted.requests) == 2
    assert [(i["attempt"], i["status"], i["retryable"]) for i in infos] == [
        (0, 400, False),
        (1, 400, False),
    ]
    assert set(infos[0]) == {"error", "status", "attempt", "retryable"}


async def test_on_error_is_told_about_a_network_failure_without_a_status(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    infos: list[dict[str, Any]] = []
    scripted.add(reset(), text("ok"))
    async with client_for(scripted, retry_base_ms=1, on_error=recording_on_error(infos)) as client:
        await client.run("hi")
    assert set(infos[0]) == {"error", "attempt", "retryable"}
    assert isinstance(infos[0]["error"], TransportError)
    assert infos[0]["retryable"] is True


async def test_an_on_error_returning_nonsense_is_a_usage_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(http_error(503))
    async with client_for(scripted, on_error=lambda info: "suspend") as client:
        with pytest.raises(UsageError, match="suspend"):
            await client.run("hi")


async def test_a_raising_on_error_is_a_callback_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    def on_error(info: Any) -> str:
        raise KeyError("classifier broke")

    scripted.add(http_error(503))
    async with client_for(scripted, on_error=on_error) as client:
        with pytest.raises(CallbackError, match="on_error raised") as caught:
            await client.run("hi")
    assert isinstance(caught.value.__cause__, KeyError)


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
async def test_a_connection_reset_before_any_byte_is_retried(
    scripted: ScriptedModel, client_for: ClientFor, style: str, streaming: bool
) -> None:
    scripted.add(reset(), text("after the reset"))
    async with client_for(scripted, style, retry_base_ms=1) as client:
        result = await run_or_stream(client, streaming, "hi")
    assert result.text == "after the reset"
    assert len(scripted.requests) == 2


async def test_resets_past_the_retry_budget_are_a_transport_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(reset(), reset())
    async with client_for(scripted, retries=1, retry_base_ms=1) as client:
        with pytest.raises(TransportError):
            await client.run("hi")
    assert len(scripted.requests) == 2


async def test_a_reset_mid_stream_after_text_is_a_transport_error_and_not_retried(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(reset_mid_stream(text("a long streamed answer"), after_events=3), text("again"))
    seen: list[dict[str, Any]] = []
    async with client_for(scripted, style, retry_base_ms=1) as client:
        with pytest.raises(TransportError):
            await collect(seen, client, "hi")
    assert seen
    assert all(e["type"] == "text" for e in seen)
    assert len(scripted.requests) == 1


async def test_a_stream_that_ends_without_its_final_event_is_a_bad_response(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(cut_stream(text("cut short"), after_events=2), text("never"))
    async with client_for(scripted, style, retry_base_ms=1) as client:
        with pytest.raises(BadResponse, match="stream ended before"):
            await drain(client, "hi")
    assert len(scripted.requests) == 1


async def test_an_error_event_inside_the_stream_is_a_provider_error(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(stream_error("overloaded_error", "Overloaded"))
    async with client_for(scripted, style) as client:
        with pytest.raises(ProviderError, match="Overloaded"):
            await drain(client, "hi")


async def test_an_openai_reply_with_empty_choices_is_a_bad_response(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(empty_choices(), text("never"))
    async with client_for(scripted, retry_base_ms=1) as client:
        with pytest.raises(BadResponse, match="no choices"):
            await client.run("hi")
    assert len(scripted.requests) == 1


async def test_a_streamed_openai_reply_with_no_choice_at_all_is_a_bad_response(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(empty_choices())
    async with client_for(scripted) as client:
        with pytest.raises(BadResponse):
            await drain(client, "hi")


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
async def test_a_reply_with_neither_text_nor_tool_calls_is_done_with_empty_text(
    scripted: ScriptedModel, client_for: ClientFor, style: str, streaming: bool
) -> None:
    scripted.add(empty_reply())
    async with client_for(scripted, style) as client:
        result = await run_or_stream(client, streaming, "hi")
    assert (result.status, result.text, result.turns) == ("done", "", 1)


@pytest.mark.parametrize(
    "body", ["{not json", "[1, 2]", '{"unexpected": true}'], ids=["invalid", "array", "object"]
)
async def test_a_200_that_is_not_a_completion_is_a_bad_response_and_not_retried(
    scripted: ScriptedModel, client_for: ClientFor, style: str, body: str
) -> None:
    scripted.add(garbage(body), text("never"))
    async with client_for(scripted, style, retry_base_ms=1) as client:
        with pytest.raises(BadResponse):
            await client.run("hi")
    assert len(scripted.requests) == 1


# -- aborts --------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
async def test_timeout_ms_aborts_a_slow_reply_and_the_server_sees_the_disconnect(
    scripted: ScriptedModel, client_for: ClientFor, streaming: bool
) -> None:
    scripted.add(delayed(text("too late"), 30))
    async with client_for(scripted, timeout_ms=500) as client:
        with pytest.raises(
            RunTimeout, match=r"run timeout after 500ms \(client timeout_ms budget\)"
        ):
            await run_or_stream(client, streaming, "hi")
        await scripted.wait_for_disconnect(10)
    assert len(scripted.requests) == 1


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
async def test_cancel_set_mid_request_aborts_it_and_the_server_sees_the_disconnect(
    scripted: ScriptedModel, client_for: ClientFor, streaming: bool
) -> None:
    cancel = asyncio.Event()

    def cancel_then_stall(request: RecordedRequest) -> Reply:
        cancel.set()
        return delayed(text("too late"), 30)

    scripted.add(cancel_then_stall)
    async with client_for(scripted) as client:
        with pytest.raises(RunCancelled):
            await run_or_stream(client, streaming, "hi", cancel=cancel)
        await scripted.wait_for_disconnect(10)


async def test_an_abort_is_never_retried(scripted: ScriptedModel, client_for: ClientFor) -> None:
    calls: list[Any] = []
    scripted.add(delayed(text("too late"), 30), text("never"))
    async with client_for(scripted, timeout_ms=500, on_error=calls.append) as client:
        with pytest.raises(RunTimeout):
            await client.run("hi")
    assert calls == []
    assert len(scripted.requests) == 1


async def test_a_cancel_set_before_the_run_sends_nothing(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    cancel = asyncio.Event()
    cancel.set()
    scripted.add(text("never"))
    async with client_for(scripted) as client:
        with pytest.raises(RunCancelled):
            await client.run("hi", cancel=cancel)
    assert scripted.requests == []


# -- callbacks ---------------------------------------------------------------------------------


async def test_a_raising_hook_aborts_the_run_and_keeps_the_stored_transcript(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    state = {"raise": False}

    def before_llm(info: dict[str, Any]) -> None:
        if state["raise"]:
            raise ValueError("gate closed")

    scripted.add(text("first"))
    async with client_for(scripted, hooks={"before_llm": before_llm}) as client:
        before = (await client.ask("one", id="h")).messages
        state["raise"] = True
        with pytest.raises(CallbackError, match="before_llm hook raised ValueError: gate closed"):
            await client.ask("two", id="h")
        assert await client.conversation_store.get("h") == before
    assert len(scripted.requests) == 1


# -- stores ------------------------------------------------------------------------------------


async def test_a_locked_sqlite_store_is_a_store_error_and_the_transcript_survives(
    scripted: ScriptedModel, client_for: ClientFor, tmp_path: Path
) -> None:
    path = tmp_path / "locked.db"
    scripted.add(text("saved"), text("lost"))
    store = SqliteStore(path, busy_timeout_ms=50)
    async with store, client_for(scripted, store=store) as client:
        before = (await client.ask("one", id="c")).messages
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN EXCLUSIVE")
            with pytest.raises(StoreError, match="locked"):
                await client.ask("two", id="c")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert await store.get("c") == before


async def test_a_corrupt_sqlite_file_is_a_store_error(
    scripted: ScriptedModel, client_for: ClientFor, tmp_path: Path
) -> None:
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not a database, just forty-odd bytes of junk" * 100)
    scripted.add(text("never"))
    async with client_for(scripted, store=f"sqlite:///{path}") as client:
        with pytest.raises(StoreError, match="not a SQLite database or is corrupt"):
            await client.ask("hi", id="c")
    assert scripted.requests == []
    assert path.read_bytes().startswith(b"this is not a database")


# -- caller mistakes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"style": "gemini"}, "style must be"),
        ({"base_url": "ftp://example.com"}, "base_url must be an http"),
        ({"max_turns": 0}, "max_turns"),
        ({"retries": -1}, "retries"),
        ({"timeout_ms": 0}, "timeout_ms"),
        ({"model": ""}, "model"),
        ({"store": "redis://localhost"}, "store must be one of"),
        ({"http_transport": object()}, "http_transport must have post"),
    ],
    ids=["style", "base_url", "max_turns", "retries", "timeout_ms", "model", "store", "transport"],
)
def test_bad_client_options_are_usage_errors(options: dict[str, Any], match: str) -> None:
    from toolnexus import create_client

    kwargs: dict[str, Any] = {
        "base_url": "http://127.0.0.1:9",
        "style": "openai",
        "model": "m-1",
        "api_key": "k",
    }
    kwargs.update(options)
    with pytest.raises(UsageError, match=match):
        create_client(**kwargs)


async def test_a_history_message_without_a_role_is_a_usage_error_before_any_request(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    async with client_for(scripted) as client:
        with pytest.raises(UsageError, match=r"messages\[1\] has no role"):
            await client.run("hi", history=[{"role": "user", "content": "a"}, {"content": "b"}])
    assert scripted.requests == []


async def test_a_tool_list_with_something_that_is_not_a_tool_is_a_usage_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    async with client_for(scripted) as client:
        with pytest.raises(UsageError, match="Tool"):
            await client.run("hi", cast(Any, [add, "not a tool"]))
    assert scripted.requests == []


async def test_a_cancel_during_a_retry_after_wait_aborts_at_once(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    # The header asks for two minutes: only an abort of the wait itself ends this test in time.
    cancel = asyncio.Event()

    def on_error(info: Any) -> str:
        cancel.set()
        return "retry"

    scripted.add(http_error(503, headers={"Retry-After": "120"}), text("never"))
    async with client_for(scripted, on_error=on_error) as client:
        with pytest.raises(RunCancelled):
            await client.run("hi", cancel=cancel)
    assert len(scripted.requests) == 1


async def test_timeout_ms_bounds_a_retry_after_wait(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(http_error(503, headers={"Retry-After": "120"}), text("never"))
    async with client_for(scripted, timeout_ms=500) as client:
        with pytest.raises(RunTimeout):
            await client.run("hi")
    assert len(scripted.requests) == 1


async def test_timeout_ms_is_one_deadline_for_the_whole_run(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), delayed(text("too late"), 30))
    async with client_for(scripted, timeout_ms=1500) as client:
        with pytest.raises(RunTimeout):
            await client.run("1+2", [add])
        await scripted.wait_for_disconnect(10)
    assert len(scripted.requests) == 2


async def test_a_raising_body_transform_is_a_callback_error_and_nothing_is_sent(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    def body_transform(body: dict[str, Any]) -> dict[str, Any]:
        raise TypeError("cannot rewrite")

    async with client_for(scripted, body_transform=body_transform) as client:
        with pytest.raises(CallbackError, match="body_transform raised TypeError"):
            await client.run("hi")
    assert scripted.requests == []


async def test_a_failed_send_leaves_the_conversation_as_it_was(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("first"), http_error(400))
    async with client_for(scripted) as client:
        conversation = client.conversation()
        await conversation.send("one")
        before = list(conversation.messages)
        with pytest.raises(ProviderError):
            await conversation.send("two")
    assert conversation.messages == before


async def test_a_run_never_mutates_the_history_it_was_given(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    history = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    snapshot = [dict(m) for m in history]
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    async with client_for(scripted, style) as client:
        await client.run("1+2", [add], history=history)
    assert history == snapshot
