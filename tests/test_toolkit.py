"""The toolkit: assembly, registration, execution, adapters, lifecycle (CONTRACT §4, §5)."""

from __future__ import annotations

import json
from typing import Any, cast

import aiohttp
import pytest

from toolnexus import (
    Answer,
    Tool,
    ToolContext,
    Toolkit,
    ToolResult,
    UsageError,
    create_toolkit,
    define_tool,
    to_anthropic,
    to_gemini,
    to_openai,
)
from toolnexus.testing import ScriptedModel, call, text, tool_calls

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


def make(name: str, output: str = "ok", runs: list[dict[str, Any]] | None = None) -> Tool:
    """A native tool named ``name`` answering ``output``; executions go to ``runs``."""

    def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> str:
        if runs is not None:
            runs.append(args)
        return output

    return Tool(
        name=name,
        description=f"The {name} tool.",
        input_schema={"type": "object", "properties": {}},
        source="native",
        execute=execute,
    )


def adder(runs: list[dict[str, Any]]) -> Tool:
    def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> str:
        runs.append(args)
        return str(args["a"] + args["b"])

    return Tool(
        name="add",
        description="Add two numbers.",
        input_schema=ADD_SCHEMA,
        source="native",
        execute=execute,
    )


# -- assembly ------------------------------------------------------------------------------------


async def test_host_tools_come_after_the_builtins() -> None:
    toolkit = await create_toolkit(extra_tools=[make("mine")])
    names = toolkit.names()
    assert names[-1] == "mine"
    assert [t.source for t in toolkit.tools()[:-1]] == ["builtin"] * (len(names) - 1)


async def test_a_host_tool_shadows_the_builtin_of_the_same_name() -> None:
    builtin_name = (await create_toolkit()).names()[0]
    mine = make(builtin_name, "host version")
    toolkit = await create_toolkit(extra_tools=[mine])
    assert toolkit.get(builtin_name) is mine
    assert toolkit.names().count(builtin_name) == 1


async def test_duplicate_names_keep_the_first_tool() -> None:
    first, second = make("dup", "first"), make("dup", "second")
    toolkit = await create_toolkit(extra_tools=[first, second], builtins=False)
    assert toolkit.tools() == [first]


async def test_the_tools_alias_follows_extra_tools() -> None:
    toolkit = await create_toolkit(
        extra_tools=[make("a"), make("b")], tools=[make("c"), make("a", "late")], builtins=False
    )
    assert toolkit.names() == ["a", "b", "c"]
    assert toolkit.get("a") is not None
    assert (await toolkit.execute("a", {})).output == "ok"


async def test_disable_tools_drops_tools_by_their_final_name() -> None:
    builtin_name = (await create_toolkit()).names()[0]
    toolkit = await create_toolkit(
        extra_tools=[make("keep"), make("drop")], disable_tools=["drop", builtin_name]
    )
    assert "drop" not in toolkit.names()
    assert builtin_name not in toolkit.names()
    assert "keep" in toolkit.names()


async def test_builtins_false_leaves_only_the_host_tools() -> None:
    toolkit = await create_toolkit(extra_tools=[make("only")], builtins=False)
    assert toolkit.names() == ["only"]


async def test_something_that_is_not_a_tool_is_refused() -> None:
    with pytest.raises(UsageError, match=r"expected a toolnexus\.Tool, got function"):
        await create_toolkit(extra_tools=cast(Any, [lambda: "x"]))


# -- register / get -----------------------------------------------------------------------------


async def test_register_adds_tools_and_the_adapters_see_them() -> None:
    toolkit = await create_toolkit(builtins=False)
    assert toolkit.to_openai() == []
    tool = make("late")
    toolkit.register(tool)
    assert toolkit.get("late") is tool
    assert [d["function"]["name"] for d in toolkit.to_openai()] == ["late"]
    assert [d["name"] for d in toolkit.to_anthropic()] == ["late"]


