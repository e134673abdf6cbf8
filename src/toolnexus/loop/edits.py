"""Approve with edited arguments: an approval answered with the arguments the call should run with.

The convention (docs/suspension.md, "Approve with edited arguments")::

    Answer(id, ok=True, data={"arguments": {...}})

on a request of kind ``"approval"`` that a tool call raised: the resumed call runs with those
arguments instead of the model's. They are checked against the tool's input schema first —
when the answer is recorded (`edited_arguments_problem`, from the schema the checkpoint keeps,
so a process without the toolkit can check), when a resume begins, and on the inline
``wait_for`` path — and an invalid edit is refused with `InvalidAnswer` before anything is
recorded or run. Then the call's arguments become the edited ones everywhere: the tool, a
``before_tool`` hook, the trace span, the run's records, the digest the answer records, and
the transcript's assistant turn (so the model reads what actually ran).

Left alone (``data`` is passed on as it is): an answer that declines, a request of any other
kind (an ``input`` form may well have a field named ``arguments``), and a tool that maps its
answers itself (``handles_declines``: relay tools, the agent runtime's ``task``, which hands
the answer down to the sub-agent whose own tool asked). The checkpoint marks such a call
``input_schema: false``, so that recording an edit of it is refused, as it is for a call an MCP
client made of a served tool (`toolnexus.serve.mcp_halts`: its arguments are the client's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from .._types import Message, Tool
from ..errors import InvalidAnswer
from ..intake import EDIT_KEY, intake, schema_problem
from ..suspension import Answer, Request

__all__ = [
    "APPROVAL",
    "EDIT_KEY",
    "accepted_for",
    "edit_schema",
    "editable",
    "edited_arguments_problem",
    "encode_arguments",
    "proposed_edit",
    "rewrite_call",
    "schema_problem",
]

APPROVAL = "approval"
"""The one request kind whose answer may edit the call's arguments."""

_NOT_GIVEN: Any = object()
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def proposed_edit(request: Request, answer: Answer) -> _Edit | None:
    """The edited arguments ``answer`` proposes for ``request``'s call (any value: not yet
    checked), or ``None`` when it proposes none (a decline, another kind, no ``arguments``)."""
    data = answer.data
    if not answer.ok or request.kind != APPROVAL or not isinstance(data, Mapping):
        return None
    value = cast(Mapping[str, Any], data).get(EDIT_KEY, _NOT_GIVEN)
    return None if value is _NOT_GIVEN else _Edit(value)


class _Edit:
    """A proposed edit (wrapped so that a proposed ``null`` is told from no proposal)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def editable(tool: Tool | None) -> bool:
    """Whether a call of ``tool`` takes edited arguments (not a tool that maps answers itself)."""
    return tool is None or not tool.handles_declines


def edit_schema(tool: Tool) -> Any:
    """What a checkpoint keeps to check edits of ``tool``'s call without the toolkit: its input
    schema, ``True`` (any object) when it does not validate, ``False`` when it takes no edits
    (it maps its answers itself)."""
    if not editable(tool):
        return False
    return tool.input_schema if tool.validate_args else True


def accepted_for(tool: Tool | None, name: str, request: Request, answer: Answer) -> Answer:
    """An inline answer through the intake (`toolnexus.intake`), against the halted call's
    own ``tool`` (``name``): an edit checked against its input schema. A tool that maps its
    answers itself (``handles_declines``: a relay tool, a sub-agent's ``task`` call, whose
    answer the sub-agent's own call takes in) gets the answer as it is.

    Raises:
        InvalidAnswer: the request does not take that answer (`AnswerRefused`), or it edits
            the arguments of a call to a tool the toolkit lacks; nothing ran.
    """
    if tool is not None and tool.handles_declines:
        return answer
    if tool is None and proposed_edit(request, answer) is not None:
        raise InvalidAnswer(
            f'toolnexus: cannot approve request "{request.id}" with edited arguments: '
            f'tool "{name}" is not in the toolkit'
        )
    schema = edit_schema(tool) if tool is not None else None
    return intake(request, answer, tool=name, edit_schema=schema)


def edited_arguments_problem(checkpoint: Any, arguments: Any) -> str | None:
    """Whether ``arguments`` may replace the halted call's arguments: ``None`` when they may,
    else what is wrong — the check an approvals page runs before it posts
    ``Answer(id, ok=True, data={"arguments": arguments})``, without the toolkit.

    The checkpoint's pending request must be an ``approval``; ``arguments`` a JSON object,
    valid against the halted tool's input schema as the checkpoint keeps it. A checkpoint
    written before toolnexus kept that schema is checked only for the object: the schema is
    then checked when the run resumes (an invalid edit fails the resume, nothing runs).

    Example::

        edited = {"order": "A-1", "amount": 40}
        checkpoint = await store.load_halt(request_id)
        problem = edited_arguments_problem(checkpoint, edited)
        if problem is None:
            await store.post_answer(request_id, Answer(request_id, True, {"arguments": edited}))

    Args:
        checkpoint: the halted run (`Checkpoint`, e.g. from `RunStore.load_halt`).
        arguments: the edited arguments.
    """
    from .checkpoint import Checkpoint

    if not isinstance(checkpoint, Checkpoint):
        return f"edited_arguments_problem takes a Checkpoint, got {type(checkpoint).__name__}"
    request = checkpoint.pending
    if request.kind != APPROVAL:
        return (
            f'request "{request.id}" is of kind "{request.kind}", not "{APPROVAL}": only an '
            "approval's arguments can be edited"
        )
    for slot in checkpoint.outstanding:
        if slot.request is not None and slot.request.id == request.id:
            return schema_problem(slot.name, slot.input_schema, arguments)
    first = checkpoint.outstanding[0]
    return schema_problem(first.name, first.input_schema, arguments)


def encode_arguments(arguments: dict[str, Any]) -> str:
    """Edited arguments as the JSON text a tool call carries."""
    return _ENCODER.encode(arguments)


def rewrite_call(messages: list[Message], call_id: str, arguments: str) -> None:
    """Set the arguments of call ``call_id`` in the last assistant turn that issued it, in
    place of the list (the message itself is copied: a checkpoint may share it)."""
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        calls: Any = message.get("tool_calls")
        if message.get("role") != "assistant" or not isinstance(calls, list):
            continue
        listed = cast(list[Any], calls)
        for i, call in enumerate(listed):
            if isinstance(call, dict) and cast(dict[str, Any], call).get("id") == call_id:
                entry = cast(dict[str, Any], call)
                function: Any = entry.get("function")
                fn = dict(cast(dict[str, Any], function)) if isinstance(function, dict) else {}
                fn["arguments"] = arguments
                changed = list(listed)
                changed[i] = {**entry, "function": fn}
                messages[at] = {**message, "tool_calls": changed}
                return
        return
