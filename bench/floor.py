"""The floor: the same conversation by hand, with a bare pooled `aiohttp.ClientSession`.

POST the OpenAI body, parse the JSON, run the tool (a plain Python function), append the
assistant and tool messages, repeat until the model answers with text. The request bodies are
byte-for-byte the ones our client sends (same keys, same order, same tool declaration, same
``json.dumps`` settings, same headers), which ``bench_loop.py --check`` verifies. The session
has the connection limit our transport uses (256), so concurrent runs are pooled alike.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from common import API_KEY, FINAL_TEXT, PROMPT, add, model_name

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    }
]
HEADERS = {"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"}


def new_session() -> aiohttp.ClientSession:
    """A pooled keep-alive session, configured as our transport configures its own."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=256),
        timeout=aiohttp.ClientTimeout(total=None),
    )


async def run(session: aiohttp.ClientSession, url: str, turns: int) -> str:
    """Play one ``turns``-turn loop against ``url`` (the server root); return the final text."""
    endpoint = url + "/v1/chat/completions"
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    # "tool_choice": "auto" is what the loop sends with tools (COMPAT §7), so the floor does too.
    body = {"model": model_name(turns), "messages": messages, "tools": TOOLS, "tool_choice": "auto"}
    while True:
        data = json.dumps(body, ensure_ascii=False).encode()
        async with session.post(endpoint, data=data, headers=HEADERS) as response:
            raw = await response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {raw[:200]!r}")
        message = json.loads(raw)["choices"][0]["message"]
        calls = message.get("tool_calls")
        if not calls:
            return message["content"]
        messages.append({"role": "assistant", "content": message["content"], "tool_calls": calls})
        for call in calls:
            function = call["function"]
            output = add(**json.loads(function["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})


ANTHROPIC_TOOLS: list[dict[str, Any]] = [
    {
        "name": "add",
        "description": "Add two numbers.",
        "input_schema": TOOLS[0]["function"]["parameters"],
    }
]
ANTHROPIC_HEADERS = {
    "Content-Type": "application/json",
    "anthropic-version": "2023-06-01",
    "x-api-key": API_KEY,
}


async def run_anthropic(session: aiohttp.ClientSession, url: str, turns: int) -> str:
    """`run` on the Anthropic messages wire: the same conversation, the same bytes as ours.

    The body keys and order are the ones our client sends (``max_tokens`` 4096, ``system``
    always present); the assistant turn is kept as the reply's content blocks and each tool
    result goes back in a user message of ``tool_result`` blocks.
    """
    endpoint = url + "/v1/messages"
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    body = {
        "model": model_name(turns),
        "max_tokens": 4096,
        "messages": messages,
        "system": "",
        "tools": ANTHROPIC_TOOLS,
    }
    while True:
        data = json.dumps(body, ensure_ascii=False).encode()
        async with session.post(endpoint, data=data, headers=ANTHROPIC_HEADERS) as response:
            raw = await response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {raw[:200]!r}")
        content = json.loads(raw)["content"]
        calls = [block for block in content if block["type"] == "tool_use"]
        if not calls:
            return "".join(block["text"] for block in content if block["type"] == "text")
        messages.append({"role": "assistant", "content": calls})
        results = [
            {"type": "tool_result", "tool_use_id": call["id"], "content": add(**call["input"])}
            for call in calls
        ]
        messages.append({"role": "user", "content": results})


def check_floor(text: str) -> None:
    """Fail loudly when the floor did not reach the final answer."""
    if text != FINAL_TEXT:
        raise RuntimeError(f"the floor ended with {text!r}")


async def post_json(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any]
) -> dict[str, Any]:
    """The floor's model call: POST the body, parse the reply, return its message."""
    data = json.dumps(body, ensure_ascii=False).encode()
    async with session.post(url, data=data, headers=HEADERS) as response:
        raw = await response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {raw[:200]!r}")
    message: dict[str, Any] = json.loads(raw)["choices"][0]["message"]
    return message


def tool_message(call_id: str, output: str) -> dict[str, Any]:
    """A tool result message of the OpenAI wire."""
    return {"role": "tool", "tool_call_id": call_id, "content": output}
