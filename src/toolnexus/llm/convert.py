"""The canonical transcript and its conversion to and from the Anthropic messages shape.

Our transcript is the OpenAI chat shape for every provider (DESIGN §3)::

    {"role": "system" | "developer" | "user" | "assistant" | "tool",
     "content": str | None | [{"type": "text", "text": ...}, ...],
     "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": str}}],
     "tool_call_id": str}

A ``tool`` message may also carry our private marker ``"is_error": True``; it is never sent as
such (see `PRIVATE_MESSAGE_KEYS`) but becomes Anthropic's ``is_error`` on a ``tool_result``.
The placeholder of a halted call carries ``"toolnexus_halt"``: the halted turn's state, so a
resume from a host-held transcript never runs a finished call twice. It is never sent either.

Decisions the contract leaves open, taken here:

- Tool-call ``arguments`` that are not a JSON object (unparseable text, an array, a number)
  become ``{}`` in the ``tool_use`` block: Anthropic only accepts an object there, and keeping
  the raw text under some key would invent arguments the model never sent.
- Consecutive messages of the same role are merged into one message of content blocks, so the
  rendered conversation always alternates user/assistant. This is what makes consecutive tool
  results ONE user turn, and it keeps a user message that follows tool results valid too.
- Content parts (`toolnexus.parts`) in a message's list ``content`` and a tool message's
  ``parts`` are encoded as Anthropic blocks (`toolnexus.llm.parts_wire`); other non-text items
  of a list without any part are dropped when flattening, as before.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from .._types import Message, Usage
from ..errors import UsageError
from .base import FinishReason
from .parts_wire import PartPolicy, content_has_parts

__all__ = [
    "PRIVATE_MESSAGE_KEYS",
    "AnthropicRendering",
    "appended_since",
    "arguments_object",
    "arguments_text",
    "compact_json",
    "from_anthropic",
    "make_usage",
    "normalize_finish_reason",
    "normalize_history",
    "text_of",
    "to_anthropic",
    "token_count",
]

PRIVATE_MESSAGE_KEYS = frozenset({"is_error", "toolnexus_halt", "parts"})
"""Keys we keep on canonical messages that no provider accepts on the wire."""

_SYSTEM_ROLES = frozenset({"system", "developer"})
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result"})


# ``json.dumps`` with these options would build a new encoder on every call.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def compact_json(value: Any) -> str:
    """JSON text with compact separators and UTF-8 kept as is: how we store tool arguments.

    >>> compact_json({"city": "Zürich", "days": 2})
    '{"city":"Zürich","days":2}'
    """
    return _COMPACT.encode(value)


def arguments_text(value: Any) -> str:
    """Tool-call arguments as JSON text: a string is kept as received, ``None`` or ``""`` is
    ``{}`` (what servers send for a call without arguments), anything else (object-form
    arguments) is serialised with `compact_json`."""
    if isinstance(value, str):
        return value or "{}"
    return "{}" if value is None else compact_json(value)


def make_usage(prompt: Any, completion: Any, total: Any = None) -> Usage:
    """A usage dict from provider counts; anything that is not a non-negative int counts 0.

    ``total`` defaults to ``prompt + completion`` when the provider did not send one.
    """
    # `token_count` spelled out for the common ints: this runs on every reply.
    p = prompt if type(prompt) is int and prompt >= 0 else token_count(prompt)
    c = completion if type(completion) is int and completion >= 0 else token_count(completion)
    t = token_count(total) if total is not None else p + c
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": t}


def token_count(value: Any) -> int:
    """A provider token count: a non-negative int, anything else counts 0."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0


def normalize_finish_reason(raw: Any, has_tool_calls: bool) -> FinishReason:
    """Map any provider's finish/stop reason onto our four (CONTRACT §11 outbound).

    Any tool call wins; then ``length``/``max_tokens`` ⇒ ``length``; ``content_filter``/
    ``refusal`` ⇒ ``content_filter``; everything else ⇒ ``stop``.
    """
    if has_tool_calls:
        return "tool_calls"
    if raw in ("length", "max_tokens"):
        return "length"
    if raw in ("content_filter", "refusal"):
        return "content_filter"
    return "stop"


