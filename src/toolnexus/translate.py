"""Single-turn translation (CONTRACT §11): the pure parts.

``client.translate(...)`` makes ONE provider call from OpenAI-shaped input and returns a
`TranslateResult`; nothing is executed. This module holds the data it returns and the pure
steps around that call: merging toolkit declarations with the caller's ``tools``, applying an
explicit ``system``, and turning the dialect's `ModelTurn` into the result. The Anthropic
rendering itself is `toolnexus.llm.convert.to_anthropic`, public here as
`openai_messages_to_anthropic`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ._types import Message, Usage, empty_usage
from .errors import UsageError
from .llm.anthropic import map_tool_choice as openai_tool_choice_to_anthropic
from .llm.anthropic import tools_from_openai as openai_tools_to_anthropic
from .llm.base import FinishReason, ModelTurn
from .llm.convert import (
    arguments_object,
    arguments_text,
    normalize_finish_reason,
    text_of,
    to_anthropic,
)

__all__ = [
    "TranslateResult",
    "TranslatedToolCall",
    "anthropic_blocks",
    "args_object",
    "args_string",
    "content_text",
    "finish_reason_for",
    "has_system_message",
    "openai_messages_to_anthropic",
    "openai_tool_choice_to_anthropic",
    "openai_tools_to_anthropic",
    "part_to_anthropic",
    "tool_calls_of",
]
"""The public names (``toolnexus.translate`` is also the existing package's module path); the
helpers below are the client's."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TranslatedToolCall:
    """One tool call the model asked for; ``arguments`` is JSON text, never parsed."""

    id: str
    name: str
    arguments: str

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def to_dict(self) -> dict[str, str]:
        """``{"id", "name", "arguments"}``."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True, kw_only=True)
class TranslateResult:
    """What one translated provider call produced.

    Attributes:
        text: the assistant text (``""`` when there was none).
        tool_calls: the requested calls in provider order, none dropped or truncated.
        finish_reason: ``stop`` | ``tool_calls`` | ``length`` | ``content_filter``.
        usage: ``prompt_tokens``, ``completion_tokens``, ``total_tokens``.
        model: the model name sent on the wire.
        raw: the provider's reply payload.
    """

    text: str = ""
    tool_calls: list[TranslatedToolCall] = field(default_factory=lambda: [])
    finish_reason: FinishReason = "stop"
    usage: Usage = field(default_factory=empty_usage)
    model: str = ""
    raw: dict[str, Any] | None = None

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def tool_calls_json(self) -> list[dict[str, Any]]:
        """The calls as OpenAI ``tool_calls`` entries: ``{"id", "type": "function",
        "function": {"name", "arguments"}}``, in order."""
        return [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in self.tool_calls
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the same keys as the attributes."""
        return {
            "text": self.text,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "finish_reason": self.finish_reason,
            "usage": dict(self.usage),
            "model": self.model,
            "raw": self.raw,
        }


def to_translate_result(turn: ModelTurn, model: str) -> TranslateResult:
    """The `TranslateResult` for one parsed provider reply.

    >>> from toolnexus.llm.base import ModelToolCall
    >>> turn = ModelTurn(text=None, tool_calls=[ModelToolCall(id="c1", name="f", arguments="{}")])
    >>> to_translate_result(turn, "gpt-x").tool_calls[0].name
    'f'
    """
    return TranslateResult(
        text=turn.text or "",
        tool_calls=[
            TranslatedToolCall(id=call.id, name=call.name, arguments=call.arguments)
            for call in turn.tool_calls
        ],
        finish_reason=turn.finish_reason,
        usage=dict(turn.usage),
        model=model,
        raw=turn.raw,
    )


def openai_messages_to_anthropic(
    messages: Sequence[Message],
) -> tuple[list[dict[str, Any]], str | None]:
    """Render OpenAI chat messages as Anthropic ``messages`` plus the hoisted ``system``.

    The §11 inbound rules: system/developer hoisted (joined by ``\\n\\n``), parts flattened,
    ``tool_calls`` → ``tool_use`` (string or object arguments), consecutive tool results →
    one user turn of ``tool_result`` blocks, empty assistant turns dropped.

    >>> openai_messages_to_anthropic([{"role": "system", "content": "S"},
    ...                               {"role": "user", "content": "hi"}])
    ([{'role': 'user', 'content': 'hi'}], 'S')
    """
    return to_anthropic(messages)


def with_system(messages: Sequence[Message], system: str | None) -> list[Message]:
    """Apply an explicit ``system``: it replaces every system/developer message.

    With ``system=None`` the messages are returned unchanged (as a new list). This is how an
    explicit ``system`` reaches a dialect whose ``build_body`` only takes messages.
    """
    if system is None:
        return list(messages)
    kept = [m for m in messages if m.get("role") not in ("system", "developer")]
    return [{"role": "system", "content": system}, *kept]


def _tool_name(tool: Any, where: str) -> str:
    if isinstance(tool, dict):
        tool = cast(dict[str, Any], tool)
        spec = tool.get("function", tool)
        name = cast(dict[str, Any], spec).get("name") if isinstance(spec, dict) else None
        if isinstance(name, str) and name:
            return name
    raise UsageError(f"{where} is not a tool declaration with a name")


def merge_tools(
    toolkit_tools: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Toolkit declarations first, then the caller's ``tools`` (both OpenAI-shaped).

    A caller tool identical to an earlier declaration of the same name is dropped; a
    *different* declaration under a taken name is an error rather than a silent pick, since
    providers reject duplicate names and either choice could hide the caller's intent.

    Raises:
        UsageError: a tool has no name, or two different tools share one.
    """
    merged: list[dict[str, Any]] = []
    seen: dict[str, dict[str, Any]] = {}
    labelled = [("toolkit", t) for t in toolkit_tools] + [("tools", t) for t in tools or ()]
    for i, (origin, tool) in enumerate(labelled):
        index = i if origin == "toolkit" else i - len(toolkit_tools)
        name = _tool_name(tool, f"{origin}[{index}]")
        if name in seen:
            if seen[name] != tool:
                raise UsageError(f"two different tools are named {name!r}")
            continue
        seen[name] = tool
        merged.append(tool)
    return merged


# -- the existing package's translate helpers (COMPAT §1 "also"), over the same internals ------


def finish_reason_for(stop_reason: Any, has_tool_calls: bool = False) -> FinishReason:
    """A provider's stop reason as the OpenAI ``finish_reason``.

    A tool call (or Anthropic's ``tool_use``) ⇒ ``tool_calls``; ``max_tokens``/``length`` ⇒
    ``length``; ``refusal``/``content_filter`` ⇒ ``content_filter``; anything else ⇒ ``stop``.

    >>> [finish_reason_for(r) for r in ("end_turn", "tool_use", "max_tokens")]
    ['stop', 'tool_calls', 'length']
    """
    return normalize_finish_reason(stop_reason, has_tool_calls or stop_reason == "tool_use")


def args_string(args: Any) -> str:
    """Tool-call arguments as JSON text: a string as it is (``""`` ⇒ ``{}``), an object
    serialised compactly.

    >>> args_string({"a": 1}), args_string('{"a": 1}'), args_string(None)
    ('{"a":1}', '{"a": 1}', '{}')
    """
    return arguments_text(args)


def args_object(args: Any) -> dict[str, Any]:
    """Tool-call arguments as an object: a dict as it is, JSON text parsed; anything that is
    not a JSON object ⇒ ``{}``.

    >>> args_object('{"a": 1}'), args_object("not json"), args_object([1])
    ({'a': 1}, {}, {})
    """
    return arguments_object(args)


def content_text(content: Any) -> str:
    """The text of a message ``content`` (a string, ``None``, or parts whose text parts are
    joined with no separator); any other shape ⇒ ``""``.

    >>> content_text([{"type": "text", "text": "a"}, {"type": "image_url"}, "b"])
    'ab'
    """
    return text_of(content) or ""


def tool_calls_of(message: Any) -> list[dict[str, Any]]:
    """The OpenAI ``tool_calls`` of an assistant message (``toolCalls`` accepted), dict
    entries only; ``[]`` when it has none.

    >>> tool_calls_of({"role": "assistant", "tool_calls": [{"id": "c1"}, "junk"]})
    [{'id': 'c1'}]
    """
    if not isinstance(message, dict):
        return []
    m = cast(dict[str, Any], message)
    calls = m.get("tool_calls", m.get("toolCalls"))
    if not isinstance(calls, list):
        return []
    return [cast(dict[str, Any], c) for c in cast(list[Any], calls) if isinstance(c, dict)]


def has_system_message(messages: Sequence[Any]) -> bool:
    """Whether any message is a ``system`` (or ``developer``) message.

    >>> has_system_message([{"role": "user", "content": "hi"}])
    False
    """
    return any(
        isinstance(m, dict) and cast(dict[str, Any], m).get("role") in ("system", "developer")
        for m in messages
    )


def part_to_anthropic(part: Any) -> dict[str, Any]:
    """A content part (a `ContentPart` or its dict) as its Anthropic block.

    Raises:
        UnsupportedPartError: Anthropic has no block for it (audio, for one).
        ContentPartError: not a valid content part (its size is not checked here).
    """
    from .llm.parts_wire import encode_part
    from .parts import normalize_parts

    (canonical,) = normalize_parts([part], check_size=False)
    return encode_part(canonical, "anthropic")


def anthropic_blocks(content: Any) -> list[dict[str, Any]]:
    """A user message's ``content`` as Anthropic blocks, as `openai_messages_to_anthropic`
    renders it: its text first as one text block (when there is any), then every non-text
    part as its native block in order; a part Anthropic cannot carry becomes its text
    placeholder. Items may be `ContentPart`\\s, part dicts, strings or native blocks.

    >>> anthropic_blocks("hi")
    [{'type': 'text', 'text': 'hi'}]
    """
    if isinstance(content, list):
        from .parts import ContentPart, to_dict

        items = cast(list[Any], content)
        content = [to_dict(x) if isinstance(x, ContentPart) else x for x in items]
    rendered, _ = to_anthropic([{"role": "user", "content": content}])
    if not rendered:
        return []
    body: Any = rendered[0]["content"]
    if isinstance(body, str):
        return [{"type": "text", "text": body}] if body else []
    return list(cast(list[dict[str, Any]], body))
