"""The served MCP call cells of `bench_chaos`: children that serve the ticket toolkit over MCP
(`toolkit.serve(..., mcp=...)`, the halted calls in the client's store, ``lease_s`` short) and
are their own 2026-07-28 client (the mcp SDK's ``Client``, declaring elicitation).

Two flows, one kind each:

- ``mcp-take`` — answered elsewhere: an answer process records an approval for every pending
  request (``client.answer``, as an inbox would); the client retries each call *without*
  ``inputResponses``, and the retry takes the recorded answer (T5);
- ``mcp-claim`` — the retry answers: it carries an accept, and claims the call with it (T4).

The phases: **halt** — N calls at once, each answered input-required with a ``requestState``
token, appended to the calls file (``<i> <token>``, fsynced) as it arrives; **retries** — each
call retried with its token, one at a time (exactly one call is ever between claim and
settle); **recovery** — a fresh serving process whose client retries each call until it
returns its result: a call whose halt reply never arrived (no token) is called afresh, as a
client would; a refusal while a killed retry's claim holds (``-32600``) is retried; a retry of a
call that settled gets the recorded result again, without running the tool.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import halted
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult, InputRequiredResult

import toolnexus as tn

TOOL = "close_ticket"
ACCEPT = {"toolnexus": ElicitResult(action="accept")}
MODERN = "2026-07-28"


async def _elicit(ctx: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept")  # declared only: every answer goes in a retry


@asynccontextmanager
async def serving(opts: Any, store: Any, effects: tn.Tool) -> AsyncIterator[Client]:
    """The ticket toolkit served over MCP on 127.0.0.1:0, and a client of it."""
    async with halted.new_client(opts.model, store) as client:
        kit = await tn.create_toolkit(extra_tools=[effects], builtins=False)
        served = await kit.serve(
            "127.0.0.1:0", client=client, mcp={"name": "chaos"}, lease_s=opts.lease
        )
        try:
            async with Client(
                f"{served.url}/mcp", mode=MODERN, elicitation_callback=_elicit
            ) as mcp:
                yield mcp
        finally:
            await served.stop()


def tokens(path: Path) -> dict[int, list[str]]:
    """Each call's tokens, in the order they were given (the calls file)."""
    out: dict[int, list[str]] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        i, token = line.split()
        out.setdefault(int(i), []).append(token)
    return out


def request_of(token: str) -> str:
    """The request id a ``tnx1.<request id>.<secret>`` token names."""
    return token[len("tnx1.") :].rpartition(".")[0]


async def call(mcp: Client, i: int, token: str | None = None, *, answer: bool = False) -> Any:
    return await mcp.session.call_tool(
        TOOL,
        {"ticket": f"T-{i}"},
        input_responses=ACCEPT if answer else None,
        request_state=token,
        allow_input_required=True,
    )


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def child_halt(opts: Any, store: Any, effects: tn.Tool) -> dict[str, Any]:
    path = Path(opts.calls)

    async def one(mcp: Client, i: int) -> bool:
        got = await call(mcp, i)
        if isinstance(got, InputRequiredResult) and got.request_state:
            halted.append_line(path, f"{i} {got.request_state}", sync=True)
            return True
        return False

    async with serving(opts, store, effects) as mcp:
        asked = await asyncio.gather(*(one(mcp, i) for i in range(opts.runs)))
    return {"halted": sum(asked)}


async def child_retries(opts: Any, store: Any, effects: tn.Tool) -> dict[str, Any]:
    """Each call retried with its token, one at a time (the claim flow with its answer)."""
    held = tokens(Path(opts.calls))
    results, errors = 0, []
    async with serving(opts, store, effects) as mcp:
        for i in sorted(held):
            try:
                got = await call(mcp, i, held[i][-1], answer=opts.kind == "mcp-claim")
            except MCPError as exc:
                errors.append(f"{i}: {exc.error.code} {exc.error.message}")
                continue
            results += text_of(got) == f"T-{i} closed"
    return {"results": results, "errors": errors[:3]}


