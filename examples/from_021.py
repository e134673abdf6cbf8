"""Code written for the toolnexus 0.21 package, unchanged: its import paths and call shapes.

``Client(**options)``, a synchronous stdlib ``http_transport``, ``retryable_statuses``, a
``before_llm`` hook that picks the model per turn, and ``tool_calls`` read as dicts. See
docs/migrating.md for what differs.

    python examples/from_021.py
"""

from __future__ import annotations

import asyncio

from _model import llm, tool_outputs

from toolnexus.client import Client, UrllibTransport
from toolnexus.native import define_tool
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls
from toolnexus.types import ToolResult


@define_tool
def convert(celsius: float) -> ToolResult:
    """Convert degrees Celsius to Fahrenheit."""
    return ToolResult(f"{celsius * 9 / 5 + 32:.1f}")


MODELS: list[str] = []


def brain(request: RecordedRequest) -> Reply:
    """The scripted model: one tool call, then an answer built from its result."""
    MODELS.append(request.body["model"])
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(call("convert", {"celsius": 21}))
    return text(f"21 °C is {seen[-1]} °F (answered by {request.body['model']}).")


def route(event: dict) -> dict | None:
    """before_llm: the first turn goes to a cheaper model, later turns to the configured one."""
    return {"model": "small-model"} if event["turn"] == 0 else None


async def main() -> None:
    async with llm(brain) as options:
        client = Client(
            **options,
            http_transport=UrllibTransport(),  # a blocking transport, called in a worker thread
            retryable_statuses=[408],  # also retry request timeouts
            hooks={"before_llm": route},
        )
        result = await client.run("How warm is 21 °C in Fahrenheit?", [convert])
        await client.aclose()
    print(result.text)
    for record in result.tool_calls:  # the 0.21 dict shape
        print(record["name"], record["args"], "->", record["output"], dict(record)["is_error"])
    print("retried statuses:", sorted(client.retryable_statuses or ()))
    if MODELS:  # only with the scripted model
        print("models per turn:", MODELS)


if __name__ == "__main__":
    asyncio.run(main())
