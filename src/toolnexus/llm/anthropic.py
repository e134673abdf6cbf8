"""The Anthropic messages dialect: request bodies, replies and streamed events.

The canonical transcript is rendered with `toolnexus.llm.convert.to_anthropic` (system hoisted
to the top level, tool calls as ``tool_use`` blocks, tool results merged into one user turn).
Replies are read back into a `ModelTurn` whose tool arguments are compact JSON text, the same
shape the OpenAI dialect yields, so the loop never sees the difference.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .._types import Message, Tool, Usage, empty_usage
from ..errors import BadResponse, ProviderError, UsageError
from .base import ModelToolCall, ModelTurn, SSEEvent, Style
from .convert import (
    AnthropicRendering,
    arguments_text,
    compact_json,
    make_usage,
    normalize_finish_reason,
    to_anthropic,
    token_count,
)
from .parts_wire import PartPolicy

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
    "AnthropicDialect",
    "AnthropicStream",
    "AnthropicTranscript",
    "map_tool_choice",
    "tools_from_openai",
]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""Anthropic requires ``max_tokens``; this is what we send when the caller gives none."""

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
_PASS_THROUGH_CHOICES = frozenset({"any", "none", "tool"})


def tools_from_openai(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Anthropic tool declarations from OpenAI-shaped ones (``parameters`` → ``input_schema``).

    Accepts ``{"type": "function", "function": {...}}``, the flat ``{"name", "parameters"}``
    form, and declarations already in Anthropic shape (passed through), so a mixed list from
    `toolnexus.translate.merge_tools` renders as one. A missing ``parameters`` becomes
    ``{"type": "object", "properties": {}}``.

    Raises:
        UsageError: a tool is not a dict or has no name.

    >>> tools_from_openai([{"type": "function", "function": {"name": "now"}}])
    [{'name': 'now', 'input_schema': {'type': 'object', 'properties': {}}}]
    """
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise UsageError(f"tools[{i}] must be a dict, got {type(tool).__name__}")
        tool = cast(dict[str, Any], tool)
        if "input_schema" in tool or tool.get("type", "function") != "function":
            out.append(tool)  # already Anthropic-shaped, or a provider-side tool
            continue
        spec = tool.get("function", tool)
        name = cast(dict[str, Any], spec).get("name") if isinstance(spec, dict) else None
        if not isinstance(name, str) or not name:
            raise UsageError(f"tools[{i}] has no name")
        spec = cast(dict[str, Any], spec)
        rendered: dict[str, Any] = {"name": name}
        if spec.get("description") is not None:
            rendered["description"] = spec["description"]
        rendered["input_schema"] = spec.get("parameters") or dict(_EMPTY_SCHEMA)
        out.append(rendered)
    return out


def map_tool_choice(choice: Any) -> dict[str, Any] | None:
    """An OpenAI ``tool_choice`` in Anthropic terms; ``None`` means "send nothing".

    ``required``/``any`` → ``{"type": "any"}``, ``none`` → ``{"type": "none"}``, a named
    function (``{"function": {"name"}}`` with or without ``"type": "function"``) →
    ``{"type": "tool", "name"}``; an Anthropic-shaped ``any``/``none``/``tool`` choice passes
    through; ``auto`` and anything unknown are omitted (Anthropic's default is auto).

    >>> map_tool_choice({"type": "function", "function": {"name": "search"}})
    {'type': 'tool', 'name': 'search'}
    """
    if choice in ("required", "any"):
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if not isinstance(choice, dict):
        return None
    choice = cast(dict[str, Any], choice)
    function = choice.get("function")
    if isinstance(function, dict):
        name = cast(dict[str, Any], function).get("name")
        return {"type": "tool", "name": name} if isinstance(name, str) and name else None
    if choice.get("type") in _PASS_THROUGH_CHOICES:
        if choice["type"] == "tool" and not isinstance(choice.get("name"), str):
            return None
        return choice
    return None


def _raise_error(payload: dict[str, Any]) -> None:
    error = payload.get("error")
    message: Any = error
    if isinstance(error, dict):
        error = cast(dict[str, Any], error)
        message = f"{error.get('type', 'error')}: {error.get('message', '')}"
    raise ProviderError(f"provider error: {message}", body=json.dumps(payload, default=str))


_NO_USAGE = empty_usage()  # (read, never handed out)


def _usage(value: Any, into: Usage | None = None) -> Usage:
    """Our usage from an Anthropic one. The prompt is every input token the request carried:
    ``input_tokens`` counts only those after the last cache breakpoint, so the cached
    (``cache_read_input_tokens``) and newly cached (``cache_creation_input_tokens``) ones are
    added. A usage naming none of the three (a stream's ``message_delta``) keeps ``into``'s."""
    usage = cast(dict[str, Any], value) if isinstance(value, dict) else {}
    base = into or _NO_USAGE
    # (Spelled out rather than looped over: this runs on every reply.)
    if (
        "input_tokens" in usage
        or "cache_read_input_tokens" in usage
        or "cache_creation_input_tokens" in usage
    ):
        fresh = usage.get("input_tokens")
        read = usage.get("cache_read_input_tokens")
        made = usage.get("cache_creation_input_tokens")
        prompt = fresh if type(fresh) is int and fresh >= 0 else token_count(fresh)
        if read is not None or made is not None:
            prompt += token_count(read) + token_count(made)
    else:
        prompt = base["prompt_tokens"]
    completion = usage.get("output_tokens", base["completion_tokens"])
    return make_usage(prompt, completion)


def _streamed_input(fragments: list[str], initial: Any) -> tuple[str, Any]:
    """The arguments text and input object of a streamed ``tool_use`` block.

    Fragments arrive with the provider's spacing; when they parse, we store the same compact
    text a non-streamed reply gives. Text that does not parse is kept as received, so the loop
    can report the malformed arguments to the model.
    """
    text = "".join(fragments)
    if not text:
        return arguments_text(initial), initial if initial is not None else {}
    try:
        parsed = json.loads(text)
    except ValueError:
        return text, {}
    return compact_json(parsed), parsed


@dataclass(slots=True)
class _Block:
    type: str
    text: list[str] = field(default_factory=lambda: [])
    id: str = ""
    name: str = ""
    input: Any = None


class AnthropicStream:
    """Folds Anthropic stream events (``message_start`` … ``message_stop``) into a `ModelTurn`.

    Text comes from ``text_delta``, tool arguments from ``input_json_delta`` fragments, usage
    from ``message_start`` and ``message_delta``. ``ping`` and unknown event types are ignored,
    as Anthropic asks of clients; an ``error`` event raises `ProviderError`.
    """

    __slots__ = ("_blocks", "_complete", "_message", "_stop", "_usage")

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._message: dict[str, Any] = {}
        self._usage: Usage = empty_usage()
        self._stop: Any = None
        self._complete = False

    @property
    def complete(self) -> bool:
        """True once ``message_stop`` was seen."""
        return self._complete

    def feed(self, event: SSEEvent) -> str | None:
        """Consume one event; return its text delta, if any."""
        data = event.data.strip()
        if not data or self._complete:
            return None
        try:
            payload = json.loads(data)
        except ValueError:
            raise BadResponse(f"malformed stream event: {data[:200]!r}", body=data) from None
        if not isinstance(payload, dict):
            raise BadResponse(f"stream event is not an object: {data[:200]!r}", body=data)
        payload = cast(dict[str, Any], payload)
        kind = payload.get("type", event.event)
        if kind == "error":
            _raise_error(payload)
        elif kind == "message_start":
            message = payload.get("message")
            if not isinstance(message, dict):
                raise BadResponse("message_start event has no message object")
            self._message = cast(dict[str, Any], message)
            self._usage = _usage(self._message.get("usage"))
        elif kind == "content_block_start":
            return self._start(payload)
        elif kind == "content_block_delta":
            return self._delta(payload)
        elif kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict) and "stop_reason" in delta:
                self._stop = cast(dict[str, Any], delta)["stop_reason"]
            self._usage = _usage(payload.get("usage"), self._usage)
        elif kind == "message_stop":
            self._complete = True
        return None

    def _index(self, payload: dict[str, Any]) -> int:
        index = payload.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise BadResponse(f"{payload.get('type')} event has no integer index")
        return index

    def _start(self, payload: dict[str, Any]) -> str | None:
        index = self._index(payload)
        block = payload.get("content_block")
        if not isinstance(block, dict):
            raise BadResponse("content_block_start event has no content_block object")
        block = cast(dict[str, Any], block)
        kind = block.get("type")
        entry = _Block(type=kind if isinstance(kind, str) else "")
        self._blocks[index] = entry
        if entry.type == "tool_use":
            entry.id, entry.name = block.get("id") or "", block.get("name") or ""
            entry.input = block.get("input")
        elif entry.type == "text" and isinstance(block.get("text"), str) and block["text"]:
            entry.text.append(block["text"])
            return block["text"]
        return None

    def _delta(self, payload: dict[str, Any]) -> str | None:
        index = self._index(payload)
        entry = self._blocks.get(index)
        if entry is None:
            raise BadResponse(f"content_block_delta for block {index} that never started")
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            raise BadResponse("content_block_delta event has no delta object")
        delta = cast(dict[str, Any], delta)
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            entry.text.append(delta["text"])
            return delta["text"] or None
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            entry.text.append(delta["partial_json"])
        return None

    def finish(self) -> ModelTurn:
        """The assembled turn; raises `BadResponse` if ``message_stop`` never came."""
        if not self._complete:
            raise BadResponse("stream ended before message_stop")
        texts: list[str] = []
        calls: list[ModelToolCall] = []
        content: list[dict[str, Any]] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.type == "text":
                text = "".join(block.text)
                texts.append(text)
                content.append({"type": "text", "text": text})
            elif block.type == "tool_use":
                if not block.name or not block.id:
                    raise BadResponse(f"streamed tool_use block {index} has no id or name")
                arguments, value = _streamed_input(block.text, block.input)
                calls.append(ModelToolCall(id=block.id, name=block.name, arguments=arguments))
                content.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": value}
                )
        raw = {
            **self._message,
            "content": content,
            "stop_reason": self._stop,
            "usage": {
                "input_tokens": self._usage["prompt_tokens"],
                "output_tokens": self._usage["completion_tokens"],
            },
        }
        return ModelTurn(
            text="".join(texts),
            tool_calls=calls,
            usage=self._usage,
            finish_reason=normalize_finish_reason(self._stop, bool(calls)),
            raw=raw,
        )


def _reply_calls(content: list[Any]) -> tuple[str, list[ModelToolCall]]:
    texts: list[str] = []
    calls: list[ModelToolCall] = []
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            raise BadResponse(f"reply content[{i}] is not an object")
        block = cast(dict[str, Any], block)
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise BadResponse(f"reply content[{i}] is a text block without text")
            texts.append(text)
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not call_id:
                raise BadResponse(f"reply content[{i}] is a tool_use block without id")
            if not isinstance(name, str) or not name:
                raise BadResponse(f"reply content[{i}] is a tool_use block without name")
            calls.append(
                ModelToolCall(id=call_id, name=name, arguments=arguments_text(block.get("input")))
            )
    return "".join(texts), calls


def _body(
    model: str,
    rendered: list[dict[str, Any]],
    system: str | None,
    tools: Sequence[dict[str, Any]],
    stream: bool,
    max_tokens: int | None,
    tool_choice: Any,
    declared: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The body; ``declared`` is ``tools`` already converted (`tools_from_openai`)."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
        "messages": rendered,
    }
    # Always present, as the existing package sends it ("" without system text).
    body["system"] = system if system is not None else ""
    if tools:
        body["tools"] = declared if declared is not None else tools_from_openai(tools)
        choice = map_tool_choice(tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
    if stream:
        body["stream"] = True
    return body


class AnthropicTranscript:
    """`AnthropicDialect.build_body` for the successive turns of one run.

    The transcript only grows during a run, so each message is rendered once
    (`toolnexus.llm.convert.AnthropicRendering`) instead of on every turn; the bodies are the
    ones `AnthropicDialect.build_body` makes.
    """

    __slots__ = ("_declared", "_rendering")

    def __init__(self, parts: PartPolicy | None = None) -> None:
        self._rendering = AnthropicRendering(parts)
        # The run's tool list (the same object every turn) and its conversion. Only the
        # engine's unhooked path renders through a transcript: no hook sees the body, so
        # the converted declarations can be shared between turns instead of rebuilt.
        self._declared: tuple[Sequence[dict[str, Any]], list[dict[str, Any]]] | None = None

    def build_body(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        stream: bool,
        tool_choice: Any = None,
    ) -> dict[str, Any]:
        """The body for this turn (see `AnthropicDialect.build_body`)."""
        rendered, system = self._rendering.render(messages)
        declared = self._declared
        if declared is None or declared[0] is not tools:
            declared = self._declared = (tools, tools_from_openai(tools))
        return _body(model, rendered, system, tools, stream, None, tool_choice, declared[1])


class AnthropicDialect:
    """`Dialect` for ``POST {base}/v1/messages`` (Anthropic and compatible servers)."""

    style: Style = "anthropic"

    def __init__(self, parts: PartPolicy | None = None) -> None:
        self.parts = parts or PartPolicy()
        """How content parts are sent (size ceiling, ``on_unsupported_part``)."""

    def endpoint(self, base_url: str) -> str:
        """``{base}/v1/messages``, or ``{base}/messages`` when the base already ends in ``/v1``."""
        base = base_url.rstrip("/")
        return base + ("/messages" if base.endswith("/v1") else "/v1/messages")

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """``x-api-key`` (only with a key) and the pinned ``anthropic-version``."""
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def render_tools(self, tools: Sequence[Tool]) -> list[dict[str, Any]]:
        """Tool declarations: ``{"name", "description", "input_schema"}``."""
        return [
            {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
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
        """A messages-API body from the canonical transcript.

        ``system`` is always top-level (``""`` without system text); ``max_tokens`` defaults to
        `DEFAULT_MAX_TOKENS` (0 or ``None``); ``tools`` (Anthropic- or OpenAI-shaped) and the
        mapped ``tool_choice`` appear only with a non-empty tool list. Content parts become
        blocks; ``translating`` applies §11's rules to them (text first, placeholders).

        Raises:
            UsageError: unreadable messages or tools, or a negative ``max_tokens``.
            ContentPartError: an attached part is malformed or over the size limit.
            UnsupportedPartError: an attached part has no anthropic block shape (audio).
        """
        if max_tokens is not None and max_tokens < 0:
            raise UsageError(f"max_tokens must not be negative, got {max_tokens}")
        rendered, system = to_anthropic(messages, parts=self.parts, translating=translating)
        return _body(model, rendered, system, tools, stream, max_tokens, tool_choice)

    def new_transcript(self) -> AnthropicTranscript:
        """A body builder for one run that renders each transcript message once."""
        return AnthropicTranscript(self.parts)

    def parse_reply(self, payload: dict[str, Any]) -> ModelTurn:
        """Read a messages-API reply into a `ModelTurn` (``raw`` is the payload itself).

        Raises:
            ProviderError: the body is an ``{"type": "error"}`` object.
            BadResponse: the body is not a message; the message says what is wrong.
        """
        if not isinstance(payload, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise BadResponse(f"reply is not a JSON object: {type(payload).__name__}")
        if payload.get("type") == "error" or payload.get("error"):
            _raise_error(payload)
        content = payload.get("content")
        if not isinstance(content, list):
            raise BadResponse("reply has no content list", body=json.dumps(payload, default=str))
        text, calls = _reply_calls(cast(list[Any], content))
        return ModelTurn(
            text=text,
            tool_calls=calls,
            usage=_usage(payload.get("usage")),
            finish_reason=normalize_finish_reason(payload.get("stop_reason"), bool(calls)),
            raw=payload,
        )

    def new_stream(self) -> AnthropicStream:
        """A fresh assembler for one streamed reply."""
        return AnthropicStream()
