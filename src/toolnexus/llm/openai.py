"""The OpenAI chat-completions dialect: request bodies, replies and streamed chunks.

The canonical transcript already is the OpenAI chat shape, so rendering is nearly the
identity: private keys are stripped and object-form tool arguments are serialised. Parsing is
where the care goes: a 2xx reply that is not a chat completion is a `BadResponse` that says
what was missing, and an ``error`` object inside a 2xx body is a `ProviderError`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .._types import Message, Tool, Usage, empty_usage
from ..errors import BadResponse, ProviderError, UsageError
from .base import ModelToolCall, ModelTurn, SSEEvent, Style
from .convert import (
    PRIVATE_MESSAGE_KEYS,
    appended_since,
    arguments_text,
    compact_json,
    make_usage,
    normalize_finish_reason,
    text_of,
)
from .parts_wire import PartPolicy, has_parts

__all__ = ["OpenAIDialect", "OpenAIStream", "OpenAITranscript"]


def _wire_call(call: Any) -> Any:
    if isinstance(call, dict):
        call = cast(dict[str, Any], call)
        function = call.get("function")
        if isinstance(function, dict):
            function = cast(dict[str, Any], function)
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                return {**call, "function": {**function, "arguments": arguments_text(arguments)}}
    return call


def _wire_calls(calls: Any) -> list[Any] | None:
    """The tool calls with object-form arguments serialised, or ``None`` when none needed it."""
    if not isinstance(calls, list):
        return None
    calls = cast(list[Any], calls)
    wired = [_wire_call(c) for c in calls]
    return wired if any(new is not old for new, old in zip(wired, calls, strict=True)) else None


def _wire_message(message: Message) -> Message:
    wired = _wire_calls(message.get("tool_calls"))
    if wired is None and PRIVATE_MESSAGE_KEYS.isdisjoint(message):
        return message
    wire = {k: v for k, v in message.items() if k not in PRIVATE_MESSAGE_KEYS}
    if wired is not None:
        wire["tool_calls"] = wired
    return wire


def _wire_with_parts(message: Message, policy: PartPolicy, relocated: list[Any]) -> Message:
    """A message carrying content parts, for the wire. A tool message's non-text parts are
    appended to ``relocated`` (each after a line naming the tool); its text parts join the
    output as a content list."""
    wire = dict(_wire_message(message))
    if message.get("role") != "tool":
        content = message.get("content")
        if isinstance(content, list):
            attached = message.get("role") == "user"
            wire["content"] = policy.content(cast(list[Any], content), "openai", attached=attached)
        return wire
    wire.pop("parts", None)
    wire.pop("name", None)
    output = message.get("content")
    texts: list[Any] = []
    for p in cast(list[Any], message.get("parts") or []):
        if isinstance(p, dict) and cast(dict[str, Any], p).get("type") == "text":
            texts.append(policy.block(cast(dict[str, Any], p), "openai", attached=False))
            continue
        header = f"Output of tool {message.get('name')} ({message.get('tool_call_id')}):"
        relocated.append({"type": "text", "text": header})
        relocated.append(policy.block(cast(dict[str, Any], p), "openai", attached=False))
    if texts:
        lead = [{"type": "text", "text": output}] if isinstance(output, str) and output else []
        wire["content"] = lead + texts
    return wire


def _wire_messages(messages: Sequence[Message], policy: PartPolicy) -> tuple[list[Message], bool]:
    """The messages for the wire, and whether the last one is a synthetic user message holding
    the relocated parts of the tool results before it (COMPAT §6)."""
    out: list[Message] = []
    relocated: list[Any] = []
    for message in messages:
        if relocated and message.get("role") != "tool":
            out.append({"role": "user", "content": relocated})
            relocated = []
        if has_parts(message):
            out.append(_wire_with_parts(message, policy, relocated))
        else:
            out.append(_wire_message(message))
    if relocated:
        out.append({"role": "user", "content": relocated})
        return out, True
    return out, False


def _call_id(value: Any) -> str:
    # Some OpenAI-compatible servers omit ids; the transcript needs one to pair the result.
    return value if isinstance(value, str) and value else f"call_{uuid.uuid4().hex[:24]}"


def _raise_error(error: Any, payload: Any) -> None:
    message: Any = error
    if isinstance(error, dict):
        message = cast(dict[str, Any], error).get("message") or cast(dict[str, Any], error)
    raise ProviderError(f"provider error: {message}", body=json.dumps(payload, default=str))


def _usage(value: Any) -> Usage:
    if not isinstance(value, dict):
        return empty_usage()
    usage = cast(dict[str, Any], value)
    return make_usage(
        usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens")
    )


def _tool_calls(value: Any) -> list[ModelToolCall]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadResponse("reply message.tool_calls is not a list")
    calls: list[ModelToolCall] = []
    for i, call in enumerate(cast(list[Any], value)):
        function = cast(dict[str, Any], call).get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise BadResponse(f"reply tool_calls[{i}] has no function object")
        function = cast(dict[str, Any], function)
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise BadResponse(f"reply tool_calls[{i}] has no function name")
        call_id = _call_id(cast(dict[str, Any], call).get("id"))
        calls.append(
            ModelToolCall(
                id=call_id, name=name, arguments=arguments_text(function.get("arguments"))
            )
        )
    return calls


@dataclass(slots=True)
class _Slot:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=lambda: [])


class OpenAIStream:
    """Folds ``chat.completion.chunk`` events into one `ModelTurn`.

    Tool calls are assembled by their ``index``: the id and name come from the first delta
    that carries them, argument fragments are concatenated. Complete on ``data: [DONE]``.
    """

    __slots__ = (
        "_calls",
        "_complete",
        "_finish",
        "_id",
        "_last",
        "_model",
        "_saw_choice",
        "_text",
        "_usage",
    )

    def __init__(self) -> None:
        self._saw_choice = False
        self._text: list[str] = []
        self._calls: dict[int, _Slot] = {}
        self._last: int | None = None
        self._usage: Usage = empty_usage()
        self._finish: Any = None
        self._id: Any = None
        self._model: Any = None
        self._complete = False

    @property
    def complete(self) -> bool:
        """True once ``[DONE]`` was seen."""
        return self._complete

    def feed(self, event: SSEEvent) -> str | None:
        """Consume one chunk; return its text delta, if any."""
        data = event.data.strip()
        if not data or self._complete:
            return None
        if data == "[DONE]":
            self._complete = True
            return None
        try:
            chunk = json.loads(data)
        except ValueError:
            raise BadResponse(f"malformed stream chunk: {data[:200]!r}", body=data) from None
        if not isinstance(chunk, dict):
            raise BadResponse(f"stream chunk is not an object: {data[:200]!r}", body=data)
        chunk = cast(dict[str, Any], chunk)
        if chunk.get("error"):
            _raise_error(chunk["error"], chunk)
        self._id = self._id or chunk.get("id")
        self._model = self._model or chunk.get("model")
        if isinstance(chunk.get("usage"), dict):
            self._usage = _usage(chunk["usage"])
        return self._choice(chunk.get("choices"))

    def _choice(self, choices: Any) -> str | None:
        if choices is None or choices == []:
            return None
        if not isinstance(choices, list) or not isinstance(cast(list[Any], choices)[0], dict):
            raise BadResponse("stream chunk choices[0] is not an object")
        self._saw_choice = True
        choice = cast(dict[str, Any], cast(list[Any], choices)[0])
        if choice.get("finish_reason") is not None:
            self._finish = choice["finish_reason"]
        delta = choice.get("delta")
        if delta is None:
            return None
        if not isinstance(delta, dict):
            raise BadResponse("stream chunk delta is not an object")
        delta = cast(dict[str, Any], delta)
        calls = delta.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise BadResponse("stream chunk delta.tool_calls is not a list")
            for call in cast(list[Any], calls):
                self._tool_delta(call)
        content = text_of(delta.get("content"))
        if content is None:
            raise BadResponse("stream chunk delta.content is not text")
        if content:
            self._text.append(content)
            return content
        return None

    def _tool_delta(self, call: Any) -> None:
        if not isinstance(call, dict):
            raise BadResponse("stream tool call delta is not an object")
        call = cast(dict[str, Any], call)
        index, call_id = call.get("index"), call.get("id")
        if not isinstance(index, int) or isinstance(index, bool):
            index = self._implicit_index(call_id)
        slot = self._calls.setdefault(index, _Slot())
        self._last = index
        if isinstance(call_id, str) and call_id and not slot.id:
            slot.id = call_id
        function = call.get("function")
        if function is None:
            return
        if not isinstance(function, dict):
            raise BadResponse("stream tool call delta function is not an object")
        function = cast(dict[str, Any], function)
        name = function.get("name")
        if isinstance(name, str) and name and not slot.name:
            slot.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot.arguments.append(arguments)
        elif arguments is not None:
            slot.arguments = [compact_json(arguments)]

    def _implicit_index(self, call_id: Any) -> int:
        # Servers that omit ``index`` stream one call after another: a new id opens a new slot.
        last = self._last
        if last is None or (
            isinstance(call_id, str) and call_id and call_id != self._calls[last].id
        ):
            return max(self._calls, default=-1) + 1
        return last

    def finish(self) -> ModelTurn:
        """The assembled turn; raises `BadResponse` if ``[DONE]`` never came."""
        if not self._complete:
            raise BadResponse("stream ended before [DONE]")
        if not self._saw_choice:
            raise BadResponse("stream carried no choice at all")
        calls: list[ModelToolCall] = []
        for index in sorted(self._calls):
            slot = self._calls[index]
            if not slot.name:
                raise BadResponse(f"streamed tool call at index {index} has no function name")
            calls.append(
                ModelToolCall(
                    id=_call_id(slot.id),
                    name=slot.name,
                    arguments=arguments_text("".join(slot.arguments)),
                )
            )
        text = "".join(self._text)
        finish = normalize_finish_reason(self._finish, bool(calls))
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in calls
            ]
        raw = {
            "id": self._id,
            "object": "chat.completion",
            "model": self._model,
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
            "usage": dict(self._usage),
        }
        return ModelTurn(
            text=text, tool_calls=calls, usage=self._usage, finish_reason=finish, raw=raw
        )


def _body(
    model: str,
    wire: list[Message],
    tools: Sequence[dict[str, Any]],
    stream: bool,
    max_tokens: int | None,
    tool_choice: Any,
    share_tools: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": wire}
    if tools:
        # A copy, unless the caller knows that nobody edits this body (the declarations list
        # is the toolkit's cached one, shared by every run).
        body["tools"] = tools if share_tools else list(tools)
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
    if max_tokens is not None:
        if max_tokens < 0:
            raise UsageError(f"max_tokens must not be negative, got {max_tokens}")
        if max_tokens:
            body["max_tokens"] = max_tokens
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


class OpenAITranscript:
    """`OpenAIDialect.build_body` for the successive turns of one run.

    The transcript only grows during a run, so each message is prepared for the wire once
    instead of on every turn; the bodies are the ones `OpenAIDialect.build_body` makes. When
    the transcript is not an extension of the previous turn's (see
    `toolnexus.llm.convert.appended_since`), it is prepared afresh. A message must not be
    edited in place once sent; the engine prepares every body afresh whenever a hook could.
    """

    __slots__ = ("_parts", "_relocated", "_sources", "_wire")

    def __init__(self, parts: PartPolicy | None = None) -> None:
        self._parts = parts or PartPolicy()
        self._sources: list[Message] = []
        self._wire: list[Message] = []
        self._relocated = False  # the wire ends with relocated tool parts

    def build_body(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        stream: bool,
        tool_choice: Any = None,
    ) -> dict[str, Any]:
        """The body for this turn (see `OpenAIDialect.build_body`)."""
        added = appended_since(messages, self._sources)
        if added is None or (self._relocated and added and added[0].get("role") == "tool"):
            # Not an extension, or more tool results join a run whose parts were relocated.
            self._sources, self._wire, self._relocated = [], [], False
            added = messages
        wired, relocated = _wire_messages(added, self._parts)
        if added:
            self._relocated = relocated
        self._wire.extend(wired)
        self._sources.extend(added)
        # Only the engine's unhooked path renders through a transcript: no hook sees the
        # body, so the tool declarations can be shared instead of copied.
        return _body(model, list(self._wire), tools, stream, None, tool_choice, share_tools=True)


class OpenAIDialect:
    """`Dialect` for ``POST {base}/chat/completions`` (OpenAI and compatible servers)."""

    style: Style = "openai"

    def __init__(self, parts: PartPolicy | None = None) -> None:
        self.parts = parts or PartPolicy()
        """How content parts are sent (size ceiling, ``on_unsupported_part``)."""

    def endpoint(self, base_url: str) -> str:
        """``{base}/chat/completions``, tolerating a trailing ``/`` on the base."""
        return base_url.rstrip("/") + "/chat/completions"

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """``Authorization: Bearer <key>``; no header at all without a key."""
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def render_tools(self, tools: Sequence[Tool]) -> list[dict[str, Any]]:
        """Function declarations: ``{"type": "function", "function": {name, description,
        parameters}}``."""
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                },
            }
            for tool in tools
        ]

    def build_body(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        stream: bool,
        max_tokens: int | None = None,
        tool_choice: Any = None,
        translating: bool = False,
    ) -> dict[str, Any]:
        """A chat-completions body.

        The model is sent verbatim. Messages lose our private keys and get object-form tool
        arguments serialised; all else is kept (messages without either are sent as the same
        objects, no copy). ``tools`` and ``tool_choice`` appear only with a non-empty tool
        list; ``max_tokens`` only when positive (0 or ``None`` ⇒ the provider default).

        Content parts are encoded (`toolnexus.llm.parts_wire`); a tool result's non-text parts
        move into one user message after its run of tool messages. ``translating`` sends every
        part that cannot go as a text placeholder instead of failing.

        Raises:
            UsageError: ``max_tokens`` is negative.
            ContentPartError: an attached part is malformed or over the size limit.
            UnsupportedPartError: an attached part has no openai block shape.
        """
        policy = self.parts.lenient() if translating else self.parts
        wire, _ = _wire_messages(messages, policy)
        return _body(model, wire, tools, stream, max_tokens, tool_choice)

    def new_transcript(self) -> OpenAITranscript:
        """A body builder for one run that renders each transcript message once."""
        return OpenAITranscript(self.parts)

    def parse_reply(self, payload: dict[str, Any]) -> ModelTurn:
        """Read a chat completion into a `ModelTurn` (``raw`` is the payload itself).

        A reply with neither text nor tool calls is returned as ``text=""``: whether that is
        acceptable is the loop's call, not the parser's.

        Raises:
            ProviderError: the body carries an ``error`` object.
            BadResponse: the body is not a chat completion; the message says what is wrong.
        """
        if not isinstance(payload, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise BadResponse(f"reply is not a JSON object: {type(payload).__name__}")
        if payload.get("error"):
            _raise_error(payload["error"], payload)
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices:
            raise BadResponse("reply has no choices", body=json.dumps(payload, default=str))
        choice = cast(list[Any], choices)[0]
        if not isinstance(choice, dict):
            raise BadResponse("reply choices[0] is not an object")
        choice = cast(dict[str, Any], choice)
        message = choice.get("message")
        if not isinstance(message, dict):
            raise BadResponse("reply choices[0] has no message")
        message = cast(dict[str, Any], message)
        text = text_of(message.get("content"))
        if text is None:
            raise BadResponse("reply message.content is not text")
        calls = _tool_calls(message.get("tool_calls"))
        return ModelTurn(
            text=text,
            tool_calls=calls,
            usage=_usage(payload.get("usage")),
            finish_reason=normalize_finish_reason(choice.get("finish_reason"), bool(calls)),
            raw=payload,
        )

    def new_stream(self) -> OpenAIStream:
        """A fresh assembler for one streamed reply."""
        return OpenAIStream()
