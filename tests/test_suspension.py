"""Suspension: the Request/Answer data, the loop rule with and without ``wait_for``, relay tools.

CONTRACT §3.1, §3.2, §3.9, §3.13 and §10.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from toolnexus import (
    RELAY_KIND,
    Answer,
    AnswerMismatch,
    CallbackError,
    Client,
    RelayCall,
    RelayResult,
    Request,
    RunCancelled,
    Tool,
    ToolContext,
    ToolResult,
    UsageError,
    answer_declined,
    answer_output,
    auth_required,
    create_toolkit,
    define_tool,
    is_relay_request,
    pending,
    pending_of,
    relay_answer,
    relay_calls_of,
    relay_tool,
)
from toolnexus.testing import ScriptedModel, call, text, tool_calls

ClientFor = Callable[..., Client]
WAIT = 5.0


def stamp(offset_seconds: float) -> str:
    """An RFC 3339 UTC timestamp ``offset_seconds`` from now."""
    moment = datetime.now(UTC) + timedelta(seconds=offset_seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse(stamp_text: str) -> datetime:
    return datetime.fromisoformat(stamp_text.replace("Z", "+00:00"))


class Gate:
    """A tool that suspends until it is retried with an answer, logging every execution."""

    def __init__(
        self,
        name: str = "ship",
        prompt: str = "Ship it?",
        *,
        request_id: str | None = None,
        expires_at: str | None = None,
        suspend_again: bool = False,
    ) -> None:
        self.name = name
        self.prompt = prompt
        self.request_id = request_id or f"req-{name}"
        self.expires_at = expires_at
        self.suspend_again = suspend_again
        self.answers: list[Answer | None] = []
        self.suspended = asyncio.Event()

    async def execute(self, args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        self.answers.append(answer)
        if answer is None or self.suspend_again:
            self.suspended.set()
            return pending(
                kind="approval",
                prompt=self.prompt,
                id=self.request_id,
                data={"args": args},
                expiresAt=self.expires_at,
            )
        return ToolResult(f"{self.name} done with {json.dumps(answer.data)}")

    @property
    def tool(self) -> Tool:
        return Tool(
            name=self.name,
            description=f"{self.name}, after approval",
            input_schema={"type": "object", "properties": {}},
            source="native",
            execute=self.execute,
        )


@define_tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def approve(request: Request) -> Answer:
    return Answer(id=request.id, ok=True, data={"by": "ann"})


# -- the primitive -------------------------------------------------------------------------------


def test_pending_is_an_error_result_carrying_the_request() -> None:
    result = pending(kind="approval", prompt="Deploy?", id="p-1", data={"env": "prod"})
    assert (result.output, result.is_error) == ("Deploy?", True)
    assert result.metadata == {
        "pending": Request(id="p-1", kind="approval", prompt="Deploy?", data={"env": "prod"})
    }


def test_pending_output_is_the_prompt_then_the_url_on_its_own_line() -> None:
    result = pending(kind="authorization", prompt="Log in", url="https://idp.example/auth")
    assert result.output == "Log in\nhttps://idp.example/auth"


def test_pending_generates_a_distinct_id_for_every_suspension() -> None:
    first = pending_of(pending(kind="input", prompt="a"))
    second = pending_of(pending(kind="input", prompt="a"))
    assert first is not None
    assert second is not None
    assert first.id
    assert first.id != second.id


def test_auth_required_is_an_authorization_request_with_the_default_prompt() -> None:
    result = auth_required("https://idp.example/auth")
    request = pending_of(result)
    assert request is not None
    assert (request.kind, request.prompt, request.url) == (
        "authorization",
        "Authorization required to continue",
        "https://idp.example/auth",
    )
    assert result.output == "Authorization required to continue\nhttps://idp.example/auth"


def test_pending_of_an_ordinary_result_is_none() -> None:
    assert pending_of(ToolResult("fine")) is None
    assert pending_of(ToolResult("meta", metadata={"title": "x"})) is None
    assert pending_of(None) is None


def test_pending_of_accepts_the_request_as_a_wire_dict() -> None:
    result = ToolResult("x", True, {"pending": {"id": "w-1", "kind": "input", "prompt": "Name?"}})
    assert pending_of(result) == Request(id="w-1", kind="input", prompt="Name?")


def test_pending_of_ignores_a_malformed_wire_dict() -> None:
    result = ToolResult("x", True, {"pending": {"id": "w-1", "kind": "input"}})
    assert pending_of(result) is None


# -- wire data ---------------------------------------------------------------------------------


def test_request_to_dict_omits_absent_fields_and_keeps_expires_at_camel_case() -> None:
    assert Request(id="r", kind="input", prompt="p").to_dict() == {
        "id": "r",
        "kind": "input",
        "prompt": "p",
    }
    full = Request(
        id="r", kind="input", prompt="p", url="u", data={"k": 1}, expiresAt="2030-01-01T00:00:00Z"
    )
    assert full.to_dict() == {
        "id": "r",
        "kind": "input",
        "prompt": "p",
        "url": "u",
        "data": {"k": 1},
        "expiresAt": "2030-01-01T00:00:00Z",
    }


@pytest.mark.parametrize(
    "request_",
    [
        Request(id="r1", kind="approval", prompt="Ok?"),
        Request(
            id="r2",
            kind="input",
            prompt="Name?",
            url="https://x.example",
            data={"schema": {"type": "string"}},
            expiresAt="2030-01-01T00:00:00.000Z",
        ),
    ],
    ids=["minimal", "full"],
)
def test_a_request_round_trips_through_json(request_: Request) -> None:
    wire = json.loads(json.dumps(request_.to_dict()))
    assert Request(**wire) == request_
    assert Request.from_dict(wire) == request_


@pytest.mark.parametrize(
    "answer",
    [
        Answer(id="a1", ok=True),
        Answer(id="a2", ok=True, data={"answers": ["yes"]}),
        Answer(id="a3", ok=False, reason="declined"),
    ],
    ids=["bare", "data", "declined"],
)
def test_an_answer_round_trips_through_json(answer: Answer) -> None:
    wire = json.loads(json.dumps(answer.to_dict()))
    assert Answer(**wire) == answer
    assert Answer.from_dict(wire) == answer
    assert set(wire) <= {"id", "ok", "data", "reason"}


def test_answer_to_dict_omits_absent_fields() -> None:
    assert Answer(id="a", ok=True).to_dict() == {"id": "a", "ok": True}


@pytest.mark.parametrize(
    ("wire", "match"),
    [
        ({"id": "r", "kind": "k", "prompt": "p", "expires_at": "x"}, "unknown keys: expires_at"),
        ({"id": "r", "kind": "k"}, "missing required keys: prompt"),
        ({"id": "", "kind": "k", "prompt": "p"}, "non-empty string"),
        ({"id": "r", "kind": "k", "prompt": "p", "data": [1]}, "data must be an object"),
    ],
    ids=["unknown key", "missing key", "empty id", "data not an object"],
)
def test_request_from_dict_rejects_what_is_not_a_request(wire: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Request.from_dict(wire)


@pytest.mark.parametrize(
    ("wire", "match"),
    [
        ({"id": "a", "ok": True, "answer": 1}, "unknown keys: answer"),
        ({"id": "a", "ok": "yes"}, "ok must be a boolean"),
        ({"ok": True}, "missing required keys: id"),
    ],
    ids=["unknown key", "ok not a bool", "no id"],
)
def test_answer_from_dict_rejects_what_is_not_an_answer(wire: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Answer.from_dict(wire)


def test_answer_helpers_build_the_relay_shorthand_and_a_decline() -> None:
    assert answer_output("r", "out", True) == Answer(
        id="r", ok=True, data={"output": "out", "isError": True}
    )
    assert answer_declined("r") == Answer(id="r", ok=False, reason="declined")


# -- with wait_for -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_an_approved_suspension_reruns_the_tool_once_with_the_answer(
    scripted: ScriptedModel, client_for: ClientFor, style: str, kind: str
) -> None:
    gate = Gate()
    asked: list[Request] = []

    def wait_sync(request: Request) -> Answer:
        asked.append(request)
        return approve(request)

    async def wait_async(request: Request) -> Answer:
        asked.append(request)
        return approve(request)

    scripted.add(tool_calls(call("ship", {"v": 2}, id="c1")), text("Shipped."))
    wait_for = wait_sync if kind == "sync" else wait_async
    async with client_for(scripted, style, wait_for=wait_for) as client:
        result = await client.run("ship", [gate.tool])
    assert [r.id for r in asked] == ["req-ship"]
    assert asked[0].data == {"args": {"v": 2}}
    assert gate.answers == [None, Answer(id="req-ship", ok=True, data={"by": "ann"})]
    assert result.tool_calls[0].output == 'ship done with {"by": "ann"}'
    assert result.tool_calls[0].is_error is False
    assert (result.status, result.text, result.pending) == ("done", "Shipped.", None)


async def test_a_retry_that_suspends_again_is_fed_back_as_unresolved(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    gate = Gate(suspend_again=True)
    calls: list[Request] = []
    scripted.add(tool_calls(call("ship", {}, id="c1")), text("Could not."))
    async with client_for(scripted, wait_for=lambda r: calls.append(r) or approve(r)) as client:
        result = await client.run("ship", [gate.tool])
    assert len(gate.answers) == 2
    assert len(calls) == 1
    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == (
        "unresolved: Ship it?",
        True,
    )
    assert result.status == "done"


@pytest.mark.parametrize("reason", ["declined", "cancelled", "expired", None])
async def test_a_refused_answer_is_fed_back_as_declined_whatever_the_reason(
    scripted: ScriptedModel, client_for: ClientFor, reason: str | None
) -> None:
    gate = Gate()
    scripted.add(tool_calls(call("ship", {}, id="c1")), text("Not shipped."))
    refuse: Callable[[Request], Answer] = lambda r: Answer(id=r.id, ok=False, reason=reason)  # noqa: E731
    async with client_for(scripted, wait_for=refuse) as client:
        result = await client.run("ship", [gate.tool])
    assert gate.answers == [None]
    record = result.tool_calls[0]
    assert (record.output, record.is_error) == ("declined/expired: Ship it?", True)
    assert (result.status, result.text) == ("done", "Not shipped.")


async def test_concurrent_suspensions_in_one_turn_resolve_independently(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    first, second = Gate("first", "First?"), Gate("second", "Second?")
    in_flight: set[str] = set()
    both = asyncio.Event()

    async def wait_for(request: Request) -> Answer:
        in_flight.add(request.id)
        if len(in_flight) == 2:
            both.set()
        async with asyncio.timeout(WAIT):
            await both.wait()
        ok = request.id == "req-first"
        return Answer(id=request.id, ok=ok, data={"who": request.id} if ok else None)

    scripted.add(tool_calls(call("first", {}, id="a"), call("second", {}, id="b")), text("ok"))
    async with client_for(scripted, wait_for=wait_for) as client:
        result = await client.run("go", [first.tool, second.tool])
    assert [(r.id, r.output, r.is_error) for r in result.tool_calls] == [
        ("a", 'first done with {"who": "req-first"}', False),
        ("b", "declined/expired: Second?", True),
    ]
    assert result.status == "done"
    assert unanswered_calls(scripted.requests[1].body, "openai") == []


async def test_a_raising_wait_for_raises_a_callback_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    def wait_for(request: Request) -> Answer:
        raise ConnectionError("inbox offline")

    scripted.add(tool_calls(call("ship", {}, id="c1")), text("never"))
    async with client_for(scripted, wait_for=wait_for) as client:
        with pytest.raises(CallbackError, match="wait_for raised ConnectionError") as caught:
            await client.run("ship", [Gate().tool])
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert len(scripted.requests) == 1


async def test_an_answer_with_the_wrong_id_is_an_answer_mismatch(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("ship", {}, id="c1")), text("never"))
    async with client_for(scripted, wait_for=lambda r: Answer(id="other", ok=True)) as client:
        with pytest.raises(AnswerMismatch, match='"other"') as caught:
            await client.run("ship", [Gate().tool])
    assert "req-ship" in str(caught.value)


async def test_a_wait_for_returning_something_else_than_an_answer_is_a_callback_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("ship", {}, id="c1")), text("never"))
    async with client_for(scripted, wait_for=lambda r: True) as client:
        with pytest.raises(CallbackError, match="must return an Answer"):
            await client.run("ship", [Gate().tool])


async def test_a_wait_for_may_answer_with_the_wire_dict(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    gate = Gate()
    scripted.add(tool_calls(call("ship", {}, id="c1")), text("ok"))
    answer = {"id": "req-ship", "ok": True, "data": {"n": 1}}
    async with client_for(scripted, wait_for=lambda r: answer) as client:
        result = await client.run("ship", [gate.tool])
    assert result.tool_calls[0].output == 'ship done with {"n": 1}'


async def test_a_request_already_expired_is_declined_without_asking(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    gate = Gate(expires_at=stamp(-60))
    asked: list[Request] = []
    scripted.add(tool_calls(call("ship", {}, id="c1")), text("Too late."))
    async with client_for(scripted, wait_for=lambda r: asked.append(r) or approve(r)) as client:
        result = await client.run("ship", [gate.tool])
    assert asked == []
    assert gate.answers == [None]
    assert result.tool_calls[0].output == "declined/expired: Ship it?"


async def test_a_wait_for_that_outlives_expires_at_is_treated_as_expired(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    gate = Gate(expires_at=stamp(1.0))
    never = asyncio.Event()

    async def wait_for(request: Request) -> Answer:
        await never.wait()
        return approve(request)

    scripted.add(tool_calls(call("ship", {}, id="c1")), text("Timed out."))
    async with client_for(scripted, wait_for=wait_for) as client:
        result = await client.run("ship", [gate.tool])
    assert gate.answers == [None]
    assert result.tool_calls[0].output == "declined/expired: Ship it?"


async def test_pending_ttl_stamps_expires_at_on_a_request_that_has_none(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("ship", {}, id="c1")))
    before = datetime.now(UTC)
    async with client_for(scripted, pending_ttl=3600) as client:
        result = await client.run("ship", [Gate().tool])
    after = datetime.now(UTC)
    assert result.pending is not None
    assert result.pending.expiresAt is not None
    expires = parse(result.pending.expiresAt)
    slack = timedelta(milliseconds=1)
    assert before + timedelta(hours=1) - slack <= expires <= after + timedelta(hours=1) + slack


async def test_pending_ttl_keeps_an_expires_at_the_tool_set(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    own = stamp(60)
    scripted.add(tool_calls(call("ship", {}, id="c1")))
    async with client_for(scripted, pending_ttl=3600) as client:
        result = await client.run("ship", [Gate(expires_at=own).tool])
    assert result.pending is not None
    assert result.pending.expiresAt == own


# -- without wait_for ------------------------------------------------------------------------


async def test_without_wait_for_a_suspension_halts_the_run_as_pending(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(tool_calls(call("ship", {"v": 1}, id="c1")), text("never"))
    async with client_for(scripted, style) as client:
        result = await client.run("ship", [Gate().tool])
    expected = Request(id="req-ship", kind="approval", prompt="Ship it?", data={"args": {"v": 1}})
    assert (result.status, result.pending, result.text, result.limit) == (
        "pending",
        expected,
        "Ship it?",
        None,
    )
    placeholder = dict(result.messages[-1])
    note = placeholder.pop("toolnexus_halt")
    assert placeholder == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Ship it?",
        "is_error": True,
    }
    assert note["pending"] == expected.to_dict()
    assert [o["state"] for o in note["outstanding"]] == ["suspended"]
    record = result.tool_calls[0]
    assert (record.id, record.output, record.is_error) == ("c1", "Ship it?", True)
    assert record.metadata == {"pending": expected}
    assert len(scripted.requests) == 1


async def test_the_first_suspension_in_call_order_wins_even_if_another_suspended_first(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    first, second = Gate("first", "First?"), Gate("second", "Second?")

    async def late_first(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        async with asyncio.timeout(WAIT):
            await second.suspended.wait()
        return await first.execute(args, ctx)

    slow_first = Tool(
        name="first",
        description="",
        input_schema={"type": "object", "properties": {}},
        source="native",
        execute=late_first,
    )
    scripted.add(tool_calls(call("first", {}, id="a"), call("second", {}, id="b")))
    async with client_for(scripted) as client:
        result = await client.run("go", [slow_first, second.tool])
    assert result.pending is not None
    assert result.pending.id == "req-first"
    assert [m.get("tool_call_id") for m in result.messages if m["role"] == "tool"] == ["a"]
    assert [r.id for r in result.tool_calls] == ["a"]


async def test_calls_before_the_halted_one_are_kept_and_calls_after_it_dropped(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(
        tool_calls(
            call("add", {"a": 1, "b": 1}, id="before"),
            call("ship", {}, id="halt"),
            call("add", {"a": 2, "b": 2}, id="after"),
        )
    )
    async with client_for(scripted, style) as client:
        result = await client.run("go", [add, Gate().tool])
    tool_messages = [
        (m["tool_call_id"], m["content"]) for m in result.messages if m["role"] == "tool"
    ]
    assert tool_messages == [("before", "2"), ("halt", "Ship it?")]
    assert [(r.id, r.output) for r in result.tool_calls] == [("before", "2"), ("halt", "Ship it?")]
    assert result.tool_call_count == 2


async def test_ask_saves_the_halted_transcript_with_its_placeholder(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("ship", {}, id="c1")))
    async with client_for(scripted) as client:
        result = await client.ask("ship", [Gate().tool], id="halted")
        stored = await client.conversation_store.get("halted")
    assert result.status == "pending"
    assert stored == result.messages
    assert stored is not None
    assert stored[-1]["content"] == "Ship it?"


# -- a suspension is not a tool error ------------------------------------------------------------


async def test_a_suspension_is_metered_as_pending_not_as_an_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    events: list[dict[str, Any]] = []
    scripted.add(tool_calls(call("ship", {}, id="c1")))
    async with client_for(scripted, on_metric=events.append) as client:
        await client.run("ship", [Gate().tool])
    tool_events = [e for e in events if e["event"] == "tool"]
    assert len(tool_events) == 1
    assert (tool_events[0]["is_error"], tool_events[0]["pending"]) == (False, True)
    assert 'is_error="false",pending="true"} 1' in client.metrics()


async def test_after_tool_skips_the_suspension_and_sees_the_resolved_result_once(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    seen: list[str] = []
    events: list[dict[str, Any]] = []
    scripted.add(tool_calls(call("ship", {}, id="c1")), text("ok"))
    async with client_for(
        scripted,
        wait_for=approve,
        hooks={"after_tool": lambda info: seen.append(info["result"].output)},
        on_metric=events.append,
    ) as client:
        await client.run("ship", [Gate().tool])
    assert seen == ['ship done with {"by": "ann"}']
    tool_events = [(e["is_error"], e.get("pending", False)) for e in events if e["event"] == "tool"]
    assert tool_events == [(False, True), (False, False)]


async def test_a_before_tool_guard_that_suspends_follows_the_same_rules_inline(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    infos: list[dict[str, Any]] = []
    runs: list[int] = []
    after: list[str] = []
    events: list[dict[str, Any]] = []

    def guard(info: dict[str, Any]) -> dict[str, Any] | None:
        infos.append(dict(info))
        if "answer" in info:
            return None
        return {"result": pending(kind="approval", prompt="Allow add?", id="guard-1")}

    def counted(a: int, b: int) -> str:
        runs.append(1)
        return str(a + b)

    tool = define_tool(counted, name="add")
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")), text("3"))
    async with client_for(
        scripted,
        wait_for=approve,
        hooks={"before_tool": guard, "after_tool": lambda i: after.append(i["result"].output)},
        on_metric=events.append,
    ) as client:
        result = await client.run("1+2", [tool])
    assert runs == [1]
    assert "answer" not in infos[0]
    assert infos[1]["answer"] == Answer(id="guard-1", ok=True, data={"by": "ann"})
    assert result.tool_calls[0].output == "3"
    assert after == ["3"]
    assert [e.get("pending", False) for e in events if e["event"] == "tool"] == [True, False]


async def test_a_before_tool_guard_that_suspends_halts_a_run_without_wait_for(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    runs: list[int] = []

    def counted(a: int, b: int) -> str:
        runs.append(1)
        return str(a + b)

    guard = {"before_tool": lambda i: {"result": pending(kind="approval", prompt="Allow?")}}
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")))
    async with client_for(scripted, hooks=guard) as client:
        result = await client.run("1+2", [define_tool(counted, name="add")])
    assert runs == []
    assert result.status == "pending"
    assert result.pending is not None
    assert result.pending.prompt == "Allow?"


# -- streaming -------------------------------------------------------------------------------------


async def test_the_stream_emits_pending_before_wait_for_runs(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    received: list[dict[str, Any]] = []
    seen_by_wait_for: list[list[str]] = []

    def wait_for(request: Request) -> Answer:
        seen_by_wait_for.append([e["type"] for e in received])
        return approve(request)

    scripted.add(tool_calls(call("ship", {}, id="c1")), text("ok"))
    async with client_for(scripted, style, wait_for=wait_for) as client:
        async for event in client.stream("ship", [Gate().tool]):
            received.append(event)
    assert seen_by_wait_for == [["tool_call", "pending"]]
    assert received[1]["request"].id == "req-ship"


async def test_the_stream_resolves_suspensions_in_call_order_with_wait_for(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    first, second = Gate("first", "First?"), Gate("second", "Second?")
    scripted.add(tool_calls(call("first", {}, id="a"), call("second", {}, id="b")), text("ok"))
    async with client_for(scripted, wait_for=approve) as client:
        events = [e async for e in client.stream("go", [first.tool, second.tool])]
    labels = [
        (e["type"], e["request"].id if e["type"] == "pending" else e.get("id")) for e in events
    ]
    assert labels == [
        ("tool_call", "a"),
        ("tool_call", "b"),
        ("pending", "req-first"),
        ("tool_result", "a"),
        ("pending", "req-second"),
        ("tool_result", "b"),
        ("text", None),
        ("text", None),
        ("usage", None),
        ("done", None),
    ]


async def test_a_halted_stream_ends_with_pending_then_done_and_no_result_for_the_halted_call(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    # Whichever posture the host chose, a consumer listening for ``pending`` (to post the
    # approval link) sees it: without ``wait_for`` it comes right before the halting ``done``.
    scripted.add(
        tool_calls(
            call("add", {"a": 1, "b": 1}, id="before"),
            call("ship", {}, id="halt"),
            call("add", {"a": 2, "b": 2}, id="after"),
        )
    )
    async with client_for(scripted, style) as client:
        events = [e async for e in client.stream("go", [add, Gate().tool])]
    assert [(e["type"], e.get("id")) for e in events] == [
        ("tool_call", "before"),
        ("tool_call", "halt"),
        ("tool_call", "after"),
        ("tool_result", "before"),
        ("pending", None),  # issue 11: emitted without a wait_for too, before done
        ("done", None),
    ]
    result = events[-1]["result"]
    assert (result.status, result.text) == ("pending", "Ship it?")
    assert events[-2]["request"] is result.pending


# -- relay tools -----------------------------------------------------------------------------------


def test_a_relay_tool_is_a_declaration_with_source_relay() -> None:
    lookup = relay_tool("lookup", "Look a thing up.")
    assert (lookup.name, lookup.description, lookup.source) == (
        "lookup",
        "Look a thing up.",
        "relay",
    )
    assert lookup.input_schema == {"type": "object", "properties": {}}


async def test_a_relay_call_with_wait_for_gets_its_output_from_the_answer(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    asked: list[Request] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request)
        return answer_output(request.id, "42 results", False)

    scripted.add(tool_calls(call("lookup", {"q": "cats"}, id="r1")), text("Found."))
    async with client_for(scripted, style, wait_for=wait_for) as client:
        result = await client.run("find", [relay_tool("lookup", "Look up.")])
    assert asked[0].kind == RELAY_KIND
    assert asked[0].prompt == "relay tool call lookup to the caller for execution"
    assert asked[0].data == {
        "calls": [
            {"id": "r1", "name": "lookup", "input": {"q": "cats"}, "arguments": '{"q":"cats"}'}
        ]
    }
    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == ("42 results", False)
    assert result.text == "Found."


async def test_a_relayed_failure_is_an_error_result_not_an_abort(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("lookup", {}, id="r1")), text("It failed."))
    answer = lambda r: answer_output(r.id, "backend down", True)  # noqa: E731
    async with client_for(scripted, wait_for=answer) as client:
        result = await client.run("find", [relay_tool("lookup", "Look up.")])
    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == ("backend down", True)
    assert result.text == "It failed."


@pytest.mark.parametrize(
    ("reason", "expected"),
    [("cancelled", "cancelled"), ("declined", "declined"), (None, "declined")],
)
async def test_a_declined_relay_call_says_so_with_the_reason(
    scripted: ScriptedModel, client_for: ClientFor, reason: str | None, expected: str
) -> None:
    scripted.add(tool_calls(call("lookup", {}, id="r1")), text("ok"))
    refuse = lambda r: Answer(id=r.id, ok=False, reason=reason)  # noqa: E731
    async with client_for(scripted, wait_for=refuse) as client:
        result = await client.run("find", [relay_tool("lookup", "Look up.")])
    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == (
        f"relay declined for lookup: {expected}",
        True,
    )


async def test_each_relay_call_gets_its_own_wait_for_with_only_its_call(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    asked: list[list[str]] = []

    def wait_for(request: Request) -> Answer:
        ids = [c.id for c in relay_calls_of(request)]
        asked.append(ids)
        return answer_output(request.id, f"out-{ids[0]}")

    scripted.add(tool_calls(call("lookup", {}, id="r1"), call("lookup", {}, id="r2")), text("ok"))
    async with client_for(scripted, wait_for=wait_for) as client:
        result = await client.run("find", [relay_tool("lookup", "Look up.")])
    assert sorted(asked) == [["r1"], ["r2"]]
    assert [r.output for r in result.tool_calls] == ["out-r1", "out-r2"]


async def test_a_relay_call_without_wait_for_halts_with_the_provider_call_id(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(tool_calls(call("lookup", {"q": "dogs"}, id="prov-7")))
    async with client_for(scripted, style) as client:
        result = await client.run("find", [relay_tool("lookup", "Look up.")])
    assert result.status == "pending"
    assert result.pending is not None
    assert is_relay_request(result.pending)
    assert relay_calls_of(result.pending) == [
        RelayCall(id="prov-7", name="lookup", input={"q": "dogs"}, arguments='{"q":"dogs"}')
    ]


async def test_two_relay_calls_of_one_turn_ride_one_request_in_call_order(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(
        tool_calls(call("lookup", {"q": "a"}, id="r1"), call("fetch", {"u": "b"}, id="r2"))
    )
    tools = [relay_tool("lookup", "Look up."), relay_tool("fetch", "Fetch.")]
    async with client_for(scripted) as client:
        result = await client.run("go", tools)
    assert result.pending is not None
    assert [(c.id, c.name, c.input) for c in relay_calls_of(result.pending)] == [
        ("r1", "lookup", {"q": "a"}),
        ("r2", "fetch", {"u": "b"}),
    ]
    assert [m["tool_call_id"] for m in result.messages if m["role"] == "tool"] == ["r1"]


async def test_a_real_tool_in_a_relay_turn_still_runs(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="real"), call("lookup", {}, id="r")))
    async with client_for(scripted) as client:
        result = await client.run("go", [add, relay_tool("lookup", "Look up.")])
    assert result.status == "pending"
    assert (result.tool_calls[0].id, result.tool_calls[0].output) == ("real", "3")


async def test_a_declared_but_uncalled_relay_tool_changes_nothing(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    for _ in range(2):
        scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")), text("3"))
    async with client_for(scripted) as client:
        plain = await client.run("1+2", [add])
        with_relay = await client.run("1+2", [add, relay_tool("lookup", "Look up.")])
    assert (with_relay.text, with_relay.status, with_relay.turns, with_relay.tool_calls) == (
        plain.text,
        plain.status,
        plain.turns,
        plain.tool_calls,
    )


def test_relay_answer_carries_one_result_per_call() -> None:
    answer = relay_answer(
        "req", [RelayResult(id="r1", output="a"), {"id": "r2", "output": "b", "is_error": True}]
    )
    assert answer == Answer(
        id="req",
        ok=True,
        data={
            "results": [
                {"id": "r1", "output": "a", "isError": False},
                {"id": "r2", "output": "b", "isError": True},
            ]
        },
    )


@pytest.mark.parametrize("builtins", [True, False])
async def test_a_relay_tool_named_like_a_builtin_fails_the_toolkit(builtins: bool) -> None:
    with pytest.raises(UsageError, match=r"collides with a built-in tool: \[bash\]"):
        await create_toolkit(
            extra_tools=[relay_tool("bash", "Run it elsewhere.")], builtins=builtins
        )


async def test_registering_a_relay_tool_named_like_a_builtin_fails_too() -> None:
    toolkit = await create_toolkit(builtins=False)
    with pytest.raises(UsageError, match=r"\[read\]"):
        toolkit.register(relay_tool("read", "Read elsewhere."))


async def test_an_ordinary_host_tool_may_still_take_a_builtin_name() -> None:
    def bash(command: str) -> str:
        return "ran"

    mine = define_tool(bash, description="Mine.")
    toolkit = await create_toolkit(extra_tools=[mine])
    assert toolkit.get("bash") is mine


def unanswered_calls(body: dict[str, Any], style: str) -> list[str]:
    """Tool-call ids on the wire that do not get exactly one result right after their turn."""
    messages = body["messages"]
    missing: list[str] = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        if style == "openai":
            ids = [c["id"] for c in message.get("tool_calls") or []]
            answered = []
            for later in messages[i + 1 :]:
                if later["role"] != "tool":
                    break
                answered.append(later["tool_call_id"])
        else:
            blocks = message["content"] if isinstance(message["content"], list) else []
            ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
            following = messages[i + 1]["content"] if i + 1 < len(messages) else []
            answered = [
                b["tool_use_id"]
                for b in (following if isinstance(following, list) else [])
                if b["type"] == "tool_result"
            ]
        missing += [cid for cid in ids if answered.count(cid) != 1]
    return missing


async def test_a_new_ask_after_a_halt_sends_one_result_for_every_tool_call(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(
        tool_calls(call("ship", {}, id="halt"), call("add", {"a": 1, "b": 2}, id="after")),
        text("Something else, then."),
    )
    async with client_for(scripted, style) as client:
        halted = await client.ask("ship", [Gate().tool, add], id="conv")
        assert halted.status == "pending"
        await client.ask("Never mind; something else.", [Gate().tool, add], id="conv")
    assert unanswered_calls(scripted.requests[1].body, style) == []


async def test_a_relay_call_on_a_stream_emits_pending_then_its_resolved_result(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("lookup", {"q": "x"}, id="r1")), text("ok"))
    answer = lambda r: answer_output(r.id, "relayed output")  # noqa: E731
    async with client_for(scripted, wait_for=answer) as client:
        events = [e async for e in client.stream("find", [relay_tool("lookup", "Look up.")])]
    assert [e["type"] for e in events[:3]] == ["tool_call", "pending", "tool_result"]
    assert events[1]["request"].kind == RELAY_KIND
    assert (events[2]["output"], events[2]["is_error"]) == ("relayed output", False)


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_run_cancelled_before_it_would_ask_never_asks_the_host(
    scripted: ScriptedModel, client_for: ClientFor, kind: str
) -> None:
    cancel = asyncio.Event()
    asked: list[str] = []

    @define_tool
    def ship(ctx: ToolContext | None = None) -> str | ToolResult:
        """Ship it (needs an approval); cancels the run as it suspends."""
        if ctx is None or ctx.answer is None:
            cancel.set()
            return pending(kind="approval", prompt="Ship it?")
        return "shipped"

    async def wait_async(request: Request) -> Answer:
        asked.append(request.id)
        return approve(request)

    def wait_sync(request: Request) -> Answer:
        asked.append(request.id)
        return approve(request)

    scripted.add(tool_calls(call("ship", {}, id="c1")), text("never"))
    wait_for = wait_async if kind == "async" else wait_sync
    async with client_for(scripted, wait_for=wait_for) as client:
        with pytest.raises(RunCancelled):
            await client.run("ship", [ship], cancel=cancel)
    assert asked == []  # no human was asked on behalf of a cancelled run
    assert len(scripted.requests) == 1


async def test_a_cancel_while_wait_for_waits_aborts_the_run(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    cancel = asyncio.Event()
    never = asyncio.Event()

    async def wait_for(request: Request) -> Answer:
        cancel.set()
        await never.wait()
        return approve(request)

    scripted.add(tool_calls(call("ship", {}, id="c1")), text("never"))
    async with client_for(scripted, wait_for=wait_for) as client:
        with pytest.raises(RunCancelled):
            await client.run("ship", [Gate().tool], cancel=cancel)
    assert len(scripted.requests) == 1


# -- pending() refuses what it cannot honour ----------------------------------------------


@pytest.mark.parametrize(
    "stamp", ["tomorrow", "2026-01-02T03:04:05", "2026-01-02", "", "12:00Z", "2026-13-01T00:00Z"]
)
def test_pending_refuses_an_expiry_that_is_not_an_aware_iso_timestamp(stamp: str) -> None:
    from toolnexus import UsageError, pending

    with pytest.raises(UsageError, match="expiresAt"):
        pending(kind="approval", prompt="ok?", expiresAt=stamp)


@pytest.mark.parametrize("stamp", ["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123+02:00"])
def test_pending_accepts_an_aware_iso_timestamp(stamp: str) -> None:
    from toolnexus import pending, pending_of

    request = pending_of(pending(kind="approval", prompt="ok?", expiresAt=stamp))
    assert request is not None
    assert request.expiresAt == stamp


@pytest.mark.parametrize(("kind", "prompt"), [("", "ok?"), ("approval", ""), ("  ", "ok?")])
def test_pending_refuses_an_empty_kind_or_prompt(kind: str, prompt: str) -> None:
    from toolnexus import UsageError, pending

    with pytest.raises(UsageError, match="must be a non-empty string"):
        pending(kind=kind, prompt=prompt)
