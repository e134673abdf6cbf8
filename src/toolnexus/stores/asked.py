"""What a request asked: the halted call and the conversation around it, kept with its row.

A halted run's checkpoint holds everything a person needs to judge a request — the tool, the
arguments the model gave it, the user's last message and the model's turn that made the call —
but only while the run waits: a run that finishes drops its checkpoint (T8), and a cancel does
too (T11). `Asked` is the part of it a page shows; each store writes it beside the checkpoint at
``save_halt`` (T1: the one moment every backend holds the checkpoint, so no answering move has
to read and parse it again — Postgres records an answer in one statement without that), and
keeps it when the checkpoint goes. `asked_of` is the one reading of a checkpoint for that: the
inbox shows a waiting request from it too.

The context texts are kept up to `CONTEXT_LIMIT` characters each (a pasted document must not
double a row); the arguments are kept whole — they are the call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..loop.checkpoint import Checkpoint
from ..suspension import Request
from .checks import halted_call

__all__ = [
    "CONTEXT_LIMIT",
    "Asked",
    "agent_path",
    "asked_of",
    "decode_asked",
    "encode_asked",
    "message_text",
]

CONTEXT_LIMIT = 4000
"""The characters of each context text a row keeps."""

_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """What one request asked, as a page shows it.

    Attributes:
        tool: the halted call's tool (``""``: a halt at the model call).
        arguments: the arguments the model gave it, as JSON text, exactly.
        path: the agent path of a sub-agent's request (``Request.data.path``).
        url: an authorization request's link.
        user_text: the user's last message.
        assistant_text: the model's turn that made the call (its text and its calls).
        cut: a context text was cut to `CONTEXT_LIMIT` when it was kept.
    """

    tool: str = ""
    arguments: str = "{}"
    path: tuple[str, ...] = ()
    url: str | None = None
    user_text: str = ""
    assistant_text: str = ""
    cut: bool = False


def asked_of(checkpoint: Checkpoint) -> Asked:
    """What the request ``checkpoint`` waits on asked (whole: nothing is cut here)."""
    name, arguments = halted_call(checkpoint)
    req = checkpoint.pending
    users = [m for m in checkpoint.messages if m.get("role") == "user"]
    last = checkpoint.messages[-1] if checkpoint.messages else None
    assistant = last if last is not None and last.get("role") == "assistant" else None
    return Asked(
        tool=name,
        arguments=arguments,
        path=agent_path(req),
        url=req.url,
        user_text=message_text(users[-1] if users else None),
        assistant_text=message_text(assistant),
    )


def agent_path(request: Request) -> tuple[str, ...]:
    """The agent path of a sub-agent's request (``Request.data.path``; ``()`` when none)."""
    raw: Any = (request.data or {}).get("path")
    return tuple(str(p) for p in cast(list[Any], raw)) if isinstance(raw, list) else ()


def _kept(text: str) -> tuple[str, bool]:
    if len(text) <= CONTEXT_LIMIT:
        return text, False
    return text[: CONTEXT_LIMIT - 1] + "…", True


def encode_asked(asked: Asked) -> str:
    """``asked`` as the JSON text a store keeps, its context texts cut to `CONTEXT_LIMIT`."""
    user, user_cut = _kept(asked.user_text)
    assistant, assistant_cut = _kept(asked.assistant_text)
    value: dict[str, Any] = {"tool": asked.tool, "arguments": asked.arguments}
    if asked.path:
        value["path"] = list(asked.path)
    if asked.url is not None:
        value["url"] = asked.url
    if user:
        value["user"] = user
    if assistant:
        value["assistant"] = assistant
    if asked.cut or user_cut or assistant_cut:
        value["cut"] = True
    return _ENCODER.encode(value)


def decode_asked(text: object) -> Asked | None:
    """The `Asked` a store kept (``None`` for none, or for text that is not one: a page then
    says the request's call was not kept, as for a row saved before the column existed)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value: Any = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    got = cast(dict[str, Any], value)
    path: Any = got.get("path")
    url: Any = got.get("url")
    return Asked(
        tool=_str(got.get("tool")),
        arguments=_str(got.get("arguments"), "{}"),
        path=tuple(str(p) for p in cast(list[Any], path)) if isinstance(path, list) else (),
        url=url if isinstance(url, str) else None,
        user_text=_str(got.get("user")),
        assistant_text=_str(got.get("assistant")),
        cut=got.get("cut") is True,
    )


def _str(value: object, default: str = "") -> str:
    return value if isinstance(value, str) else default


def message_text(message: Mapping[str, Any] | None) -> str:
    """A transcript message's text (parts joined; tool calls listed by name and arguments)."""
    if message is None:
        return ""
    content: Any = message.get("content")
    out: list[str] = []
    if isinstance(content, str):
        out.append(content)
    elif isinstance(content, list):
        for part in cast(Sequence[Any], content):
            if isinstance(part, dict):
                text = cast(dict[str, Any], part).get("text")
                out.append(text if isinstance(text, str) else json.dumps(part)[:500])
    calls: Any = message.get("tool_calls")
    if isinstance(calls, list):
        for call in cast(list[Any], calls):
            if isinstance(call, dict):
                fn: Any = cast(dict[str, Any], call).get("function") or {}
                if isinstance(fn, dict):
                    fn_d = cast(dict[str, Any], fn)
                    out.append(f"→ {fn_d.get('name')}({fn_d.get('arguments')})")
    return "\n".join(out)
