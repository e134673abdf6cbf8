"""What every benchmark shares: the scripted endpoint, the conversation, the tool, our client.

The endpoint plays an N-turn tool loop. N is carried by the model name (``loop-3``,
``loop-20``), and the turn is read off the transcript the client sends (how many tool results
it holds), so one server answers any number of concurrent runs of any length, for both the
floor and our client, in both wire styles:

    turns 1 .. N-1   one ``add`` call with two numbers (call id ``call_<k>``)
    turn N           a short text answer

Two interchangeable servers implement it:

* ``raw`` — a minimal ``aiohttp.web`` low-level server: parse the JSON body, count the tool
  results, answer with pre-rendered bytes. The default: it is the cheapest honest endpoint.
* ``scripted`` — `toolnexus.testing.ScriptedModel` with a callable default step choosing among
  pre-built replies (so its wire templates are compiled once).

Either runs in the benchmark's own process (``separate=False``) or in a child process
(``python bench/common.py serve --kind raw``), so that server CPU does not share the client's
event loop. See ``bench/README.md`` for which one each benchmark uses and why.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

ServerKind = Literal["raw", "scripted"]
Style = Literal["openai", "anthropic"]

PROMPT = "Add the numbers, one call at a time, then tell me the total."
FINAL_TEXT = "The total is 42."
API_KEY = "x"
MODEL_PREFIX = "loop-"
_SELF = os.path.abspath(__file__)


def model_name(turns: int) -> str:
    """The model name that makes the endpoint play a ``turns``-turn loop."""
    return f"{MODEL_PREFIX}{turns}"


def turns_of(model: object) -> int:
    """The loop length a model name asks for (``loop-20`` ⇒ 20; anything else ⇒ 3)."""
    if isinstance(model, str) and model.startswith(MODEL_PREFIX):
        with contextlib.suppress(ValueError):
            return max(1, int(model[len(MODEL_PREFIX) :]))
    return 3


def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


def call_args(k: int) -> dict[str, float]:
    """The arguments of the ``add`` call at tool turn ``k`` (floats: identical output both ways)."""
    return {"a": k + 0.5, "b": 2.25}


# -- the routing rule ------------------------------------------------------------------------


def tool_results(body: dict[str, Any], style: Style) -> int:
    """How many tool results the transcript in ``body`` holds: the index of this turn."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    count = 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        if style == "openai":
            count += message.get("role") == "tool"
        elif message.get("role") == "user" and isinstance(message.get("content"), list):
            count += sum(
                1
                for block in message["content"]
                if isinstance(block, dict) and block.get("type") == "tool_result"
            )
    return count


# -- the raw server --------------------------------------------------------------------------

_ROUTES: dict[str, Style] = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}


