"""Scenario 3, posture A — a ``wait_for`` parked on a future that a webhook resolves.

The run stays alive: ``wait_for`` posts the question to a chat (here: prints it) and parks on a
future. A real HTTP webhook (``POST /reply``) resolves it whenever the human's reply lands: the
answer intake (``toolnexus.intake``) turns the chat's text into the Answer the question takes
(or refuses it, naming what it takes), and the suspended tool re-runs exactly once with the
reply in ``ctx.answer.data``. A simulated human answers through the webhook after a moment.

    python examples/chat_webhook.py
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from _model import llm, tool_outputs
from aiohttp import web

from toolnexus import (
    Answer,
    Request,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.intake import AnswerRefused, Text, intake
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

PARKED: dict[str, tuple[Request, asyncio.Future[Answer]]] = {}
OUTBOX: asyncio.Queue[Request] = asyncio.Queue()


@define_tool
def pick_environment(ctx: ToolContext | None = None) -> str | ToolResult:
    """Ask the user which environment to deploy to."""
    if ctx is None or ctx.answer is None:
        return pending(
            kind="question",
            prompt="Deploy to staging or production?",
            data={"options": ["staging", "production"]},
        )
    return f"user chose {ctx.answer.data['text']}" if ctx.answer.data else "no answer"


async def wait_for(req: Request) -> Answer:
    future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
    PARKED[req.id] = (req, future)
    await OUTBOX.put(req)  # "post to Slack"
    return await future  # park the run on the reply


async def on_reply(request: web.Request) -> web.Response:
    """The chat webhook: ``{"request_id": ..., "reply": ...}``."""
    body: dict[str, Any] = await request.json()
    parked = PARKED.get(str(body.get("request_id")))
    if parked is None or parked[1].done():
        return web.json_response({"error": "unknown or already answered"}, status=409)
    asked, future = parked
    try:
        answer = intake(asked, Text(str(body.get("reply", ""))))  # the chat's text, as it means
    except AnswerRefused as refused:  # e.g. "tomorrow": not one of the options
        return web.json_response({"error": str(refused)}, status=400)
    del PARKED[asked.id]
    future.set_result(answer)
    return web.json_response({"ok": True})


async def human(webhook: str) -> None:
    """Reads the question from the chat and answers through the webhook."""
    req = await OUTBOX.get()
    print(f"chat> {req.prompt}")
    async with aiohttp.ClientSession() as http:
        for reply in ("tomorrow", "Staging"):  # the first is not an option: refused
            payload = {"request_id": req.id, "reply": reply}
            async with http.post(webhook, json=payload) as resp:
                print(f"webhook <- {json.dumps(payload)} ({resp.status})")


def brain(request: RecordedRequest) -> Reply:
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(call("pick_environment", {}))
    return text(f"Deploying: {seen[-1]}.")


async def main() -> None:
    app = web.Application()
    app.router.add_post("/reply", on_reply)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    toolkit = await create_toolkit(extra_tools=[pick_environment], builtins=False)
    try:
        async with llm(brain) as endpoint, create_client(**endpoint, wait_for=wait_for) as client:
            answering = asyncio.create_task(human(f"http://127.0.0.1:{port}/reply"))
            result = await client.run("Deploy the app.", toolkit)
            await answering
    finally:
        await runner.cleanup()
    print(f"status={result.status}: {result.text}")


if __name__ == "__main__":
    asyncio.run(main())
