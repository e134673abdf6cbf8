"""The ``question`` built-in: ask the user structured questions mid-run.

The first call suspends with ``kind="question"``, the rendered questions as the prompt and the
questions themselves in ``data.questions``. The retry with the user's answer returns the JSON of
``answer.data`` (recommended shape ``{"answers": [...]}``, forwarded verbatim). Without a
``wait_for`` the run halts ``pending`` and is resumed with ``run_with_answer``.

Trust boundary: never use ``question`` to collect credentials; use ``auth_required`` + a URL.
"""

from __future__ import annotations

import json
from typing import Any, cast

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ...suspend import pending

__all__ = ["QUESTION_SCHEMA", "question_tool", "render_questions"]

QUESTION_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "description": "The questions to ask, in order.",
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question text."},
                    "header": {"type": "string", "description": "A short label."},
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Choices to offer, if any.",
                    },
                    "multiple": {
                        "type": "boolean",
                        "description": "Whether several options may be chosen.",
                    },
                },
                "required": ["question"],
            },
        }
    },
    "required": ["questions"],
}

_DESCRIPTION = (
    "Ask the user one or more questions and wait for their answers. Use it when you need a "
    "decision, a preference or missing information only the user can give. Never use it to ask "
    "for passwords, tokens or other credentials."
)


def render_questions(questions: list[dict[str, Any]]) -> str:
    """Each question's text in order, `` (options: a, b)`` appended when it has options,
    joined by newlines (the header is not rendered)."""
    lines: list[str] = []
    for q in questions:
        text = str(q.get("question", ""))
        options = q.get("options")
        if isinstance(options, list) and options:
            text += " (options: " + ", ".join(str(o) for o in cast(list[Any], options)) + ")"
        lines.append(text)
    return "\n".join(lines)


async def _execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    answer = ctx.answer if ctx is not None else None
    if answer is not None:
        return ToolResult(json.dumps(answer.data if answer.data is not None else {}))
    raw: list[Any] = args.get("questions") or []
    questions = [cast(dict[str, Any], q) for q in raw if isinstance(q, dict)]
    return pending(
        kind="question", prompt=render_questions(questions), data={"questions": questions}
    )


def question_tool() -> Tool:
    """The ``question`` built-in tool."""
    return Tool(
        name="question",
        description=_DESCRIPTION,
        input_schema=QUESTION_SCHEMA,
        source="builtin",
        execute=_execute,
    )
