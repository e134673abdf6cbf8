"""The guards of a resume: pure checks of an answer against the halted run it resumes.

`toolnexus.resumption` runs them before anything is written: the answer echoes the request,
and every tool the halted turn still needs is in the toolkit (what the answer must carry — a
relayed call's outputs, a form's data — is the answer intake's, `toolnexus.intake`). Each
failure is a `ResumeError` (or `AnswerMismatch`) and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._types import Tool
from ..errors import AnswerMismatch, ResumeError
from ..suspension import Answer, Request, check_answer
from .checkpoint import Checkpoint

__all__ = [
    "as_answer",
    "as_request",
    "check_echo",
    "check_tools",
]


def as_request(value: Request | Mapping[str, Any]) -> Request:
    """Accept a `Request` or its wire dict."""
    if isinstance(value, Request):
        return value
    try:
        return Request.from_dict(value)
    except (TypeError, ValueError) as exc:
        raise ResumeError(
            f"toolnexus: cannot resume — the pending request is malformed: {exc}"
        ) from exc


def as_answer(value: Answer | Mapping[str, Any]) -> Answer:
    """Accept a well-typed `Answer` or its wire dict (the same rules for both).

    Raises:
        InvalidAnswer: a field has the wrong type or the dict has unknown/missing keys.
    """
    return check_answer(value)


def check_echo(pending: Request, answer: Answer) -> None:
    """The Answer must echo the pending Request's id."""
    if answer.id != pending.id:
        raise AnswerMismatch(
            f'toolnexus: cannot resume — answer id "{answer.id}" does not echo the pending '
            f'request id "{pending.id}"'
        )


def check_tools(checkpoint: Checkpoint, tools: Mapping[str, Tool]) -> None:
    """Every call that must still run has to exist in the toolkit used to resume."""
    missing = sorted(
        {o.name for o in checkpoint.outstanding if o.state != "done" and o.name not in tools}
    )
    if missing:
        raise ResumeError(
            "toolnexus: cannot resume — the toolkit lacks the halted tool(s): " + ", ".join(missing)
        )
