"""``toolnexus run``: a chat REPL that streams, shows each tool call and asks you about it.

The client runs on an event loop in a background thread; the main thread owns the terminal,
so Ctrl-C while a turn runs cancels that turn (the in-flight model call is aborted), Ctrl-C at
the prompt only clears the line, and Ctrl-D exits.

Before every tool call you are asked: ``y`` run it, ``n`` decline (the model sees the
decline), ``a`` run it and always allow this tool for the session, ``e`` edit the arguments
(a JSON object, checked against the tool's schema) and run it. A tool that suspends (an
approval, a question, an MCP elicitation) is answered here too, field by field. End of input
during a question is a decline, never a traceback.

With no endpoint (``--base-url``, or ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``) the REPL
talks to a scripted local model: type a tool's name and its arguments (JSON, or
``key=value`` pairs) to have it call that tool.

Everything the REPL writes — the model's streamed text, each call's arguments, each result,
each prompt and option — goes through `_say` or `_read`, which make it visible
(`toolnexus._visible`): the model or a tool cannot clear the screen, write the clipboard, hide
a link target or reorder what the person reads; newlines and tabs stay (the output is lines),
a carriage return does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import uuid
from collections.abc import Coroutine
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from .._types import ToolResult
from .._visible import escape_json, visible
from ..errors import RunCancelled, ToolnexusError, UsageError
from ..intake import (
    Accepts,
    AnswerRefused,
    Approve,
    Data,
    Decline,
    Reply,
    Text,
    accepts,
    intake,
    yes_or_no,
)
from ..suspension import Answer, Request
from . import codes

__all__ = ["Settings", "local_brain", "repl"]

T = TypeVar("T")
_SHOWN = 300


@dataclass(slots=True)
class Settings:
    """The ``run`` command's options."""

    once: str | None = None
    config: str | None = None
    skills: list[str] = field(default_factory=lambda: [])
    base_url: str | None = None
    style: str = "openai"
    model: str | None = None
    api_key: str | None = None
    system: str | None = None
    store: str | None = None
    builtins: bool = True


_LAYOUT = "\n\t"
"""What the REPL's output keeps raw: it is lines (a carriage return would overwrite one)."""


def _say(text: str = "", end: str = "\n") -> None:
    sys.stdout.write(visible(text, keep=_LAYOUT) + end)
    sys.stdout.flush()


def _warn(text: str) -> None:
    sys.stderr.write(visible(text, keep=_LAYOUT) + "\n")
    sys.stderr.flush()


def _read(prompt: str) -> str | None:
    """One line from the terminal (after ``prompt``, made visible); ``None`` at end of
    input."""
    try:
        return input(visible(prompt, keep=_LAYOUT))
    except EOFError:
        _say()
        return None