async def finish(
    mcp: Client, i: int, token: str | None, path: Path, deadline: float, *, claim: bool
) -> Any:
    """Retry call ``i`` until it returns its result (see the module docs); ``claim``: every
    retry carries the answer."""
    answer = claim
    refused = ""
    while time.monotonic() < deadline:
        try:
            if token is None:
                got = await call(mcp, i)  # its halt's reply was lost: the call afresh
            else:
                got = await call(mcp, i, token, answer=answer)
        except MCPError as exc:
            refused = f"{exc.error.code} {exc.error.message}"
            if exc.error.code != -32600:
                break
            await asyncio.sleep(0.05)  # a killed retry's claim holds until its lease lapses
            continue
        if isinstance(got, InputRequiredResult):
            if got.request_state != token:
                token = got.request_state
                halted.append_line(path, f"{i} {token}", sync=True)
            answer = True  # nobody answered it elsewhere: this client answers
            continue
        return {"text": text_of(got)}
    return {"text": "", "refused": refused}


async def child_recover(opts: Any, store: Any, effects: tn.Tool) -> dict[str, Any]:
    path = Path(opts.calls)
    held = tokens(path)
    started = time.perf_counter()
    deadline = time.monotonic() + opts.timeout
    gate = asyncio.Semaphore(4)
    async with serving(opts, store, effects) as mcp:

        async def one(i: int) -> Any:
            async with gate:
                token = held[i][-1] if i in held else None
                return await finish(mcp, i, token, path, deadline, claim=opts.kind == "mcp-claim")

        ended = await asyncio.gather(*(one(i) for i in range(opts.runs)))
    return {"calls": ended, "seconds": time.perf_counter() - started}


async def tally(
    cell: Any,
    store: Any,
    runs: int,
    checkpoints: dict[str, Any],
    path: Path,
    report: dict[str, Any] | None,
    executions: Counter[str],
) -> None:
    """Count per call: **settled** = the client got ``T-<i> closed`` and the call's last
    request is ``done`` with that result recorded; **lost** = not settled, or its tool never
    ran; **duplicated** = executions beyond one, over every request of the call (a stranded
    halt's too). **Stranded** = halts in the store whose token never reached the client (the
    process died between the save and the reply): no retry can name them; they stay in the
    store for an operator (docs/serving-mcp.md), their tool never runs."""
    held = tokens(path)
    known = {request_of(token) for given in held.values() for token in given}
    stranded: Counter[int] = Counter()
    for rid, checkpoint in checkpoints.items():
        if rid not in known:
            ticket = json.loads(checkpoint.outstanding[0].arguments)["ticket"]
            cell.stranded += 1
            stranded[int(ticket.split("-")[1])] += executions[rid]
    calls: list[Any] = (report or {}).get("calls") or [{}] * runs
    for i in range(runs):
        rids = list(dict.fromkeys(request_of(token) for token in held.get(i, [])))
        record = await store.answer_record(rids[-1]) if rids else None
        outcome = (record.outcome or {}) if record is not None else {}
        done = (
            calls[i].get("text") == f"T-{i} closed"
            and record is not None
            and record.status == "done"
            and outcome.get("result") is not None
        )
        ran = sum(executions[r] for r in rids) + stranded[i]
        cell.settled += done
        cell.lost += not done or ran == 0
        cell.duplicated += max(0, ran - 1)
        cell.executions += ran
        if not done:
            status = record.status if record is not None else "pending"
            cell.problems.append(
                f"call {i}: {calls[i]}, its request {rids[-1] if rids else None} {status},"
                f" tool runs {ran}"
            )


def requests_in(path: Path) -> set[str]:
    """Every request a token in the calls file names."""
    return {request_of(token) for given in tokens(path).values() for token in given}
