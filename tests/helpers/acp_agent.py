"""A small ACP agent built on the official SDK (``agent-client-protocol``), run as a process.

What it does depends on the last line of the prompt it gets (the user's request):

- ``echo <x>``: replies ``you said: <x>`` in two message chunks (plus a thought, not a message);
- ``show``: replies the whole prompt text it received;
- ``write <file>``: asks permission to write ``<file>``, then replies ``outcome: <id>`` (the
  chosen option) or ``outcome: cancelled``; ``write-twice``: asks twice;
- ``hang``: never replies; ``crash``: exits at once; ``fail``: answers a JSON-RPC error;
- ``noise``: writes a non-JSON line and a response to an unknown id before replying;
- ``mode?`` / ``cwd?`` / ``env?``: replies the session mode, the session cwd, ``$ACP_TEST_ENV``.

``--no-session-id`` makes ``session/new`` answer without a session id; ``$ACP_TEST_PIDFILE``
names a file the agent writes its pid to.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from acp.schema import PermissionOption, ToolCallUpdate

from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    SetSessionModeResponse,
    run_agent,
    update_agent_message_text,
    update_agent_thought_text,
)


class TestAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.cwd = ""
        self.mode = "default"

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        if "--no-session-id" in sys.argv:
            sys.stdout.write('{"jsonrpc":"2.0","id":"c-2","result":{}}\n')
            sys.stdout.flush()
            await asyncio.sleep(3600)
        self.cwd = cwd
        return NewSessionResponse(session_id="sess-1")

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> Any:
        self.mode = mode_id
        return SetSessionModeResponse()

    async def say(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id, update_agent_message_text(text))

    async def ask(self, session_id: str, title: str) -> str:
        options = [
            PermissionOption(option_id="yes-always", name="Always", kind="allow_always"),
            PermissionOption(option_id="yes-once", name="Once", kind="allow_once"),
            PermissionOption(option_id="no-once", name="No", kind="reject_once"),
        ]
        call = ToolCallUpdate(tool_call_id="t1", title=title)
        reply = await self.conn.request_permission(session_id, call, options)
        outcome = reply.outcome
        return getattr(outcome, "option_id", None) or "cancelled"

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        request = text.splitlines()[-1] if text else ""
        request = request.removeprefix("SUPERSEDES-ALL-PRIOR: ")
        if request.startswith("echo "):
            await self.conn.session_update(session_id, update_agent_thought_text("thinking"))
            await self.say(session_id, "you said: ")
            await self.say(session_id, request.removeprefix("echo "))
        elif request == "show":
            await self.say(session_id, text)
        elif request.startswith("write "):
            chosen = await self.ask(session_id, f"Write {request.removeprefix('write ')}")
            await self.say(session_id, f"outcome: {chosen}")
        elif request == "write-twice":
            first = await self.ask(session_id, "Write a.txt")
            second = await self.ask(session_id, "Write b.txt")
            await self.say(session_id, f"outcomes: {first}, {second}")
        elif request == "hang":
            await asyncio.sleep(3600)
        elif request == "crash":
            os._exit(3)
        elif request == "fail":
            raise RequestError(-32001, "the agent refused")
        elif request == "noise":
            sys.stdout.write("this is not json\n")
            sys.stdout.write('{"jsonrpc":"2.0","id":"c-999","result":{"late":true}}\n')
            sys.stdout.write("[1, 2, 3]\n")
            sys.stdout.flush()
            await self.say(session_id, "survived the noise")
        elif request == "mode?":
            await self.say(session_id, self.mode)
        elif request == "cwd?":
            await self.say(session_id, self.cwd)
        elif request == "env?":
            await self.say(session_id, os.environ.get("ACP_TEST_ENV", "-"))
        else:
            await self.say(session_id, f"unknown request: {request}")
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    if pidfile := os.environ.get("ACP_TEST_PIDFILE"):
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
    asyncio.run(run_agent(TestAgent()))