class Session:
    """One REPL: its client, toolkit, conversation and the tools always allowed."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.allowed: set[str] = set()
        self.conversation = f"repl-{uuid.uuid4().hex[:8]}"
        self.cancel = asyncio.Event()
        self._stack = contextlib.AsyncExitStack()
        self.client: Any = None
        self.toolkit: Any = None

    async def open(self) -> None:
        from ..client import create_client
        from ..toolkit import create_toolkit

        s = self.settings
        base_url, style, model, key = s.base_url, s.style, s.model, s.api_key
        if base_url is None:
            for env_style in ("openai", "anthropic"):
                found = os.environ.get(f"{env_style.upper()}_BASE_URL")
                if found:
                    base_url, style = found, env_style
                    model = model or os.environ.get(f"{env_style.upper()}_MODEL")
                    break
        if base_url is None:
            from ..testing import ScriptedModel

            local = await self._stack.enter_async_context(ScriptedModel(default=local_brain))
            base_url, style, model, key = local.openai_base_url, "openai", "local", "local"
            _say("(no endpoint configured: a scripted local model answers; see --help)")
        if style not in ("openai", "anthropic"):
            raise UsageError(f"--style is openai or anthropic, got {style!r}")
        from .progress import working

        with working("starting the tool sources", enabled=s.config is not None):
            toolkit = await create_toolkit(
                mcp_config=s.config,
                skills_dir=s.skills or None,
                builtins=s.builtins,
                wait_for=self.answer,
            )
        self.toolkit = await self._stack.enter_async_context(toolkit)
        self.client = await self._stack.enter_async_context(
            create_client(
                base_url=base_url,
                style=style,  # pyright: ignore[reportArgumentType]
                model=model or "gpt-4o-mini",
                api_key=key,
                system_prompt=s.system,
                store=s.store,
                wait_for=self.answer,
                hooks={"before_tool": self.gate},
            )
        )

    async def aclose(self) -> None:
        await self._stack.aclose()

    # -- one turn ----------------------------------------------------------------------------

    async def turn(self, line: str) -> int:
        self.cancel = asyncio.Event()
        result: Any = None
        try:
            async for event in self.client.stream(
                line, self.toolkit, id=self.conversation, cancel=self.cancel
            ):
                kind = event["type"]
                if kind == "text":
                    _say(event["delta"], end="")
                elif kind == "tool_call":
                    _say(f"\n→ {event['name']} {_json(event['args'])}")
                elif kind == "tool_result":
                    mark = "✗" if event["is_error"] else "←"
                    _say(f"{mark} {_clip(str(event['output']))}")
                elif kind == "done":
                    result = event["result"]
        except RunCancelled:
            _say("\n(cancelled)")
            return codes.INTERRUPTED
        except ToolnexusError as exc:  # the model is unreachable, refused the key, …
            _say()
            _warn(f"toolnexus: the turn failed: {exc}")
            return codes.FAILED
        _say()
        if result is not None and result.status == "incomplete":
            _say(f"(stopped: {result.limit or 'maxTurns'})")
        return codes.OK

    # -- the human's side --------------------------------------------------------------------

    async def gate(self, info: dict[str, Any]) -> dict[str, Any] | None:
        """before_tool: ask before each call (a call re-run with its answer is not asked)."""
        name = info["name"]
        if "answer" in info or name in self.allowed:
            return None
        args = _json(info["args"])
        while True:
            choice = await _ask(f"\nrun {name} {_clip(args)}? [y]es [n]o [a]lways [e]dit: ")
            if choice is None or choice.strip().lower() in ("n", "no"):
                return {"result": ToolResult(f"the user declined {name}", True)}
            picked = choice.strip().lower()
            if picked in ("y", "yes", ""):
                return None
            if picked in ("a", "always"):
                self.allowed.add(name)
                return None
            if picked in ("e", "edit"):
                edited = await self._edit(name, info["args"])
                if edited is not None:
                    return {"args": edited}

    async def _edit(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        from ..tools.validation import validate_arguments

        text = await _ask(f"new arguments for {name} (JSON object): ")
        if text is None:
            return None
        try:
            edited = json.loads(text)
        except ValueError as exc:
            _say(f"not JSON: {exc}")
            return None
        if not isinstance(edited, dict):
            _say("the arguments must be a JSON object")
            return None
        tool = self.toolkit.get(name)
        problem = validate_arguments(tool, edited) if tool is not None else None  # pyright: ignore[reportUnknownArgumentType]
        if problem is not None:
            _say(problem)
            return None
        return edited  # pyright: ignore[reportUnknownVariableType]

    async def answer(self, request: Request) -> Answer:
        """wait_for: answer a suspension in the terminal, through the answer intake: a reply
        the request does not take is refused with what it takes, and asked again; end of input
        declines."""
        _say(f"\n? {request.prompt}")
        if request.url:
            _say(f"  {request.url}")
        shape = accepts(request)
        while True:
            reply = await self._reply(shape)
            try:
                return intake(request, reply, known=shape)
            except AnswerRefused as refused:
                _say(f"  {refused}")

    async def _reply(self, shape: Accepts) -> Reply:
        """What the person types, as the reply it is (the intake judges it)."""
        if shape.shape in ("approval", "authorization"):
            choice = await _ask("approve? [y]es [n]o: ")
            if choice is None:
                return Decline("end of input")
            if yes_or_no(choice) is False:
                return Decline(await _ask("reason (optional): "))
            return Approve() if yes_or_no(choice) else Text(choice)
        if shape.shape == "questions":
            return await self._questions(shape)
        if (
            shape.shape == "input"
            and shape.schema
            and isinstance(shape.schema.get("properties"), dict)
        ):
            return await self._form(dict(shape.schema))
        if shape.shape == "relay":
            results: list[dict[str, Any]] = []
            for call in shape.calls:
                output = await _ask(f"  output of {call}: ")
                if output is None:
                    return Decline("end of input")
                results.append({"id": call, "output": output})
            return Data({"results": results})
        for i, option in enumerate(shape.options, 1):
            _say(f"   {i}. {option}")
        text = await _ask("> ")
        if text is None:
            return Decline("end of input")
        if text.strip().isdigit() and 1 <= int(text) <= len(shape.options):
            text = shape.options[int(text) - 1]
        return Text(text)

    async def _questions(self, shape: Accepts) -> Reply:
        answers: list[Any] = []
        for q in shape.questions:
            _say(f"  {q.text}")
            for i, label in enumerate(q.options, 1):
                _say(f"   {i}. {label}")
            reply = await _ask("  answer: ")
            if reply is None:
                return Decline("end of input")
            picked = [_option(part.strip(), q.options) for part in reply.split(",")]
            answers.append(picked if q.multiple else _option(reply.strip(), q.options))
        return Data({"answers": answers})

    async def _form(self, schema: dict[str, Any]) -> Reply:
        required = set(cast(list[str], schema.get("required") or []))
        values: dict[str, Any] = {}
        properties = cast(dict[str, Any], schema["properties"])
        for key, raw in properties.items():
            spec: dict[str, Any] = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
            while True:
                hint = spec.get("description") or spec.get("type") or ""
                reply = await _ask(f"  {key}{'*' if key in required else ''} ({hint}): ")
                if reply is None:
                    return Decline("end of input")
                if reply == "" and key not in required:
                    break
                value = _typed(reply, spec)
                problem = _field_problem(spec, value)
                if problem is None:
                    values[key] = value
                    break
                _say(f"  {problem}")
        return Data(values)


def _option(reply: str, options: tuple[str, ...]) -> str:
    """A typed option number as its option; anything else as typed."""
    if reply.isdigit() and 1 <= int(reply) <= len(options):
        return options[int(reply) - 1]
    return reply


def _field_problem(spec: dict[str, Any], value: Any) -> str | None:
    """What is wrong with one form field's value under its schema, if anything."""
    import jsonschema

    try:
        validator: Any = jsonschema.Draft202012Validator(spec)
        errors: list[Any] = list(validator.iter_errors(value))
    except jsonschema.SchemaError:
        return None  # a schema we cannot check: take the value as typed
    return errors[0].message if errors else None


