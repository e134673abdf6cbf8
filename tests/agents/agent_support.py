"""Helpers for the agent runtime tests: a scripted model that behaves like the seeds'."""

from __future__ import annotations

from typing import Any

from toolnexus import Tool, ToolContext, ToolResult, pending
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def approval_brain(done_text: str = "approved and done") -> Any:
    """Like the seed's approvalLLM: a tool call until a tool result is seen, then text."""

    def brain(request: RecordedRequest) -> Reply:
        seen = [m for m in request.body["messages"] if m.get("role") == "tool"]
        if not seen:
            return tool_calls(call("check_secret", {}, id="c1"))
        return text(
            done_text
            if "declined" not in str(seen[-1]["content"])
            else "understood — access was declined"
        )

    return brain


def check_secret_tool(calls: list[Any] | None = None) -> Tool:
    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        if calls is not None:
            calls.append(ctx.answer if ctx is not None else None)
        if ctx is not None and ctx.answer is not None and ctx.answer.ok:
            return ToolResult("secret-token")
        if ctx is not None and ctx.answer is not None:
            return ToolResult(f"outcome ok={ctx.answer.ok} declined")
        return pending(kind="approval", prompt="approve secret access?")

    return Tool("check_secret", "needs approval", SCHEMA, "custom", execute)


def llm_of(model: ScriptedModel, **extra: Any) -> dict[str, Any]:
    return {
        "base_url": model.openai_base_url,
        "style": "openai",
        "model": "m-asker",
        "api_key": "k",
        "retry_base_ms": 1,
        **extra,
    }
