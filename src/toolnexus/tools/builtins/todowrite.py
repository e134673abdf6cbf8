"""The ``todowrite`` built-in: the model's todo list for this toolkit.

``todowrite{todos: [{id, text, completed}]}`` replaces the whole list and answers it rendered,
one item per line, unnumbered as in the toolnexus package: ``[x] <text>`` for a completed
item, ``[ ] <text>`` otherwise (``(no todos)`` for an empty list). The list lives in the tool
instance, so each toolkit has its own; nothing is persisted (stateless across processes, as the
contract says). A malformed item is an error and leaves the list as it was.
``metadata={"todos": [...]}`` carries the list as given (what ``all_todos_done`` reads).
"""

from __future__ import annotations

from typing import Any, cast

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._options import BuiltinOptions
from ._output import BuiltinError, builtin_tool

__all__ = ["TODOWRITE_SCHEMA", "TodoList", "render_todos", "todowrite_tool"]

TODOWRITE_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "The full todo list; it replaces the previous one",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "A short stable id, e.g. 1"},
                    "text": {"type": "string", "description": "What to do"},
                    "completed": {"type": "boolean", "description": "Whether it is done"},
                },
                "required": ["id", "text", "completed"],
            },
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}

_DESCRIPTION = (
    "Replace your todo list with the given items and get it back rendered. Send the whole "
    "list each time, marking finished items completed."
)


def render_todos(todos: list[dict[str, Any]]) -> str:
    """``[x] text`` lines, in order; ``(no todos)`` for an empty list.

    >>> render_todos([{"id": "1", "text": "write tests", "completed": True}])
    '[x] write tests'
    """
    if not todos:
        return "(no todos)"
    return "\n".join(f"[{'x' if t['completed'] else ' '}] {t['text']}" for t in todos)


class TodoList:
    """The list one ``todowrite`` tool holds; a host may pass its own to watch it."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[dict[str, Any]] = []

    @property
    def items(self) -> list[dict[str, Any]]:
        """A copy of the current items (``{"id", "text", "completed"}`` dicts)."""
        return [dict(t) for t in self._items]

    def replace(self, todos: list[dict[str, Any]]) -> None:
        """Make ``todos`` the whole list."""
        self._items = [dict(t) for t in todos]


def todowrite_tool(options: BuiltinOptions, todos: TodoList | None = None) -> Tool:
    """A ``todowrite`` built-in holding ``todos`` (a fresh, empty list by default)."""
    held = todos if todos is not None else TodoList()

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        given = args.get("todos")
        held.replace(_todos(given))
        as_given = [dict(t) for t in cast(list[dict[str, Any]], given)]
        return ToolResult(render_todos(held.items), metadata={"todos": as_given})

    return builtin_tool(
        "todowrite",
        _DESCRIPTION,
        TODOWRITE_SCHEMA,
        run,
        max_output_bytes=options.max_output_bytes,
    )


def _todos(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise BuiltinError("todos must be a list of {id, text, completed} items")
    todos: list[dict[str, Any]] = []
    for position, item in enumerate(cast(list[Any], value), start=1):
        if not isinstance(item, dict):
            raise BuiltinError(f"todo {position} must be an object with id, text and completed")
        entry = cast(dict[str, Any], item)
        ident, text, done = entry.get("id"), entry.get("text"), entry.get("completed")
        if isinstance(ident, int) and not isinstance(ident, bool):
            ident = str(ident)
        if not isinstance(ident, str) or not ident:
            raise BuiltinError(f"todo {position}: id must be a non-empty string")
        if not isinstance(text, str):
            raise BuiltinError(f"todo {position}: text must be a string")
        if not isinstance(done, bool):
            raise BuiltinError(f"todo {position}: completed must be true or false")
        todos.append({"id": ident, "text": text, "completed": done})
    return todos