def text_of(content: Any) -> str | None:
    """The text of a message ``content``: a string, ``None`` (⇒ ``""``) or a parts array.

    Text parts are concatenated with no separator; other parts are skipped. Returns ``None``
    when ``content`` has none of those shapes, so each caller can raise its own error.

    >>> text_of([{"type": "text", "text": "a"}, {"type": "image_url"}, {"text": "b"}])
    'ab'
    """
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        return None
    pieces: list[str] = []
    for part in cast(list[Any], content):
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict):
            part = cast(dict[str, Any], part)
            text = part.get("text")
            if isinstance(text, str) and part.get("type", "text") in _TEXT_PART_TYPES:
                pieces.append(text)
    return "".join(pieces)


def _checked(messages: Iterable[Any], start: int = 0) -> list[Message]:
    out: list[Message] = []
    for i, message in enumerate(messages, start):
        if not isinstance(message, dict):
            raise UsageError(f"messages[{i}] must be a dict, got {type(message).__name__}")
        message = cast(Message, message)
        if not isinstance(message.get("role"), str) or not message["role"]:
            raise UsageError(f"messages[{i}] has no role")
        out.append(message)
    return out


def _content_text(message: Message, i: int) -> str:
    text = text_of(message.get("content"))
    if text is None:
        raise UsageError(f"messages[{i}].content must be a string, null or a list of parts")
    return text


def arguments_object(arguments: Any) -> dict[str, Any]:
    """Tool-call arguments as an object: a dict as it is, JSON text parsed (anything that is
    not a JSON object: ``{}``)."""
    if isinstance(arguments, dict):
        return cast(dict[str, Any], arguments)
    if isinstance(arguments, str):
        # A transcript is re-rendered every turn: parse each arguments text once. The copy
        # keeps a host's body_transform from editing the cached value.
        return dict(_parse_object(arguments))
    return {}


@functools.lru_cache(maxsize=4096)
def _parse_object(text: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}
    return cast(dict[str, Any], parsed) if isinstance(parsed, dict) else {}


def _tool_use_blocks(calls: Any, i: int) -> list[dict[str, Any]]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise UsageError(f"messages[{i}].tool_calls must be a list")
    blocks: list[dict[str, Any]] = []
    for j, call in enumerate(cast(list[Any], calls)):
        if not isinstance(call, dict):
            raise UsageError(f"messages[{i}].tool_calls[{j}] must be a dict")
        call = cast(dict[str, Any], call)
        function = call.get("function")
        name = cast(dict[str, Any], function).get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise UsageError(f"messages[{i}].tool_calls[{j}] has no function name")
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise UsageError(f"messages[{i}].tool_calls[{j}] has no id")
        arguments = cast(dict[str, Any], function).get("arguments")
        blocks.append(
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments_object(arguments)}
        )
    return blocks


def appended_since(messages: Sequence[Message], seen: list[Message]) -> Sequence[Message] | None:
    """The messages appended to ``messages`` since it held exactly ``seen``, or ``None`` when
    ``messages`` does not start with ``seen`` (the same message objects, in the same order).

    What lets a run render each message of its transcript once (`AnthropicRendering`,
    `toolnexus.llm.openai.OpenAITranscript`).
    """
    done = len(seen)
    # List equality compares identical items by identity first: one pointer comparison per
    # message when the transcript was only appended to.
    if len(messages) < done or list(messages[:done]) != seen:
        return None
    return messages[done:]


def _as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if content else []


