"""An approvals inbox over a durable store: runs halt, a person answers on a web page, a
worker finishes the runs.

    python examples/inbox_approvals.py          # the whole story, scripted, then exits
    python examples/inbox_approvals.py serve    # keep the page up: open it and answer yourself

Two refunds halt on an approval and their checkpoints go to a SQLite file. The inbox
(`toolnexus.inbox.inbox_app`) serves the pending requests on loopback; it has no toolkit and
no model — it only records answers in the store, exactly once. Here a scripted "person" signs
in with a token, approves the first refund *with an edited amount* and declines the second
with a reason, over plain HTTP; then a worker that holds the toolkit (`client.worker`) resumes
both runs. The page follows each run to its end, and the history keeps who decided what.

In ``serve`` mode the worker keeps running: open the printed address, sign in with the printed
token, and answer the requests yourself (Ctrl-C stops).
"""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

import aiohttp
from _model import llm, tool_outputs

from toolnexus import (
    Client,
    ToolContext,
    Toolkit,
    ToolResult,
    create_client,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.inbox import inbox_app
from toolnexus.serve.server import start
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

TOKEN = "demo-token-ana-0123"


@define_tool
def refund(order: str, amount: float, ctx: ToolContext | None = None) -> str | ToolResult:
    """Refund an order (needs a human's approval)."""
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt=f"Refund {amount:.2f} EUR on order {order}?")
    if not ctx.answer.ok:
        return f"refund of order {order} declined"
    return f"refunded {amount:.2f} EUR on order {order}"


def brain(request: RecordedRequest) -> Reply:
    """The scripted model: ask for the refund named in the prompt, then report."""
    seen = tool_outputs(request)
    if not seen:
        order = str(request.body["messages"][-1]["content"]).split()[-1]
        return tool_calls(call("refund", {"order": order, "amount": 42.0}, id="r1"))
    return text(f"Done: {seen[-1]}.")


_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


async def person(base: str, ids: dict[str, str]) -> None:
    """What a person does in the browser, as plain form posts."""
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1
    async with aiohttp.ClientSession(base_url=base, cookie_jar=jar) as http:
        async with http.get("/login") as page:
            nonce = _CSRF.search(await page.text())
        assert nonce is not None
        form = {"csrf": nonce.group(1), "token": TOKEN}
        async with http.post("/login", data=form, allow_redirects=False) as done:
            assert done.status == 303
        async with http.get("/") as home:
            listing = await home.text()
        csrf = _CSRF.search(listing)
        assert csrf is not None
        waiting = re.findall(r'data-request-id="([^"]+)"', listing)
        print(f"inbox lists {len(waiting)} pending requests")
        edit = {
            "csrf": csrf.group(1),
            "action": "approve_edited",
            "arguments": '{"order": "A-1001", "amount": 40.0}',
        }
        async with http.post(
            f"/requests/{ids['A-1001']}/answer", data=edit, allow_redirects=False
        ) as r:
            print(f"approve A-1001 with amount 40: HTTP {r.status}")
        no = {"csrf": csrf.group(1), "action": "decline", "reason": "duplicate request"}
        async with http.post(
            f"/requests/{ids['A-1002']}/answer", data=no, allow_redirects=False
        ) as r:
            print(f"decline A-1002: HTTP {r.status}")
        async with http.post(
            f"/requests/{ids['A-1002']}/answer", data=no, allow_redirects=False
        ) as r:
            print(f"decline A-1002 again: HTTP {r.status} (the first answer stands)")


async def follow(base: str, ids: dict[str, str]) -> None:
    """The page following each run, through its JSON status route."""
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(base_url=base, headers=headers) as http:
        for order, rid in ids.items():
            async with http.get(f"/api/requests/{rid}") as r:
                status = (await r.json())["status"]
            outcome = status["outcome"] or {}
            print(
                f"{order}: {status['status']}, {status['decision']} by {status['answered_by']}"
                f" — {outcome.get('text')}"
            )
        async with http.get("/history.csv") as r:
            rows = (await r.text()).strip().splitlines()
        print(f"history: {len(rows) - 1} rows, header {rows[0]}")


async def main(mode: str) -> None:
    db = Path("inbox_demo.db")
    for stale in (db, Path("inbox_demo.db-wal"), Path("inbox_demo.db-shm")):
        stale.unlink(missing_ok=True)
    store = f"sqlite:///{db}"
    toolkit = await create_toolkit(extra_tools=[refund], builtins=False)
    async with llm(brain) as options, create_client(**options, store=store) as client:
        ids: dict[str, str] = {}
        for order in ("A-1001", "A-1002"):
            result = await client.ask(f"Refund order {order}", toolkit, id=f"order-{order}")
            assert result.pending is not None
            ids[order] = result.pending.id
            print(f"halted: {result.pending.prompt}")
        inbox = inbox_app(client.run_store, users={"ana": TOKEN}, poll_interval=0.2)
        port = "8700" if mode == "serve" else "0"
        served = await start(inbox, f"127.0.0.1:{port}", on_stop=inbox.aclose)
        base = served.url + "/"
        try:
            if mode == "serve":
                await keep_serving(client, toolkit, base)
                return
            await person(base, ids)
            worker = client.worker(toolkit)
            print(f"worker resumed {await worker.drain()} runs")
            await follow(base, ids)
        finally:
            await served.stop()


async def keep_serving(client: Client, toolkit: Toolkit, base: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"open {base} and sign in with the token {TOKEN}; Ctrl-C stops")
    async with client.worker(toolkit, poll_interval=0.5):
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "demo"))
