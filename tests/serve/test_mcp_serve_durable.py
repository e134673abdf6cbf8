"""The durable 2026-07-28 path: a suspended served call halts in the run store, and the client's
retry (its answer + the ``requestState`` token) resumes it exactly once — also in a fresh server
process, and against forged, stale, racing and repeated retries.

The SDK client is driven by hand (``session.call_tool(..., allow_input_required=True)``), as a
client that persists the token would.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult, InputRequiredResult
from serve_support import client, replying, serving

from toolnexus import (
    Answer,
    InMemoryRunStore,
    ToolContext,
    ToolResult,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.serve import mcp_app

MODERN = "2026-07-28"
KEY = "toolnexus"
HELPER = Path(__file__).parents[1] / "helpers" / "mcp_serve_proc.py"
executions: list[str] = []
sync: dict[str, asyncio.Event] = {}


@define_tool
def refund(order: str, ctx: ToolContext) -> str | ToolResult:
    """Refund an order (approval first)."""
    if ctx.answer is None:
        return pending(kind="approval", prompt=f"Refund {order}?")
    executions.append(order)
    return f"refunded {order}"


@define_tool
async def slow_refund(order: str, ctx: ToolContext) -> str | ToolResult:
    """Like refund, but the approved run waits until the test lets it finish."""
    if ctx.answer is None:
        return pending(kind="approval", prompt=f"Refund {order} slowly?")
    sync["entered"].set()
    await sync["gate"].wait()
    executions.append(order)
    return f"refunded {order} slowly"


@define_tool
def late(ctx: ToolContext) -> str | ToolResult:
    """Suspends on a request that has already expired."""
    if ctx.answer is None:
        return pending(kind="approval", prompt="Too late?", expiresAt="2000-01-01T00:00:00Z")
    executions.append("late")
    return "ran late"


def accept(content: dict[str, Any] | None = None) -> dict[str, Any]:
    return {KEY: ElicitResult(action="accept", content=content)}


async def _toolkit():
    return await create_toolkit(extra_tools=[refund, slow_refund, late], builtins=False)


def _text(result: Any) -> str:
    return "".join(part.text for part in result.content)


async def _halt(c: Any, name: str, args: dict[str, Any]) -> InputRequiredResult:
    first = await c.session.call_tool(name, args, allow_input_required=True)
    assert isinstance(first, InputRequiredResult), first
    return first


async def test_a_halted_call_is_stored_and_resumed_once_by_the_retry():
    executions.clear()
    store = InMemoryRunStore()
    events: list[dict[str, Any]] = []
    app = mcp_app(await _toolkit(), store=store, on_call=events.append)
    async with serving(app) as url, client(url, MODERN, replying("accept")) as c:
        first = await _halt(c, "refund", {"order": "A-1"})
        (listed,) = await store.list_pending()
        assert (listed.tool, listed.kind, listed.prompt) == ("refund", "approval", "Refund A-1?")
        assert first.input_requests is not None
        asked = first.input_requests[KEY]
        assert asked.params.message == "Refund A-1?"  # pyright: ignore[reportAttributeAccessIssue]
        assert executions == []
        done = await c.session.call_tool(
            "refund",
            {"order": "A-1"},
            input_responses=accept(),
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert _text(done) == "refunded A-1"
        again = await c.session.call_tool(
            "refund",
            {"order": "A-1"},
            input_responses=accept(),
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert _text(again) == "refunded A-1"  # the recorded result, sent again
        with pytest.raises(MCPError) as caught:
            await c.session.call_tool(
                "refund",
                {"order": "A-1"},
                input_responses={KEY: ElicitResult(action="decline")},
                request_state=first.request_state,
            )
    assert executions == ["A-1"]
    assert caught.value.error.code == -32600
    assert "already answered by mcp" in caught.value.error.message
    record = await store.answer_record(listed.request_id)
    assert record is not None
    assert record.status == "done"
    assert record.answered_by == "mcp:mcp"
    assert await store.list_pending() == []
    assert [e["pending"] for e in events] == [True, False, False, False]
    assert [e["is_error"] for e in events] == [False, False, False, True]


async def test_forged_and_mismatched_tokens_are_refused_and_change_nothing():
    executions.clear()
    store = InMemoryRunStore()
    app = mcp_app(await _toolkit(), store=store)
    async with serving(app) as url, client(url, MODERN, replying("accept")) as c:
        first = await _halt(c, "refund", {"order": "B-2"})
        token = first.request_state
        assert token is not None
        rid = token.split(".")[1]
        forged = [
            "hello",
            "tnx1.",
            "tnx1.pnd-0-0-00000000.abc",
            f"tnx1.{rid}.{'A' * 43}",
            token + "x",
            token.replace("tnx1.", "tnx2."),
        ]
        for bad in forged:
            with pytest.raises(MCPError) as caught:
                await c.session.call_tool(
                    "refund", {"order": "B-2"}, input_responses=accept(), request_state=bad
                )
            assert caught.value.error.code == -32602, bad
            assert caught.value.error.message == "Invalid or expired requestState"
        for name, args in (("refund", {"order": "other"}), ("late", {})):
            with pytest.raises(MCPError) as caught:
                await c.session.call_tool(name, args, input_responses=accept(), request_state=token)
            assert caught.value.error.message == "Invalid or expired requestState"
        assert [e.request_id for e in await store.list_pending()] == [rid]
        assert executions == []
        done = await c.session.call_tool(
            "refund", {"order": "B-2"}, input_responses=accept(), request_state=token
        )
    assert _text(done) == "refunded B-2"
    assert executions == ["B-2"]


async def test_two_retries_racing_run_the_tool_once():
    executions.clear()
    sync["gate"], sync["entered"] = asyncio.Event(), asyncio.Event()
    store = InMemoryRunStore()
    app = mcp_app(await _toolkit(), store=store)
    args = {"order": "C-3"}
    async with serving(app) as url:
        async with (
            client(url, MODERN, replying("accept")) as a,
            client(url, MODERN, replying("accept")) as b,
        ):
            first = await _halt(a, "slow_refund", args)
            token = first.request_state
            winner = asyncio.create_task(
                a.session.call_tool(
                    "slow_refund", args, input_responses=accept(), request_state=token
                )
            )
            await asyncio.wait_for(sync["entered"].wait(), 10)
            with pytest.raises(MCPError) as caught:
                await b.session.call_tool(
                    "slow_refund", args, input_responses=accept(), request_state=token
                )
            assert caught.value.error.code == -32600
            assert "is being answered right now" in caught.value.error.message
            sync["gate"].set()
            done = await asyncio.wait_for(winner, 10)
            replay = await b.session.call_tool(
                "slow_refund", args, input_responses=accept(), request_state=token
            )
    assert _text(done) == _text(replay) == "refunded C-3 slowly"
    assert executions == ["C-3"]


async def test_a_retry_without_an_answer_is_asked_again_with_the_same_token():
    store = InMemoryRunStore()
    app = mcp_app(await _toolkit(), store=store)
    async with serving(app) as url, client(url, MODERN, replying("accept")) as c:
        first = await _halt(c, "refund", {"order": "D-4"})
        again = await c.session.call_tool(
            "refund", {"order": "D-4"}, request_state=first.request_state, allow_input_required=True
        )
    assert isinstance(again, InputRequiredResult)
    assert again.request_state == first.request_state
    assert len(await store.list_pending()) == 1


async def test_an_answer_recorded_by_an_operator_is_applied_on_the_next_retry():
    executions.clear()
    store = InMemoryRunStore()
    app = mcp_app(await _toolkit(), store=store)
    async with serving(app) as url, client(url, MODERN, replying("accept")) as c:
        first = await _halt(c, "refund", {"order": "E-5"})
        (entry,) = await store.list_pending()
        await store.post_answer(
            entry.request_id, Answer(id=entry.request_id, ok=True), answered_by="ops"
        )
        done = await c.session.call_tool(
            "refund", {"order": "E-5"}, request_state=first.request_state
        )
    assert _text(done) == "refunded E-5"
    record = await store.answer_record(entry.request_id)
    assert record is not None
    assert (record.status, record.answered_by) == ("done", "ops")


async def test_an_operator_cannot_edit_the_arguments_of_a_clients_call():
    from toolnexus import InvalidAnswer, edited_arguments_problem

    executions.clear()
    store = InMemoryRunStore()
    app = mcp_app(await _toolkit(), store=store)
    async with serving(app) as url, client(url, MODERN, replying("accept")) as c:
        first = await _halt(c, "refund", {"order": "E-6"})
        (entry,) = await store.list_pending()
        rid = entry.request_id
        halted = await store.load_halt(rid)
        assert edited_arguments_problem(halted, {"order": "X"}) == (
            'the call of tool "refund" takes no edited arguments'
        )
        edit = Answer(id=rid, ok=True, data={"arguments": {"order": "X"}})
        with pytest.raises(InvalidAnswer, match="takes no edited arguments"):
            await store.post_answer(rid, edit, answered_by="ops")
        assert await store.answer_record(rid) is None
        done = await c.session.call_tool(
            "refund", {"order": "E-6"}, input_responses=accept(), request_state=first.request_state
        )
    assert _text(done) == "refunded E-6"
    assert executions == ["E-6"]


async def test_a_cancelled_call_refuses_the_retry_and_stays_cancelled():
    executions.clear()
    store = InMemoryRunStore()
    app = mcp_app(await _toolkit(), store=store)
    async with serving(app) as url, client(url, MODERN, replying("accept")) as c:
        first = await _halt(c, "refund", {"order": "F-6"})
        (entry,) = await store.list_pending()
        await store.cancel(entry.request_id, reason="fraud", answered_by="ops")
        with pytest.raises(MCPError) as caught:
            await c.session.call_tool(
                "refund",
                {"order": "F-6"},
                input_responses=accept(),
                request_state=first.request_state,
            )
    assert caught.value.error.code == -32602  # its token can no longer be checked
    assert executions == []
    record = await store.answer_record(entry.request_id)
    assert record is not None
    assert record.status == "cancelled"


async def test_a_late_answer_is_the_expired_decline():
    executions.clear()
    store = InMemoryRunStore()
    app = mcp_app(await _toolkit(), store=store)
    async with serving(app) as url, client(url, MODERN, replying("accept")) as c:
        first = await _halt(c, "late", {})
        assert (first.meta or {}).get("expiresAt") == "2000-01-01T00:00:00Z"
        done = await c.session.call_tool(
            "late", {}, input_responses=accept(), request_state=first.request_state
        )
    assert (_text(done), done.is_error) == ("declined/expired: Too late?", True)
    assert executions == []
    (record,) = [await store.answer_record(first.request_state.split(".")[1])]  # pyright: ignore[reportOptionalMemberAccess]
    assert record is not None
    assert record.status == "expired"


# -- across a restart -------------------------------------------------------------------------


def _start(
    store: str, ledger: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), store, str(ledger)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("PORT "), f"the serving process did not start: {line!r}"
    return proc, f"http://127.0.0.1:{int(line.split()[1])}"


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_call_halted_by_a_dead_process_is_resumed_once_by_a_new_one(
    backend, tmp_path, procs, request
):
    store = (
        f"sqlite:///{tmp_path / 'state.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    ledger = tmp_path / "ledger.txt"
    first_proc, first_url = _start(store, ledger)
    procs.append(first_proc)
    async with client(first_url, MODERN, replying("accept")) as c:
        halted = await _halt(c, "charge", {"amount": 42})
    first_proc.kill()  # no shutdown: the halt must already be durable
    first_proc.wait(timeout=10)

    second_proc, second_url = _start(store, ledger)
    procs.append(second_proc)
    async with client(second_url, MODERN, replying("accept")) as c:
        done = await c.session.call_tool(
            "charge", {"amount": 42}, input_responses=accept(), request_state=halted.request_state
        )
        again = await c.session.call_tool(
            "charge", {"amount": 42}, input_responses=accept(), request_state=halted.request_state
        )
        with pytest.raises(MCPError):
            await c.session.call_tool(
                "charge",
                {"amount": 43},
                input_responses=accept(),
                request_state=halted.request_state,
            )
    assert _text(done) == _text(again) == "charged 42 EUR"
    assert ledger.read_text().splitlines() == ["charged 42 ok=True"]


async def _retry_that_dies(url: str, name: str, args: dict[str, Any]) -> str:
    """Halt a call, then retry it with an answer on a server that dies mid-resume; the token."""
    token = ""
    try:
        async with client(url, MODERN, replying("accept")) as c:
            token = (await _halt(c, name, args)).request_state or ""
            await c.session.call_tool(name, args, input_responses=accept(), request_state=token)
    except Exception:  # the server died mid-request: the client's transport fails
        assert token
        return token
    raise AssertionError("the server did not die mid-resume")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_retry_whose_process_died_mid_resume_is_taken_over_once_the_short_lease_lapses(
    backend, tmp_path, procs, request
):
    """``mcp_app(lease_s=...)``: the claim a dead retry left holds the call only that long (the
    default, 300 s, would refuse every retry below for five minutes)."""
    store = (
        f"sqlite:///{tmp_path / 'state.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    ledger = tmp_path / "ledger.txt"
    env = {"MCP_TEST_LEASE_S": "1", "MCP_TEST_DIE_ONCE": str(tmp_path / "died")}
    first_proc, first_url = _start(store, ledger, env)
    procs.append(first_proc)
    args = {"amount": 7}
    token = await _retry_that_dies(first_url, "charge", args)
    assert first_proc.wait(timeout=10) == 3
    assert not ledger.exists()

    second_proc, second_url = _start(store, ledger, env)
    procs.append(second_proc)
    refusals: list[str] = []
    async with client(second_url, MODERN, replying("accept")) as c:
        done = None
        for _ in range(200):  # a client retrying while the dead claim holds (bounded)
            try:
                done = await c.session.call_tool(
                    "charge", args, input_responses=accept(), request_state=token
                )
                break
            except MCPError as refused:
                refusals.append(f"{refused.error.code} {refused.error.message}")
                await asyncio.sleep(0.05)
    assert all(r.startswith("-32600") and "being answered right now" in r for r in refusals)
    assert done is not None, "the dead retry's claim never lapsed"
    assert _text(done) == "charged 7 EUR"
    assert ledger.read_text().splitlines() == ["charged 7 ok=True"]


async def test_a_toolnexus_client_answers_our_input_required_round_trip(scripted, client_for):
    """Both ends ours: a run whose MCP tool is our served ``refund``. The toolnexus MCP client
    declares elicitation only with a ``wait_for`` (CONTRACT 3.10), so it answers inline; the
    served call still halts in our store between the two requests and runs once."""
    from toolnexus.testing import call, text, tool_calls

    executions.clear()
    asked: list[str] = []

    def wait_for(request: Any) -> Answer:
        asked.append(request.prompt)
        return Answer(id=request.id, ok=True)

    store = InMemoryRunStore()
    events: list[dict[str, Any]] = []
    app = mcp_app(await _toolkit(), {"name": "billing"}, store=store, on_call=events.append)
    async with serving(app) as url:
        remote = await create_toolkit(
            {"mcpServers": {"billing": {"url": f"{url}/mcp"}}}, builtins=False, wait_for=wait_for
        )
        try:
            scripted.add(tool_calls(call("billing_refund", {"order": "Z-9"})))
            scripted.add(text("Refund done."))
            async with client_for(scripted) as run_client:
                done = await run_client.run("Refund Z-9", remote)
        finally:
            await remote.close()
    assert done.status == "done"
    assert done.tool_calls[-1].output == "refunded Z-9"
    assert asked == ["Refund Z-9?"]
    assert [e["pending"] for e in events] == [True, False]  # halted, then resumed by the retry
    assert executions == ["Z-9"]
    assert await store.list_pending() == []


@define_tool
def two_step(order: str, ctx: ToolContext) -> str | ToolResult:
    """Asks to approve, then which warehouse (a new question after the first answer)."""
    if ctx.answer is None:
        return pending(kind="approval", prompt=f"Ship {order}?")
    if ctx.request is not None and ctx.request.kind == "approval":
        executions.append(f"asked warehouse for {order}")
        return pending(kind="question", prompt="Which warehouse?", data={"options": ["N", "S"]})
    executions.append(f"shipped {order}")
    return f"shipped {order} from {(ctx.answer.data or {}).get('text')}"


async def test_a_retry_repeated_after_the_call_asked_again_gets_the_same_question_and_token():
    """A client whose connection dropped repeats its retry: it is answered with the first
    reply — the follow-up question, with the same token — and applies nothing again."""
    executions.clear()
    store = InMemoryRunStore()
    kit = await create_toolkit(extra_tools=[two_step], builtins=False)
    args = {"order": "F-7"}
    async with serving(mcp_app(kit, store=store)) as url:
        async with client(url, MODERN, replying("accept")) as c:
            first = await _halt(c, "two_step", args)
            retry = {"input_responses": accept(), "request_state": first.request_state}
            asked = await c.session.call_tool("two_step", args, allow_input_required=True, **retry)
            assert isinstance(asked, InputRequiredResult)
            again = await c.session.call_tool("two_step", args, allow_input_required=True, **retry)
            assert isinstance(again, InputRequiredResult)
            assert again.request_state == asked.request_state  # the same token, re-derived
            assert executions == ["asked warehouse for F-7"]  # the tool did not run again
            done = await c.session.call_tool(
                "two_step",
                args,
                input_responses=accept({"text": "S"}),
                request_state=asked.request_state,
            )
    assert _text(done) == "shipped F-7 from S"
    assert executions == ["asked warehouse for F-7", "shipped F-7"]


async def test_a_retry_with_another_answer_than_one_recorded_elsewhere_names_who():
    executions.clear()
    store = InMemoryRunStore()
    app = mcp_app(await _toolkit(), store=store)
    async with serving(app) as url, client(url, MODERN, replying("accept")) as c:
        first = await _halt(c, "refund", {"order": "G-8"})
        (entry,) = await store.list_pending()
        rid = entry.request_id
        await store.post_answer(rid, Answer(id=rid, ok=False, reason="declined"), answered_by="ops")
        with pytest.raises(MCPError) as caught:
            await c.session.call_tool(
                "refund",
                {"order": "G-8"},
                input_responses=accept(),
                request_state=first.request_state,
            )
        assert caught.value.error.code == -32600
        assert "already answered by ops" in caught.value.error.message
        done = await c.session.call_tool(
            "refund", {"order": "G-8"}, request_state=first.request_state
        )  # without an answer: the recorded one (the decline) applies
    assert _text(done) == "declined/expired: Refund G-8?"
    assert executions == []