async def test_registering_a_taken_name_keeps_the_first_and_says_so_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # COMPAT §7: the existing package's rule (ours used to raise).
    first = make("x")
    toolkit = await create_toolkit(extra_tools=[first], builtins=False)
    assert toolkit.register(make("x")) is toolkit
    assert toolkit.tools() == [first]
    assert '[toolnexus] duplicate tool name "x" — keeping first' in capsys.readouterr().err


async def test_registering_something_that_is_not_a_tool_is_a_usage_error() -> None:
    toolkit = await create_toolkit(builtins=False)
    with pytest.raises(UsageError, match=r"expected a toolnexus\.Tool, got str"):
        toolkit.register(cast(Any, "not a tool"))


async def test_get_of_an_unknown_name_is_none() -> None:
    toolkit = await create_toolkit(extra_tools=[make("x")], builtins=False)
    assert toolkit.get("y") is None


# -- execute --------------------------------------------------------------------------------------


async def test_execute_routes_by_name_and_passes_the_context() -> None:
    seen: list[ToolContext | None] = []

    def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> str:
        seen.append(ctx)
        return f"got {args['v']}"

    tool = Tool(
        name="t",
        description="",
        input_schema={"type": "object", "properties": {"v": {"type": "number"}}},
        source="custom",
        execute=execute,
    )
    toolkit = await create_toolkit(extra_tools=[tool], builtins=False)
    ctx = ToolContext(answer=Answer(id="a", ok=True))
    result = await toolkit.execute("t", {"v": 1}, ctx)
    assert result == ToolResult("got 1")
    assert seen == [ctx]


async def test_execute_of_an_unknown_tool_is_an_error_result_not_an_exception() -> None:
    toolkit = await create_toolkit(extra_tools=[make("b"), make("a")], builtins=False)
    result = await toolkit.execute("c", {})
    assert (result.output, result.is_error) == ('unknown tool "c" (available: a, b)', True)


async def test_execute_with_arguments_failing_the_schema_never_runs_the_tool() -> None:
    runs: list[dict[str, Any]] = []
    toolkit = await create_toolkit(extra_tools=[adder(runs)], builtins=False)
    result = await toolkit.execute("add", {"a": 1})
    assert result.is_error is True
    assert result.output == "invalid arguments for tool \"add\": 'b' is a required property"
    assert runs == []


async def test_execute_of_a_raising_tool_is_an_error_result() -> None:
    def boom(args: dict[str, Any], ctx: ToolContext | None = None) -> str:
        raise ValueError("bad day")

    tool = Tool(
        name="boom",
        description="",
        input_schema={"type": "object", "properties": {}},
        source="custom",
        execute=boom,
    )
    toolkit = await create_toolkit(extra_tools=[tool], builtins=False)
    result = await toolkit.execute("boom")
    assert result.is_error is True
    assert "ValueError: bad day" in result.output


# -- adapters --------------------------------------------------------------------------------------


async def test_the_adapters_render_each_provider_shape() -> None:
    add = adder([])
    toolkit = await create_toolkit(extra_tools=[add, make("b")], builtins=False)
    assert toolkit.to_openai()[0] == {
        "type": "function",
        "function": {"name": "add", "description": "Add two numbers.", "parameters": ADD_SCHEMA},
    }
    assert toolkit.to_anthropic()[0] == {
        "name": "add",
        "description": "Add two numbers.",
        "input_schema": ADD_SCHEMA,
    }
    assert toolkit.to_gemini() == [
        {
            "functionDeclarations": [
                {"name": "add", "description": "Add two numbers.", "parameters": ADD_SCHEMA},
                {
                    "name": "b",
                    "description": "The b tool.",
                    "parameters": {"type": "object", "properties": {}},
                },
            ]
        }
    ]


