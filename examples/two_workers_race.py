"""Scale-out on PostgreSQL: two workers get the same answer at once; exactly one resumes the run.

    export "$(bash scripts/pg.sh start | tail -n 1)"    # or any TOOLNEXUS_PG_URL
    python examples/two_workers_race.py

A support run halts on a refund approval; its checkpoint goes to Postgres and the process that
started it is done with it. Two worker processes — two replicas behind a load balancer — serve
the approvals webhook (``POST /answer``). The chat platform delivers the human's "approve" twice,
to both workers at the same moment (a retried delivery, say). Both call ``client.resume``; the
store takes the answer with one conditional update, so exactly one worker resumes the run and
refunds, and the other gets `AnswerConflict` naming the winner. Nothing is refunded twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from typing import Any

import aiohttp
from _model import llm, tool_outputs
from aiohttp import web

from toolnexus import (
    Answer,
    AnswerConflict,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

WORKERS = ("worker-a", "worker-b")
SELF = os.path.abspath(__file__)
PG_HELP = (
    "two_workers_race.py needs PostgreSQL: set TOOLNEXUS_PG_URL, e.g.\n"
    '  export "$(bash scripts/pg.sh start | tail -n 1)"'
)
WHO = {"name": "the starter"}  # which process runs the tool (set in the workers)


@define_tool
def refund(order: str, amount: float, ctx: ToolContext | None = None) -> str | ToolResult:
    """Refund an order (a human approves first)."""
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt=f"Refund {amount:.2f} EUR on order {order}?")
    if not ctx.answer.ok:
        return "refund declined"
    return f"refunded {amount:.2f} EUR on order {order} (by {WHO['name']})"


def brain(request: RecordedRequest) -> Reply:
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(call("refund", {"order": "4021", "amount": 35.5}))
    return text(f"Done: {seen[-1]}.")


# -- a worker: one replica serving the approvals webhook ------------------------------------


async def worker(name: str, endpoint: dict[str, Any]) -> None:
    WHO["name"] = name
    toolkit = await create_toolkit(extra_tools=[refund], builtins=False)
    async with create_client(**endpoint, store=os.environ["TOOLNEXUS_PG_URL"]) as client:
        await client.list_pending(limit=1)  # connected (and migrated) before it says ready

        async def on_answer(request: web.Request) -> web.Response:
            body: dict[str, Any] = await request.json()
            answer = Answer(id=body["request_id"], ok=bool(body["approved"]))
            try:
                done = await client.resume(toolkit, answer, answered_by=name)
            except AnswerConflict as exc:
                reply = {"worker": name, "resumed": False, "error": str(exc)}
                return web.json_response({**reply, "answered_by": exc.answered_by}, status=409)
            reply = {"worker": name, "resumed": True, "status": done.status, "text": done.text}
            return web.json_response(reply)

        app = web.Application()
        app.router.add_post("/answer", on_answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(f"ready http://127.0.0.1:{port}/answer", flush=True)
        try:
            await asyncio.to_thread(sys.stdin.read)  # serve until the parent closes our stdin
        finally:
            await runner.cleanup()


# -- the demo: halt, start two workers, deliver the same answer to both -----------------------


async def start_worker(name: str, endpoint: dict[str, Any]) -> tuple[Any, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        SELF,
        "worker",
        name,
        json.dumps(endpoint),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
    if not line.startswith("ready "):
        raise RuntimeError(f"{name} did not start (said {line!r})")
    return proc, line.removeprefix("ready ")


async def deliver(
    http: aiohttp.ClientSession, name: str, url: str, payload: dict[str, Any]
) -> dict[str, Any]:
    """POST the webhook payload to one worker; its JSON reply (or what went wrong)."""
    async with http.post(url, json=payload) as response:
        if response.content_type == "application/json":
            return await response.json()
        error = f"HTTP {response.status}: {await response.text()}"
        return {"worker": name, "resumed": False, "error": error, "answered_by": None}


async def main() -> int:
    if not os.environ.get("TOOLNEXUS_PG_URL"):
        print(PG_HELP, file=sys.stderr)
        return 2
    toolkit = await create_toolkit(extra_tools=[refund], builtins=False)
    async with (
        llm(brain) as endpoint,
        create_client(**endpoint, store=os.environ["TOOLNEXUS_PG_URL"]) as client,
    ):
        conversation = f"support-{uuid.uuid4().hex[:8]}"
        halted = await client.ask("Refund order 4021, it arrived broken.", toolkit, id=conversation)
        if halted.pending is None:
            print(f"the run did not halt: {halted.status}: {halted.text}")
            return 1
        request = halted.pending
        print(f"halted: status={halted.status}, request {request.id}: {request.prompt}")

        workers = [await start_worker(name, endpoint) for name in WORKERS]
        print(f"{' and '.join(WORKERS)} are up; the webhook delivers the same answer to both")
        payload = {"request_id": request.id, "approved": True}
        try:
            async with aiohttp.ClientSession() as http:
                replies = await asyncio.gather(
                    *(
                        deliver(http, name, url, payload)
                        for name, (_, url) in zip(WORKERS, workers, strict=True)
                    )
                )
        finally:
            for proc, _ in workers:
                assert proc.stdin is not None
                proc.stdin.close()
                await proc.wait()

        for reply in replies:
            if reply["resumed"]:
                outcome = f"status={reply['status']}: {reply['text']}"
                print(f"{reply['worker']}: resumed the run -> {outcome}")
            else:
                print(f"{reply['worker']}: AnswerConflict: {reply['error']}")
        winners = [r["worker"] for r in replies if r["resumed"]]
        losers = [r for r in replies if not r["resumed"]]
        record = await client.run_store.answer_record(request.id)
        if (
            len(winners) != 1
            or len(losers) != 1
            or losers[0]["answered_by"] != winners[0]
            or record is None
            or record.answered_by != winners[0]
        ):
            print(f"NOT exactly once: winners {winners}, record {record}")
            return 1
        print(
            f"exactly one resume: {winners[0]} (the store records the answer by "
            f"{record.answered_by}, approved call {record.digest[:12]}…)"
        )
        return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        asyncio.run(worker(sys.argv[2], json.loads(sys.argv[3])))
    else:
        sys.exit(asyncio.run(main()))