class AnthropicRendering:
    """`to_anthropic`, kept up to date as a transcript grows: each message is rendered once.

    A run re-sends its whole transcript every turn, and the engine only ever appends to it, so
    `render` converts just the messages added since the previous call. When the transcript is
    not an extension of the one rendered before (the same message objects, in the same order),
    everything is rendered afresh. A message must not be edited in place once rendered; the
    engine renders from scratch whenever a hook could do that.

    Each call returns a new list; a rendered message dict that an earlier call returned is
    never modified afterwards (merging into it makes a new dict), so every body stays as it
    was sent.
    """

    __slots__ = ("_hoisted", "_out", "_parts", "_sealed", "_sources", "_translating")

    def __init__(self, parts: PartPolicy | None = None, *, translating: bool = False) -> None:
        # Translation never fails on a part: what cannot be sent becomes a placeholder.
        policy = parts or PartPolicy()
        self._parts = policy.lenient() if translating else policy
        self._translating = translating
        self._sources: list[Message] = []
        self._out: list[dict[str, Any]] = []
        self._hoisted: list[str] = []
        self._sealed = 0  # rendered messages already handed out: never modified again

    def _reset(self) -> None:
        self._sources, self._out, self._hoisted, self._sealed = [], [], [], 0

    def render(self, messages: Sequence[Message]) -> tuple[list[dict[str, Any]], str | None]:
        """The rendered ``messages`` and the hoisted system text (``None`` when empty).

        Raises:
            UsageError: as `to_anthropic`.
        """
        added = appended_since(messages, self._sources)
        if added is None:
            self._reset()
            added = messages
        done = len(self._sources)
        try:
            new = _checked(added, done)
            for i, message in enumerate(new, done):
                self._add(message, i)
        except BaseException:
            self._reset()
            raise
        self._sources.extend(new)
        self._sealed = len(self._out)
        return list(self._out), "\n\n".join(self._hoisted) or None

    def _add(self, message: Message, i: int) -> None:
        role = message["role"]
        if role in _SYSTEM_ROLES:
            text = _content_text(message, i)
            if text:
                self._hoisted.append(text)
        elif role == "user":
            if content_has_parts(message):
                self._append("user", self._part_blocks(message, attached=True))
            else:
                self._append("user", _content_text(message, i))
        elif role == "assistant":
            parts = content_has_parts(message)
            text = (
                self._part_blocks(message, attached=False) if parts else _content_text(message, i)
            )
            uses = _tool_use_blocks(message.get("tool_calls"), i)
            if uses:
                self._append("assistant", _as_blocks(text) + uses)
            elif text:
                self._append("assistant", text)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise UsageError(f"messages[{i}] is a tool result without tool_call_id")
            output: str | list[dict[str, Any]] = _content_text(message, i)
            if message.get("parts"):
                output = self._result_blocks(output, message["parts"], i)
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": output,
            }
            if message.get("is_error") is True:
                block["is_error"] = True
            self._append("user", [block])
        else:
            raise UsageError(f"messages[{i}] has an unsupported role {role!r}")

    def _part_blocks(self, message: Message, *, attached: bool) -> list[dict[str, Any]]:
        """A list content holding parts, as blocks: text items as text blocks, parts encoded,
        native blocks as they are. Translating puts all the text first, as one block."""
        items = cast(list[Any], message["content"])
        blocks: list[dict[str, Any]] = []
        texts: list[str] = []
        for item in items:
            if isinstance(item, str):
                item = {"type": "text", "text": item}
            if not isinstance(item, dict):
                continue
            block = cast(dict[str, Any], item)
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                if self._translating:
                    texts.append(block["text"])
                elif block["text"]:
                    blocks.append({"type": "text", "text": block["text"]})
                continue
            blocks.extend(self._parts.content([block], "anthropic", attached=attached))
        joined = "".join(texts)
        return ([{"type": "text", "text": joined}] if joined else []) + blocks

    def _result_blocks(self, output: str, parts: Any, i: int) -> list[dict[str, Any]]:
        if not isinstance(parts, list):
            raise UsageError(f"messages[{i}].parts must be a list of content parts")
        blocks = [{"type": "text", "text": output}] if output else []
        for p in cast(list[Any], parts):
            blocks.append(self._parts.block(p, "anthropic", attached=False))
        return blocks

    def _append(self, role: str, content: str | list[dict[str, Any]]) -> None:
        # Same-role neighbours merge into one message of blocks. Every list in ``out`` was
        # built here, so one rendered in this call is extended in place; one handed out
        # before is replaced by a merged copy.
        out = self._out
        if not out or out[-1]["role"] != role:
            out.append({"role": role, "content": content})
            return
        last = out[-1]
        if len(out) > self._sealed:
            blocks = _as_blocks(last["content"])
            blocks.extend(_as_blocks(content))
            last["content"] = blocks
        else:
            blocks = [*_as_blocks(last["content"]), *_as_blocks(content)]
            out[-1] = {"role": role, "content": blocks}
            self._sealed = len(out) - 1