def _typed(text: str, spec: dict[str, Any]) -> Any:
    kind = spec.get("type")
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return text
    if kind == "boolean":
        return {"y": True, "yes": True, "true": True, "n": False, "no": False, "false": False}.get(
            text.strip().lower(), text
        )
    return text


async def _ask(prompt: str) -> str | None:
    return await asyncio.to_thread(_read, prompt)


def _json(value: Any) -> str:
    """Arguments as JSON that parses back to exactly them, invisible characters escaped
    (``\\u202e``): what is shown can be typed back at ``[e]dit``."""
    return escape_json(json.dumps(value, ensure_ascii=False))


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


# -- the scripted local model -----------------------------------------------------------------


def local_brain(request: Any) -> Any:
    """Calls the tool the user names (``name {json}`` or ``name key=value``), then reports its
    output; otherwise explains itself."""
    from ..testing import call, text, tool_calls

    body: dict[str, Any] = request.body
    messages: list[dict[str, Any]] = body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    after = messages[last_user + 1 :]
    outputs = [str(m.get("content")) for m in after if m.get("role") == "tool"]
    if outputs:
        return text(f"The tool said: {_clip(outputs[-1])}")
    said = str(messages[last_user].get("content") or "") if last_user >= 0 else ""
    declared: list[dict[str, Any]] = body.get("tools") or []
    names = {str(t.get("function", {}).get("name")) for t in declared}
    word, _, rest = said.strip().partition(" ")
    if word in names:
        return tool_calls(call(word, _arguments(rest)))
    return text(
        f"(local scripted model) You said: {said!r}. Name a tool and its arguments to call it, "
        'e.g. `todowrite {"todos": []}`, or pass --base-url for a real model.'
    )


def _arguments(rest: str) -> dict[str, Any]:
    rest = rest.strip()
    if not rest:
        return {}
    try:
        parsed = json.loads(rest)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed  # pyright: ignore[reportUnknownVariableType]
    pairs: dict[str, Any] = {}
    for token in rest.split():
        key, sep, value = token.partition("=")
        if sep:
            try:
                pairs[key] = json.loads(value)
            except ValueError:
                pairs[key] = value
    return pairs


# -- the terminal's thread and the loop's ---------------------------------------------------


def repl(settings: Settings) -> int:
    """Run the REPL (or one ``--once`` prompt); returns the exit code."""
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C cancels a turn even when this process started with SIGINT ignored (as a
        # shell's background job, or a program that ignores it, passes it on).
        signal.signal(signal.SIGINT, signal.default_int_handler)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="toolnexus-repl", daemon=True)
    thread.start()

    def on_loop(work: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(work, loop)

    session = Session(settings)
    try:
        on_loop(session.open()).result()
        if settings.once is not None:
            return _turn(session, settings.once, on_loop, loop)
        while True:
            try:
                line = _read("> ")
            except KeyboardInterrupt:
                _say("^C (Ctrl-D exits)")
                continue
            if line is None:
                return codes.OK
            if line.strip():
                _turn(session, line, on_loop, loop)
    finally:
        with contextlib.suppress(Exception):
            on_loop(session.aclose()).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)


def _awaited(future: Future[T]) -> T:
    """``future.result()``, waking every tenth of a second: the kernel may hand a Ctrl-C to
    any thread of the process, and one that lands on the loop's thread (or a worker's) only
    raises `KeyboardInterrupt` here once this thread runs again."""
    while not future.done():
        wait((future,), timeout=0.1)
    return future.result()


def _turn(session: Session, line: str, on_loop: Any, loop: asyncio.AbstractEventLoop) -> int:
    future = on_loop(session.turn(line))
    try:
        return _awaited(future)
    except KeyboardInterrupt:
        loop.call_soon_threadsafe(session.cancel.set)
        try:
            return future.result(timeout=30)
        except Exception:
            _say("\n(cancelled)")
            return codes.INTERRUPTED