async def test_the_free_adapter_functions_match_the_methods() -> None:
    toolkit = await create_toolkit(extra_tools=[adder([]), make("b")])
    tools = toolkit.tools()
    assert to_openai(tools) == toolkit.to_openai()
    assert to_anthropic(tools) == toolkit.to_anthropic()
    assert to_gemini(tools) == toolkit.to_gemini()
    assert len(to_gemini(tools)) == 1


async def test_adapter_names_match_the_tool_names() -> None:
    toolkit = await create_toolkit(extra_tools=[adder([]), make("b")])
    names = toolkit.names()
    assert [d["function"]["name"] for d in toolkit.to_openai()] == names
    assert [d["name"] for d in toolkit.to_anthropic()] == names
    assert [d["name"] for d in toolkit.to_gemini()[0]["functionDeclarations"]] == names


async def test_without_skills_or_mcp_the_prompt_is_empty_and_the_status_too() -> None:
    toolkit = await create_toolkit(extra_tools=[make("x")])
    assert toolkit.skills_prompt() == ""
    assert toolkit.mcp_status() == {}


# -- lifecycle ---------------------------------------------------------------------------------


async def test_close_is_idempotent() -> None:
    closed: list[str] = []

    async def closer() -> None:
        closed.append("closed")

    toolkit = Toolkit([make("x")], closers=[closer])
    await toolkit.close()
    await toolkit.close()
    assert closed == ["closed"]


async def test_close_runs_every_closer_even_when_one_fails() -> None:
    closed: list[str] = []

    async def good() -> None:
        closed.append("good")

    async def bad() -> None:
        raise OSError("already gone")

    await Toolkit([], closers=[good, bad]).close()
    assert closed == ["good"]


async def test_the_toolkit_is_an_async_context_manager_that_closes() -> None:
    closed: list[str] = []

    async def closer() -> None:
        closed.append("closed")

    async with Toolkit([make("x")], closers=[closer]) as toolkit:
        assert toolkit.names() == ["x"]
        assert closed == []
    assert closed == ["closed"]


async def test_create_toolkit_result_works_with_async_with() -> None:
    async with await create_toolkit(extra_tools=[make("x", "fine")]) as toolkit:
        assert (await toolkit.execute("x", {})).output == "fine"


# -- bring your own loop (§5) -----------------------------------------------------------------


async def test_the_bring_your_own_loop_shape_works_against_a_real_endpoint(
    scripted: ScriptedModel,
) -> None:
    runs: list[dict[str, Any]] = []
    scripted.add(tool_calls(call("add", {"a": 20, "b": 22}, id="c1")), text("42"))
    toolkit = await create_toolkit(extra_tools=[adder(runs)], builtins=False)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You add." + toolkit.skills_prompt()},
        {"role": "user", "content": "20+22?"},
    ]
    url = scripted.openai_base_url + "/chat/completions"
    async with aiohttp.ClientSession() as session:
        while True:
            body = {"model": "m-1", "messages": messages, "tools": toolkit.to_openai()}
            async with session.post(url, json=body) as response:
                message = (await response.json())["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                break
            for tc in message["tool_calls"]:
                args = json.loads(tc["function"]["arguments"])
                result = await toolkit.execute(tc["function"]["name"], args)
                messages.append(
                    {"role": "tool", "tool_call_id": tc["id"], "content": result.output}
                )
    await toolkit.close()
    assert runs == [{"a": 20, "b": 22}]
    assert messages[-1]["content"] == "42"
    assert scripted.requests[1].body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "42",
    }


async def test_a_native_tool_from_define_tool_runs_through_execute() -> None:
    @define_tool
    def greet(who: str) -> str:
        """Say hello."""
        return f"hello {who}"

    toolkit = await create_toolkit(extra_tools=[greet], builtins=False)
    assert (await toolkit.execute("greet", {"who": "ann"})).output == "hello ann"
    assert toolkit.to_openai()[0]["function"]["description"] == "Say hello."
