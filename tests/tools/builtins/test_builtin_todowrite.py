"""The ``todowrite`` built-in (CONTRACT §4A)."""

from __future__ import annotations

from typing import Any

import pytest
from builtin_support import Builtin

from toolnexus.tools.builtins import TodoList, parse_builtin_options
from toolnexus.tools.builtins.todowrite import todowrite_tool

TODOS: list[dict[str, Any]] = [
    {"id": "1", "text": "write the parser", "completed": True},
    {"id": "2", "text": "test it", "completed": False},
]


async def test_the_list_is_rendered(builtin: Builtin) -> None:
    result = await builtin("todowrite").execute({"todos": TODOS})

    assert not result.is_error
    assert result.output == "[x] write the parser\n[ ] test it"
    assert result.metadata == {"todos": TODOS}


async def test_an_empty_list_says_so(builtin: Builtin) -> None:
    result = await builtin("todowrite").execute({"todos": []})

    assert result.output == "(no todos)"


async def test_each_call_replaces_the_list() -> None:
    todos = TodoList()
    tool = todowrite_tool(parse_builtin_options(None), todos)
    await tool.execute({"todos": TODOS})

    await tool.execute({"todos": [{"id": "9", "text": "only", "completed": False}]})

    assert todos.items == [{"id": "9", "text": "only", "completed": False}]


async def test_each_tool_instance_holds_its_own_list() -> None:
    options = parse_builtin_options(None)
    first, second = TodoList(), TodoList()
    await todowrite_tool(options, first).execute({"todos": TODOS})

    await todowrite_tool(options, second).execute({"todos": []})

    assert first.items == TODOS
    assert second.items == []


@pytest.mark.parametrize(
    "todos",
    [
        "not a list",
        [{"id": "1", "text": "x"}],
        [{"id": "1", "text": "x", "completed": "yes"}],
        [{"id": "", "text": "x", "completed": False}],
        [{"text": "x", "completed": False}],
        ["just text"],
    ],
)
async def test_a_malformed_list_is_an_error_and_keeps_the_old_one(todos: object) -> None:
    held = TodoList()
    tool = todowrite_tool(parse_builtin_options(None), held)
    await tool.execute({"todos": TODOS})

    result = await tool.execute({"todos": todos})

    assert result.is_error
    assert held.items == TODOS


async def test_numeric_ids_are_accepted_as_text(builtin: Builtin) -> None:
    result = await builtin("todowrite").execute(
        {"todos": [{"id": 3, "text": "x", "completed": False}]}
    )

    assert result.output == "[ ] x"
