"""Answer from anywhere, resume anywhere: three processes, one store, no toolkit where the human is.

    python examples/answer_anywhere.py start  [store]                 # halt two refunds, exit
    python examples/answer_anywhere.py inbox  [store]                 # what waits for a human
    python examples/answer_anywhere.py answer <request-id> yes|no [store]   # no toolkit here
    python examples/answer_anywhere.py worker [store]                 # finish what is answered

``store`` is a SQLite path (default ``state.db``) or a Postgres URL (``postgresql://…``).

``start`` runs an agent whose ``refund`` tool needs approval; nothing answers inline, so each run
halts and its checkpoint goes to the store. ``answer`` is what a webhook, an approvals page or a
chat bot would do: it records the human's answer in the store — exactly once, validated — and
runs nothing: it has no toolkit and no model. ``worker`` is a process that holds the toolkit: it
takes every answered run, re-executes the approved call with the answer, lets the model finish,
and settles the request. Run several workers at once: each run is resumed exactly once. Kill a
worker mid-run: another one finishes it after its lease.
"""

from __future__ import annotations

import asyncio
import sys

from _model import llm, tool_outputs

from toolnexus import (
    Answer,
    AnswerConflict,
    RequestExpired,
    ResumeError,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls


@define_tool
def refund(order: str, amount: float, ctx: ToolContext | None = None) -> str | ToolResult:
    """Refund an order (needs a human's approval)."""
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt=f"Refund {amount:.2f} EUR on order {order}?")
    return f"refunded {amount:.2f} EUR on order {order}"


def brain(request: RecordedRequest) -> Reply:
    """The scripted model: ask for the refund named in the prompt, then report."""
    seen = tool_outputs(request)
    if not seen:
        order = str(request.body["messages"][-1]["content"]).split()[-1]
        return tool_calls(call("refund", {"order": order, "amount": 42.0}, id="r1"))
    return text(f"Done: {seen[-1]}.")


def store_url(arg: str | None) -> str:
    target = arg or "state.db"
    return target if target.startswith(("postgresql://", "postgres://")) else f"sqlite:///{target}"


async def start(store: str) -> None:
    toolkit = await create_toolkit(extra_tools=[refund], builtins=False)
    async with llm(brain) as options, create_client(**options, store=store) as client:
        for order in ("A-1001", "A-1002"):
            result = await client.ask(f"Refund order {order}", toolkit, id=f"order-{order}")
            assert result.pending is not None
            print(f"halted {result.pending.id}: {result.pending.prompt}")


async def inbox(store: str) -> None:
    async with create_client(
        base_url="http://unused.invalid", model="-", api_key="-", store=store
    ) as client:
        for entry in await client.list_pending():
            print(entry.request_id, entry.tool, entry.prompt)


async def answer(store: str, request_id: str, verdict: str) -> int:
    # No toolkit, no model: the process of the human (a webhook, an inbox, a CLI).
    async with create_client(
        base_url="http://unused.invalid", model="-", api_key="-", store=store
    ) as client:
        try:
            record = await client.answer(
                request_id, Answer(id=request_id, ok=verdict == "yes"), answered_by="ana"
            )
        except (AnswerConflict, RequestExpired, ResumeError) as exc:
            print(f"error: {exc}")
            return 1
        print(f"recorded {record.request_id}: ok={record.answer.ok} by {record.answered_by}")
        return 0


async def worker(store: str) -> None:
    toolkit = await create_toolkit(extra_tools=[refund], builtins=False)
    async with llm(brain) as options, create_client(**options, store=store) as client:
        worker = client.worker(
            toolkit, on_result=lambda rid, result: print(f"resumed {rid}: {result.text}")
        )
        taken = await worker.drain()
        print(f"worker settled {worker.resumed} of {taken} answered run(s)")


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[1] in ("start", "inbox", "worker"):
        store = store_url(argv[2] if len(argv) > 2 else None)
        action = {"start": start, "inbox": inbox, "worker": worker}[argv[1]]
        asyncio.run(action(store))
        return 0
    if len(argv) >= 4 and argv[1] == "answer":
        return asyncio.run(answer(store_url(argv[4] if len(argv) > 4 else None), argv[2], argv[3]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
