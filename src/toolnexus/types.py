"""``toolnexus.types``: the core types under the existing package's module path.

A thin re-export: every name is the same object as ``toolnexus.<name>``.
"""

from ._types import JSONSchema, Tool, ToolContext, ToolResult, ToolSource, sanitize
from ._types import ToolExecute as ExecuteFn
from .suspend import auth_required, pending, pending_of
from .suspension import Answer, Request, answer_declined, answer_output
from .tools.mcp_config import McpStatus

__all__ = [
    "Answer",
    "ExecuteFn",
    "JSONSchema",
    "McpStatus",
    "Request",
    "Tool",
    "ToolContext",
    "ToolResult",
    "ToolSource",
    "answer_declined",
    "answer_output",
    "auth_required",
    "pending",
    "pending_of",
    "sanitize",
]