def to_anthropic(
    messages: Sequence[Message],
    system: str | None = None,
    *,
    parts: PartPolicy | None = None,
    translating: bool = True,
) -> tuple[list[dict[str, Any]], str | None]:
    """Render a canonical transcript as Anthropic ``messages`` plus the top-level ``system``.

    ``system``/``developer`` messages are hoisted and joined by ``\\n\\n``; an explicit
    ``system`` overrides them. Assistant ``tool_calls`` become ``tool_use`` blocks after the
    text; ``tool`` messages become ``tool_result`` blocks; same-role neighbours merge, so
    consecutive tool results form one user turn. An assistant turn with neither text nor tool
    calls is dropped. Content parts become blocks under ``parts`` (a fresh `PartPolicy` when
    ``None``); ``translating`` (the default here: this is §11's pure translation) sends a part
    that cannot go as a text placeholder and puts a user message's text first. The input is
    not modified.

    Raises:
        UsageError: a message is not a dict, has no role or an unknown one, unreadable
            content, or a tool call / tool result without its id or name.

    Example::

        to_anthropic([{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "hi"}])
        # ([{"role": "user", "content": "hi"}], "Be brief.")
    """
    out, hoisted = AnthropicRendering(parts, translating=translating).render(list(messages))
    chosen = system if system is not None else hoisted
    return out, chosen or None


def _from_blocks(message: Message, i: int, names: dict[str, str]) -> list[Message]:
    role = message["role"]
    blocks = cast(list[Any], message["content"])
    texts: list[str] = []
    existing = message.get("tool_calls")
    calls: list[Any] = list(cast(list[Any], existing)) if isinstance(existing, list) else []
    results: list[Message] = []
    for j, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise UsageError(f"messages[{i}].content[{j}] must be a dict")
        block = cast(dict[str, Any], block)
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            name, call_id = block.get("name"), block.get("id")
            if not isinstance(name, str) or not name or not isinstance(call_id, str):
                raise UsageError(f"messages[{i}].content[{j}] is a tool_use without id or name")
            arguments = block.get("input", {})
            names[call_id] = name
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": compact_json(arguments)},
                }
            )
        elif kind == "tool_result":
            call_id = block.get("tool_use_id")
            text = text_of(block.get("content"))
            if not isinstance(call_id, str) or text is None:
                raise UsageError(f"messages[{i}].content[{j}] is an unreadable tool_result")
            result: Message = {"role": "tool", "tool_call_id": call_id, "content": text}
            if block.get("is_error") is True:
                result["is_error"] = True
            if isinstance(block.get("parts"), list) and block["parts"]:
                # The reference's anthropic transcript keeps a result's parts on the block.
                result["parts"] = block["parts"]
                result["name"] = names.get(call_id)
            results.append(result)
    text = "".join(texts)
    if calls:
        return [*results, {"role": role, "content": text or None, "tool_calls": calls}]
    if results:
        return [*results, {"role": role, "content": text}] if text else results
    return [{"role": role, "content": text}]


def from_anthropic(messages: Sequence[Message]) -> list[Message]:
    """Turn an Anthropic-shaped history into canonical messages.

    ``tool_use`` blocks become ``tool_calls`` (arguments as compact JSON text), each
    ``tool_result`` block becomes its own ``tool`` message (before any text of the same turn;
    a block's ``parts`` are kept, with the tool's name), text blocks are concatenated into
    ``content``. Messages whose content is a string or
    ``None`` are already canonical and pass through (copied), so a mixed history works too.

    Raises:
        UsageError: a message is not a dict or has no role, or a block is unreadable.
    """
    out: list[Message] = []
    names: dict[str, str] = {}  # tool_use id → tool name, for results that carry parts
    for i, message in enumerate(_checked(messages)):
        if isinstance(message.get("content"), list):
            out.extend(_from_blocks(message, i, names))
        else:
            out.append(dict(message))
    return out


def _is_anthropic(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if not isinstance(content, list):
        return False
    return any(
        isinstance(block, dict) and cast(dict[str, Any], block).get("type") in _ANTHROPIC_BLOCKS
        for block in cast(list[Any], content)
    )


def normalize_history(messages: Sequence[Any]) -> list[Message]:
    """Canonical messages from a history that may be canonical or Anthropic-shaped.

    A history is taken as Anthropic-shaped when any message holds a ``tool_use`` or
    ``tool_result`` block; otherwise it is returned as a new list of shallow copies.

    Raises:
        UsageError: a message is not a dict or has no role (the message names its index).

    >>> normalize_history([{"role": "user", "content": "hi"}])
    [{'role': 'user', 'content': 'hi'}]
    """
    checked = _checked(messages)
    if any(_is_anthropic(message) for message in checked):
        return from_anthropic(checked)
    return [dict(message) for message in checked]