def _dumps(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def render_reply(style: Style, model: str, k: int, final: bool) -> bytes:
    """The wire bytes of turn ``k``'s reply: a tool call, or the final text."""
    call_id = f"call_{k}"
    args = call_args(k)
    if style == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": FINAL_TEXT if final else None}
        if not final:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "add", "arguments": _dumps(args).decode()},
                }
            ]
        return _dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "stop" if final else "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )
    content: list[dict[str, Any]] = (
        [{"type": "text", "text": FINAL_TEXT}]
        if final
        else [{"type": "tool_use", "id": call_id, "name": "add", "input": args}]
    )
    return _dumps(
        {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "end_turn" if final else "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


@dataclass(slots=True)
class Traffic:
    """What a server received and sent (bytes of bodies), for the same-bytes sanity check."""

    requests: int = 0
    bytes_in: int = 0
    bytes_out: int = 0


class RawServer:
    """The minimal endpoint: parse, count tool results, answer with cached bytes."""

    def __init__(self) -> None:
        self.traffic = Traffic()
        self._cache: dict[tuple[Style, str, int, bool], bytes] = {}
        self._runner: web.ServerRunner | None = None
        self.url = ""

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        style = _ROUTES.get(request.path)
        if style is None:
            return web.Response(status=404, text=f"no route {request.path}")
        raw = await request.read()
        body = json.loads(raw)
        model = str(body.get("model"))
        k = tool_results(body, style)
        final = k >= turns_of(model) - 1
        key = (style, model, k, final)
        reply = self._cache.get(key)
        if reply is None:
            reply = self._cache[key] = render_reply(style, model, k, final)
        traffic = self.traffic
        traffic.requests += 1
        traffic.bytes_in += len(raw)
        traffic.bytes_out += len(reply)
        return web.Response(body=reply, content_type="application/json")

    async def start(self) -> str:
        runner = web.ServerRunner(web.Server(self._handle, access_log=None))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runner = runner
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        return self.url

    async def aclose(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


# -- the ScriptedModel server ----------------------------------------------------------------


class ScriptedServer:
    """The same conversation played by `toolnexus.testing.ScriptedModel`."""

    def __init__(self) -> None:
        from toolnexus.testing import Reply, ScriptedModel, call, text, tool_calls

        self._call, self._text, self._tool_calls = call, text, tool_calls
        self._replies: dict[tuple[int, bool], Reply] = {}
        self.model = ScriptedModel(default=self._step)
        self.url = ""

    def _step(self, recorded: Any) -> Any:
        # Keep the server's memory flat: the benchmark never reads the recorded requests.
        self.model.requests.clear()
        k = tool_results(recorded.body, recorded.style)
        final = k >= turns_of(recorded.body.get("model")) - 1
        reply = self._replies.get((k, final))
        if reply is None:
            reply = (
                self._text(FINAL_TEXT)
                if final
                else self._tool_calls(self._call("add", call_args(k), id=f"call_{k}"))
            )
            self._replies[(k, final)] = reply
        return reply

    async def start(self) -> str:
        await self.model.start()
        self.url = self.model.url
        return self.url

    async def aclose(self) -> None:
        await self.model.aclose()


def make_server(kind: ServerKind) -> RawServer | ScriptedServer:
    return RawServer() if kind == "raw" else ScriptedServer()


@contextlib.asynccontextmanager
async def endpoint(kind: ServerKind = "raw", *, separate: bool = False) -> AsyncIterator[str]:
    """Serve the loop on 127.0.0.1 and yield its root URL (``http://127.0.0.1:<port>``).

    With ``separate`` the server runs in a child process (this script, ``serve`` mode), which
    is stopped on exit; otherwise it shares this process's event loop.
    """
    if not separate:
        server = make_server(kind)
        url = await server.start()
        try:
            yield url
        finally:
            await server.aclose()
        return
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        _SELF,
        "serve",
        "--kind",
        kind,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 20)
        url = line.decode().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the server process did not start (said {line!r})")
        yield url
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _serve(kind: ServerKind) -> None:
    """Child-process mode: serve until stdin closes (the parent exited or is done)."""
    server = make_server(kind)
    url = await server.start()
    print(url, flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await reader.read()
    await server.aclose()


# -- our client ------------------------------------------------------------------------------


async def make_toolkit() -> Any:
    """A toolkit holding only ``add``, through `define_tool` (built-ins off)."""
    import toolnexus as tn

    return await tn.create_toolkit(extra_tools=[tn.define_tool(add)], builtins=False)


def make_client(url: str, style: Style, turns: int) -> Any:
    """Our client pointed at the endpoint for a ``turns``-turn loop."""
    import toolnexus as tn

    base = url + "/v1" if style == "openai" else url
    return tn.create_client(
        base_url=base,
        style=style,
        model=model_name(turns),
        api_key=API_KEY,
        max_turns=turns + 1,
    )


def check_ours(result: Any, turns: int) -> None:
    """Fail loudly when our client did not play the whole loop."""
    if result.status != "done" or result.text != FINAL_TEXT:
        raise RuntimeError(f"our client ended with {result.status!r}, {result.text!r}")
    if len(result.tool_calls) != turns - 1:
        raise RuntimeError(f"our client made {len(result.tool_calls)} tool calls, not {turns - 1}")


# -- measuring -------------------------------------------------------------------------------


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """Start a timed section from a collected heap (GC stays on: it is part of the cost)."""
    gc.collect()
    yield


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    """Seconds ``fn`` takes, from a collected heap."""
    with quiet_gc():
        started = time.perf_counter()
        await fn()
        return time.perf_counter() - started


def median(values: list[float]) -> float:
    return statistics.median(values)


@dataclass(slots=True)
class Row:
    """One line of a results table."""

    metric: str
    floor: str
    ours: str
    delta: str
    target: str
    ok: bool | None


def print_table(rows: list[Row], title: str = "") -> None:
    """Print ``rows`` as an aligned text table."""
    header = ("metric", "floor", "ours", "overhead/ratio", "target", "result")
    lines = [
        (
            r.metric,
            r.floor,
            r.ours,
            r.delta,
            r.target,
            "-" if r.ok is None else "PASS" if r.ok else "FAIL",
        )
        for r in rows
    ]
    widths = [max(len(cell) for cell in column) for column in zip(header, *lines, strict=True)]
    if title:
        print(title)
    for i, line in enumerate([header, *lines]):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the benchmark loop on 127.0.0.1.")
    parser.add_argument("mode", choices=["serve"])
    parser.add_argument("--kind", choices=["raw", "scripted"], default="raw")
    args = parser.parse_args()
    asyncio.run(_serve(args.kind))


if __name__ == "__main__":
    main()
