"""The A2A task cells of `bench_chaos`: children that serve the ticket toolkit over A2A and are
their own callers over loopback HTTP (raw JSON-RPC, the reference wire).

- **halt**: N ``SendMessage`` (blocking) at once, each in its own context ``ctx-<i>`` (so a
  caller that lost a reply can still find its task); each task must end ``input-required``;
- **follow-ups**: each task's follow-up, one at a time (``"yes"`` for even i, a data part
  ``{"ok": true}`` for odd i), each blocking until its task is ``completed``: the answer is
  recorded (``post_answer``), the service takes it and resumes the run;
- **recovery**: a fresh serving process — its task recovery (`TaskLife.recover`, at start and
  every ``recover_every``) finishes what was left — whose caller reads every task with
  ``GetTask`` until it is ``completed``, sending the follow-up of any task still waiting for
  input, polling any other.

The tasks and the store are the serving process's own (`toolkit.serve(..., client=...)`: the
tasks live in the client's SQLite file / Postgres schema, so a new process finds them).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import halted
import httpx

import toolnexus as tn
from toolnexus.serve.tasks_sql import sql_task_store

WAITING = ("input-required", "auth-required")
ENDED = ("completed", "failed", "canceled", "rejected")


@asynccontextmanager
async def serving(opts: Any, store: Any, effects: tn.Tool) -> AsyncIterator[str]:
    """The ticket toolkit served over A2A on 127.0.0.1:0; yields its URL."""
    async with halted.new_client(opts.model, store) as client:
        kit = await tn.create_toolkit(extra_tools=[effects], builtins=False)
        served = await kit.serve(
            "127.0.0.1:0",
            client=client,
            a2a={"name": "chaos", "description": "closes tickets"},
            lease_s=opts.lease,
            recover_every=0.2,
        )
        try:
            yield served.url
        finally:
            await served.stop()


async def rpc(http: httpx.AsyncClient, url: str, method: str, params: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    return (await http.post(url + "/", json=body)).json()


def message(i: int, *, task_id: str | None = None) -> dict[str, Any]:
    """SendMessage params: the ticket's first message, or task ``task_id``'s follow-up."""
    if task_id is None:
        parts: list[dict[str, Any]] = [{"kind": "text", "text": f"Close ticket T-{i}"}]
        ids = {"contextId": f"ctx-{i}"}
    else:
        yes = {"kind": "text", "text": "yes"}
        parts = [yes] if i % 2 == 0 else [{"kind": "data", "data": {"ok": True}}]
        ids = {"taskId": task_id}
    return {
        "message": {"role": "user", "messageId": uuid.uuid4().hex, "parts": parts, **ids},
        "configuration": {"blocking": True},
    }


def state_of(task: Any) -> str:
    return str(((task or {}).get("status") or {}).get("state") or "?")


def text_of(task: Any) -> str:
    artifacts = (task or {}).get("artifacts") or []
    return "".join(p.get("text", "") for a in artifacts for p in a.get("parts") or [])


async def child_halt(opts: Any, store: Any, effects: tn.Tool) -> dict[str, Any]:
    async with serving(opts, store, effects) as url, httpx.AsyncClient(timeout=60) as http:
        replies = await asyncio.gather(
            *(rpc(http, url, "SendMessage", message(i)) for i in range(opts.runs))
        )
    states = [state_of(r.get("result")) for r in replies]
    return {"halted": states.count("input-required"), "states": sorted(set(states))}


async def child_follow_ups(opts: Any, store: Any, effects: tn.Tool) -> dict[str, Any]:
    """Each task's follow-up, one at a time: exactly one run is ever between answer and end."""
    tasks: list[dict[str, Any]] = opts.id_list
    completed, errors = 0, []
    async with serving(opts, store, effects) as url, httpx.AsyncClient(timeout=60) as http:
        for t in tasks:
            reply = await rpc(http, url, "SendMessage", message(t["i"], task_id=t["task"]))
            if state_of(reply.get("result")) == "completed":
                completed += 1
            else:
                errors.append(reply.get("error") or state_of(reply.get("result")))
    return {"completed": completed, "errors": errors[:3]}


async def finish(http: httpx.AsyncClient, url: str, t: dict[str, Any], deadline: float) -> Any:
    """Read task ``t`` until it ends, sending its follow-up while it waits for input."""
    while True:  # read at least once, however late
        task = (await rpc(http, url, "GetTask", {"id": t["task"]})).get("result")
        state = state_of(task)
        if state in ENDED or time.monotonic() > deadline:
            break
        if state in WAITING:  # refused when someone answered meanwhile: read it again
            await rpc(http, url, "SendMessage", message(t["i"], task_id=t["task"]))
            continue
        await asyncio.sleep(0.05)
    return {"state": state_of(task), "text": text_of(task)}


async def child_recover(opts: Any, store: Any, effects: tn.Tool) -> dict[str, Any]:
    tasks: list[dict[str, Any]] = opts.id_list
    started = time.perf_counter()
    deadline = time.monotonic() + opts.timeout
    gate = asyncio.Semaphore(4)
    async with serving(opts, store, effects) as url, httpx.AsyncClient(timeout=60) as http:

        async def one(t: dict[str, Any]) -> Any:
            async with gate:
                return await finish(http, url, t, deadline)

        ended = await asyncio.gather(*(one(t) for t in tasks))
    return {
        "tasks": {t["task"]: e for t, e in zip(tasks, ended, strict=True)},
        "seconds": time.perf_counter() - started,
    }


async def tasks_in(store: Any) -> list[dict[str, Any]]:
    """Parent: every task the store holds, with the ticket of its context (``ctx-<i>``)."""
    tasks = sql_task_store(store)
    assert tasks is not None, "the A2A tasks live in the run store's database"
    found = await tasks.list(limit=1000)
    out = [
        {"i": int(t["contextId"].split("-")[1]), "task": t["id"], "context": t["contextId"]}
        for t in found
    ]
    return sorted(out, key=lambda t: t["i"])


async def tally(
    cell: Any,
    store: Any,
    tasks: list[dict[str, Any]],
    requests: dict[str, str],
    report: dict[str, Any] | None,
    executions: Counter[str],
) -> None:
    """Count per task (``requests``: its context → the request its run halted on):
    **settled** = ``completed`` with the final text (read back with GetTask), its request
    ``done`` and its conversation ending with that text; **lost** = not settled, or its tool
    never ran; **duplicated** = executions beyond one."""
    ended: dict[str, Any] = (report or {}).get("tasks") or {}
    if len(tasks) != len(requests):
        cell.problems.append(f"{len(tasks)} tasks in the store for {len(requests)} halted runs")
    for t in tasks:
        rid = requests.get(t["context"])
        record = await store.answer_record(rid) if rid else None
        shown = ended.get(t["task"]) or {}
        done = (
            shown.get("state") == "completed"
            and shown.get("text") == halted.FINAL
            and record is not None
            and record.status == "done"
            and await halted.ends_with(store, t["context"], halted.FINAL)
        )
        ran = executions[rid] if rid else 0
        cell.settled += done
        cell.lost += not done or ran == 0
        cell.duplicated += max(0, ran - 1)
        if not done:
            status = record.status if record is not None else "pending" if rid else "no request"
            cell.problems.append(
                f"task {t['i']} ({t['task'][:8]}): {shown.get('state', '?')}, its request"
                f" {rid} {status}, tool runs {ran}"
            )
    cell.executions = sum(executions[r] for r in requests.values())
