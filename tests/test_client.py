"""The client's tool-calling loop against a real loopback model (CONTRACT §8)."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import (
    BadResponse,
    Client,
    InMemoryConversationStore,
    ProviderError,
    RunResult,
    Tool,
    ToolCallRecord,
    ToolContext,
    ToolResult,
    UsageError,
    create_client,
    create_in_process_client,
    create_toolkit,
    define_tool,
)
from toolnexus.testing import ScriptedModel, call, text, tool_calls

ClientFor = Callable[..., Client]
MODEL = "m-1"
API_KEY = "sk-test"


@define_tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def native(name: str, fn: Any, schema: dict[str, Any] | None = None) -> Tool:
    """A tool whose ``execute`` is ``fn(args, ctx)``."""
    return Tool(
        name=name,
        description=f"the {name} tool",
        input_schema=schema or {"type": "object", "properties": {}},
        source="native",
        execute=fn,
    )


def wire_messages(request: Any) -> list[dict[str, Any]]:
    return request.body["messages"]


# -- the loop --------------------------------------------------------------------------------


async def test_a_text_only_answer_is_done_after_one_turn(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(text("hello there"))
    async with client_for(scripted, style) as client:
        result = await client.run("hi")
    assert (result.text, result.status, result.turns) == ("hello there", "done", 1)
    assert result.tool_calls == []
    assert len(scripted.requests) == 1


async def test_a_tool_call_then_text_runs_the_tool_and_feeds_its_result_back(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(tool_calls(call("add", {"a": 2, "b": 3}, id="c1")), text("five"))
    toolkit = await create_toolkit(extra_tools=[add])
    async with client_for(scripted, style) as client:
        result = await client.run("2+3?", toolkit)
    assert result.text == "five"
    assert result.turns == 2
    assert [r.to_dict() for r in result.tool_calls] == [
        {
            "id": "c1",
            "name": "add",
            "args": {"a": 2, "b": 3},
            "output": "5",
            "is_error": False,
            "metadata": None,
        }
    ]
    assert result.messages[-2] == {"role": "tool", "tool_call_id": "c1", "content": "5"}


async def test_tool_calls_of_one_turn_run_concurrently(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    # Each tool waits for an event only the other one sets: run one after the other, the
    # first would wait forever (bounded here, so a sequential loop fails instead of hanging).
    first_in, second_in = asyncio.Event(), asyncio.Event()

    async def meet(mine: asyncio.Event, theirs: asyncio.Event) -> str:
        mine.set()
        try:
            async with asyncio.timeout(5):
                await theirs.wait()
        except TimeoutError:
            return "alone"
        return "met"

    left = native("left", lambda args, ctx: meet(first_in, second_in))
    right = native("right", lambda args, ctx: meet(second_in, first_in))
    scripted.add(tool_calls(call("left", {}, id="l"), call("right", {}, id="r")), text("ok"))
    async with client_for(scripted) as client:
        result = await client.run("go", [left, right])
    assert [r.output for r in result.tool_calls] == ["met", "met"]


async def test_results_are_appended_in_emission_order_not_completion_order(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    slow_started, fast_done = asyncio.Event(), asyncio.Event()

    async def slow(args: dict[str, Any], ctx: ToolContext | None) -> str:
        slow_started.set()
        await fast_done.wait()
        return "slow result"

    async def fast(args: dict[str, Any], ctx: ToolContext | None) -> str:
        await slow_started.wait()
        fast_done.set()
        return "fast result"

    tools = [native("slow", slow), native("fast", fast)]
    scripted.add(tool_calls(call("slow", {}, id="s"), call("fast", {}, id="f")), text("ok"))
    async with client_for(scripted, style) as client:
        result = await client.run("go", tools)
    assert [(m["tool_call_id"], m["content"]) for m in result.messages if m["role"] == "tool"] == [
        ("s", "slow result"),
        ("f", "fast result"),
    ]
    assert [r.id for r in result.tool_calls] == ["s", "f"]


async def test_exhausting_max_turns_without_text_is_incomplete(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(
        tool_calls(call("add", {"a": 1, "b": 1})), tool_calls(call("add", {"a": 2, "b": 2}))
    )
    async with client_for(scripted, max_turns=2) as client:
        result = await client.run("loop", [add])
    assert (result.status, result.limit, result.turns, result.text) == (
        "incomplete",
        "maxTurns",
        2,
        "",
    )
    assert result.tool_call_count == 2
    assert len(scripted.requests) == 2


async def test_a_capped_turn_that_has_text_stays_done(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 1}), text="Adding now."))
    async with client_for(scripted, max_turns=1) as client:
        result = await client.run("add", [add])
    assert (result.status, result.limit, result.text) == ("done", None, "Adding now.")


async def test_the_system_prompt_comes_first_on_the_wire(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(text("ok"))
    async with client_for(scripted, style, system_prompt="Be terse.") as client:
        result = await client.run("hi")
    assert result.messages[0] == {"role": "system", "content": "Be terse."}
    body = scripted.requests[0].body
    if style == "openai":
        assert body["messages"][0] == {"role": "system", "content": "Be terse."}
    else:
        assert body["system"] == "Be terse."
        assert body["messages"][0] == {"role": "user", "content": "hi"}


async def test_a_run_with_history_does_not_add_the_system_prompt_again(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("one"), text("two"))
    async with client_for(scripted, system_prompt="Be terse.") as client:
        first = await client.run("first")
        second = await client.run("second", history=first.messages)
    roles = [m["role"] for m in wire_messages(scripted.requests[1])]
    assert roles == ["system", "user", "assistant", "user"]
    assert [m["role"] for m in second.messages].count("system") == 1


async def test_the_model_name_is_sent_verbatim_on_every_turn(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    name = "Org/Model-X:v1.2 ünïcode"
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    async with client_for(scripted, style, model=name) as client:
        result = await client.run("hi", [add])
    assert [r.body["model"] for r in scripted.requests] == [name, name]
    assert result.model == name


@pytest.mark.parametrize("empty", ["none", "empty toolkit", "empty list"])
async def test_an_empty_tool_set_sends_neither_tools_nor_tool_choice(
    scripted: ScriptedModel, client_for: ClientFor, style: str, empty: str
) -> None:
    toolkit: Any = {"none": None, "empty list": []}.get(empty)
    if empty == "empty toolkit":
        toolkit = await create_toolkit(builtins=False)
    scripted.add(text("ok"))
    async with client_for(scripted, style) as client:
        await client.run("hi", toolkit)
    body = scripted.requests[0].body
    assert "tools" not in body
    assert "tool_choice" not in body


# -- the wire, per dialect -----------------------------------------------------------------


async def test_the_anthropic_wire_posts_to_v1_messages_with_its_headers(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("ok"))
    async with client_for(scripted, "anthropic") as client:
        await client.run("hi")
    request = scripted.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == API_KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.body["max_tokens"] == 4096


async def test_an_anthropic_base_url_ending_in_v1_is_not_doubled(
    scripted: ScriptedModel,
) -> None:
    scripted.add(text("ok"))
    async with create_client(
        base_url=scripted.url + "/v1", style="anthropic", model=MODEL, api_key=API_KEY
    ) as client:
        await client.run("hi")
    assert scripted.requests[0].path == "/v1/messages"


async def test_anthropic_tool_results_ride_one_user_message_of_tool_result_blocks(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(
        tool_calls(call("add", {"a": 1, "b": 2}, id="t1"), call("add", {"a": 3, "b": 4}, id="t2")),
        text("done"),
    )
    async with client_for(scripted, "anthropic") as client:
        await client.run("sum", [add])
    messages = wire_messages(scripted.requests[1])
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}},
            {"type": "tool_use", "id": "t2", "name": "add", "input": {"a": 3, "b": 4}},
        ],
    }
    assert messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "3"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "7"},
        ],
    }
    assert len(messages) == 3


async def test_the_openai_wire_posts_to_chat_completions_with_a_bearer_key(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("ok"))
    async with client_for(scripted, "openai") as client:
        await client.run("hi")
    request = scripted.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert "x-api-key" not in request.headers


async def test_openai_tool_results_are_tool_role_messages_with_exactly_three_keys(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1}, id="bad")), text("sorry"))
    async with client_for(scripted, "openai") as client:
        result = await client.run("add", [add])
    sent = wire_messages(scripted.requests[1])[-1]
    assert set(sent) == {"role", "tool_call_id", "content"}
    assert (sent["role"], sent["tool_call_id"]) == ("tool", "bad")
    assert result.tool_calls[0].is_error is True


# -- RunResult -------------------------------------------------------------------------------


async def test_run_result_carries_every_pinned_field(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")), text("3"))
    async with client_for(scripted) as client:
        result = await client.run("1+2", [add])
    assert isinstance(result, RunResult)
    assert result.text == "3"
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.tool_calls == [
        ToolCallRecord(name="add", args={"a": 1, "b": 2}, output="3", is_error=False, id="c1")
    ]
    assert result.tool_call_count == 1
    assert result.turns == 2
    assert result.usage == {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
    assert (result.model, result.status, result.limit, result.pending) == (
        MODEL,
        "done",
        None,
        None,
    )


async def test_usage_is_summed_over_turns_and_mapped_from_each_dialect(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(
        tool_calls(
            call("add", {"a": 1, "b": 2}), usage={"prompt_tokens": 7, "completion_tokens": 3}
        ),
        text("3", usage={"prompt_tokens": 11, "completion_tokens": 2}),
    )
    async with client_for(scripted, style) as client:
        result = await client.run("1+2", [add])
    assert result.usage == {"prompt_tokens": 18, "completion_tokens": 5, "total_tokens": 23}


async def test_run_result_messages_are_canonical_openai_shape_for_both_styles(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")), text("3"))
    async with client_for(scripted, style) as client:
        result = await client.run("1+2", [add])
    assert result.messages == [
        {"role": "user", "content": "1+2"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "3"},
        {"role": "assistant", "content": "3"},
    ]


ANTHROPIC_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "1+2?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Adding."},
            {"type": "tool_use", "id": "h1", "name": "add", "input": {"a": 1, "b": 2}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "h1", "content": "3"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "It is 3."}]},
]


async def test_an_anthropic_shaped_history_is_accepted_and_made_canonical(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(text("Still 3."))
    async with client_for(scripted, style) as client:
        result = await client.run("and again?", [add], history=ANTHROPIC_HISTORY)
    assert result.messages[:4] == [
        {"role": "user", "content": "1+2?"},
        {
            "role": "assistant",
            "content": "Adding.",
            "tool_calls": [
                {
                    "id": "h1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "h1", "content": "3"},
        {"role": "assistant", "content": "It is 3."},
    ]
    sent = wire_messages(scripted.requests[0])
    if style == "anthropic":
        assert sent[:3] == ANTHROPIC_HISTORY[:3]
        assert sent[3] == {"role": "assistant", "content": "It is 3."}
    else:
        assert sent[2] == {"role": "tool", "tool_call_id": "h1", "content": "3"}
    assert sent[-1] == {"role": "user", "content": "and again?"}


# -- conversation memory ---------------------------------------------------------------------


async def test_ask_with_an_id_saves_the_transcript_and_loads_it_next_time(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("Hi Ann."), text("You are Ann."))
    async with client_for(scripted) as client:
        first = await client.ask("I am Ann.", id="conv-1")
        assert await client.conversation_store.get("conv-1") == first.messages
        second = await client.ask("Who am I?", id="conv-1")
        assert await client.conversation_store.get("conv-1") == second.messages
    assert [m["content"] for m in wire_messages(scripted.requests[1])] == [
        "I am Ann.",
        "Hi Ann.",
        "Who am I?",
    ]


async def test_ask_on_a_sqlite_store_is_seen_by_a_second_client_on_the_same_file(
    scripted: ScriptedModel, client_for: ClientFor, tmp_path: Any
) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    scripted.add(text("Noted."), text("Blue."))
    async with client_for(scripted, store=url) as writer:
        await writer.ask("My colour is blue.", id="c-7")
    async with client_for(scripted, store=url) as reader:
        result = await reader.ask("What is my colour?", id="c-7")
    assert [m["content"] for m in wire_messages(scripted.requests[1])] == [
        "My colour is blue.",
        "Noted.",
        "What is my colour?",
    ]
    assert result.text == "Blue."


async def test_ask_without_an_id_leaves_the_store_untouched(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    store = InMemoryConversationStore()
    scripted.add(text("ok"))
    async with client_for(scripted, store=store) as client:
        result = await client.ask("hi")
        assert client.conversation_store is store
    assert result.text == "ok"
    assert len(store) == 0


async def test_a_conversation_carries_its_transcript_from_one_send_to_the_next(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("Hello Bo."), text("Bo."))
    async with client_for(scripted) as client:
        conversation = client.conversation([add])
        await conversation.send("I am Bo.")
        result = await conversation.send("My name?")
        assert conversation.messages == result.messages
    assert [m["content"] for m in wire_messages(scripted.requests[1])] == [
        "I am Bo.",
        "Hello Bo.",
        "My name?",
    ]


async def test_a_conversation_reset_starts_from_scratch(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("Hello Bo."), text("Who?"))
    async with client_for(scripted, system_prompt="sys") as client:
        conversation = client.conversation()
        await conversation.send("I am Bo.")
        conversation.reset()
        assert conversation.messages == []
        await conversation.send("My name?")
    assert wire_messages(scripted.requests[1]) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "My name?"},
    ]


# -- API key resolution ------------------------------------------------------------------------

KEY_VARS = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def sent_key(request: Any) -> str:
    if request.style == "openai":
        return request.headers["authorization"].removeprefix("Bearer ")
    return request.headers["x-api-key"]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"OPENROUTER_API_KEY": "or", "OPENAI_API_KEY": "oa", "ANTHROPIC_API_KEY": "an"}, "or"),
        ({"OPENAI_API_KEY": "oa", "ANTHROPIC_API_KEY": "an"}, "own"),
        ({"OPENAI_API_KEY": "oa"}, "oa"),
        ({"ANTHROPIC_API_KEY": "an"}, "an"),
    ],
    ids=["openrouter first", "own style next", "only openai", "only anthropic"],
)
async def test_the_api_key_falls_back_to_the_environment_in_the_pinned_order(
    scripted: ScriptedModel,
    client_for: ClientFor,
    style: str,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    expected: str,
) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if expected == "own":
        expected = "an" if style == "anthropic" else "oa"
    scripted.add(text("ok"))
    async with client_for(scripted, style, api_key=None) as client:
        await client.run("hi")
    assert sent_key(scripted.requests[0]) == expected


async def test_an_explicit_api_key_wins_over_the_environment(
    scripted: ScriptedModel, client_for: ClientFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "from-env")
    scripted.add(text("ok"))
    async with client_for(scripted, api_key="explicit") as client:
        await client.run("hi")
    assert sent_key(scripted.requests[0]) == "explicit"


async def test_no_api_key_anywhere_is_a_usage_error_naming_the_variables(
    style: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(UsageError, match="OPENROUTER_API_KEY") as caught:
        create_client(base_url="https://models.example.com/v1", style=style, model=MODEL)
    assert "OPENAI_API_KEY" in str(caught.value)
    assert "ANTHROPIC_API_KEY" in str(caught.value)


# -- host-facing extensions ------------------------------------------------------------------


async def test_request_params_win_on_collision_and_cannot_replace_messages_tools_or_stream(
    scripted: ScriptedModel, client_for: ClientFor, style: str, caplog: pytest.LogCaptureFixture
) -> None:
    params = {
        "temperature": 0.25,
        "model": "override",
        "messages": [{"role": "user", "content": "injected"}],
        "tools": [],
        "stream": True,
    }
    scripted.add(text("ok"))
    async with client_for(scripted, style, request_params=params) as client:
        await client.run("hi", [add])
    body = scripted.requests[0].body
    assert body["temperature"] == 0.25
    assert body["model"] == "override"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert len(body["tools"]) == 1
    assert "stream" not in body
    warned = " ".join(r.getMessage() for r in caplog.records)
    for key in ("messages", "tools", "stream"):
        assert f'request_params key "{key}" is not allowed — ignored (use body_transform)' in warned


async def test_each_client_reports_its_own_ignored_request_params(
    scripted: ScriptedModel, client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    # Reported once per client, by every client: one after another, each freed before the
    # next is built, so that a later one's config reuses an earlier one's memory (and id)
    # within a few rounds.
    caplog.set_level(logging.WARNING, logger="toolnexus")
    for attempt in range(30):
        caplog.clear()
        scripted.add(text("ok"), text("ok"))
        async with client_for(scripted, request_params={"stream": True}) as client:
            await client.run("hi")
            await client.run("again")
        del client
        said = [r.getMessage() for r in caplog.records]
        ignored = 'request_params key "stream" is not allowed — ignored (use body_transform)'
        assert sum(ignored in line for line in said) == 1, (attempt, said)


async def test_body_transform_runs_last_after_before_llm_and_request_params(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    seen: list[dict[str, Any]] = []

    def before_llm(info: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": "rewritten by before_llm"}]}

    def body_transform(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(json.loads(json.dumps(body)))
        return {**body, "temperature": 0.9, "transformed": True}

    scripted.add(text("ok"))
    async with client_for(
        scripted,
        hooks={"before_llm": before_llm},
        request_params={"temperature": 0.1},
        body_transform=body_transform,
    ) as client:
        await client.run("hi")
    assert seen[0]["messages"] == [{"role": "user", "content": "rewritten by before_llm"}]
    assert seen[0]["temperature"] == 0.1
    wire = scripted.requests[0].body
    assert (wire["temperature"], wire["transformed"]) == (0.9, True)


class BlockingPoster:
    """The existing package's transport shape: a blocking ``post`` returning a dict."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str], Any]] = []

    def post(self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: Any) -> Any:
        self.calls.append((url, headers, timeout))
        request = urllib.request.Request(
            url,
            data=json.dumps(payload).encode(),
            headers={**headers, "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


async def test_a_legacy_transport_with_a_blocking_post_carries_the_loop(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    poster = BlockingPoster()
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    async with client_for(scripted, style, http_transport=poster) as client:
        result = await client.run("1+2", [add])
    assert (result.text, result.tool_calls[0].output) == ("3", "3")
    assert len(poster.calls) == 2
    assert poster.calls[0][0].endswith(scripted.requests[0].path)


async def test_a_legacy_transport_without_open_streams_as_one_text_delta(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("whole answer"))
    async with client_for(scripted, http_transport=BlockingPoster()) as client:
        events = [e async for e in client.stream("hi")]
    assert [e["type"] for e in events] == ["text", "usage", "done"]
    assert events[0]["delta"] == "whole answer"
    assert scripted.requests[0].stream is False


# -- the in-process client -------------------------------------------------------------------


async def test_the_in_process_client_returns_generated_content() -> None:
    seen: list[dict[str, Any]] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {"content": "from memory", "usage": {"prompt_tokens": 2, "completion_tokens": 1}}

    async with create_in_process_client(model="local", generate=generate) as client:
        result = await client.run("hi")
    assert (result.text, result.status, result.model) == ("from memory", "done", "local")
    assert seen[0]["model"] == "local"
    assert seen[0]["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("arguments", [{"a": 4, "b": 5}, '{"a": 4, "b": 5}'], ids=["dict", "str"])
async def test_the_in_process_client_runs_generated_tool_calls(arguments: Any) -> None:
    replies: list[Any] = [
        {"toolCalls": [{"id": "k1", "name": "add", "arguments": arguments}]},
        {"content": "nine"},
    ]
    seen: list[dict[str, Any]] = []

    async def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return replies[len(seen) - 1]

    async with create_in_process_client(model="local", generate=generate) as client:
        result = await client.run("4+5", [add])
    assert result.text == "nine"
    assert result.tool_calls[0].args == {"a": 4, "b": 5}
    assert seen[1]["messages"][-1] == {"role": "tool", "tool_call_id": "k1", "content": "9"}
    assert seen[0]["tools"][0]["function"]["name"] == "add"


async def test_the_in_process_client_needs_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    async with create_in_process_client(model="local", generate=lambda r: "ok") as client:
        assert (await client.run("hi")).text == "ok"


async def test_an_in_process_failure_is_final_and_never_retried() -> None:
    calls: list[int] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        raise ProviderError("HTTP 503: busy", status=503)

    async with create_in_process_client(model="local", generate=generate) as client:
        with pytest.raises(ProviderError, match="busy"):
            await client.run("hi")
    assert calls == [1]


async def test_streaming_from_the_in_process_client_is_a_usage_error() -> None:
    async with create_in_process_client(model="local", generate=lambda r: "ok") as client:
        with pytest.raises(UsageError, match="does not support streaming"):
            async for _ in client.stream("hi"):
                pass


async def test_asking_the_in_process_client_with_on_text_is_a_usage_error() -> None:
    async with create_in_process_client(model="local", generate=lambda r: "ok") as client:
        with pytest.raises(UsageError, match="does not support streaming"):
            await client.ask("hi", on_text=print)


async def test_a_tool_returning_a_tool_result_passes_it_through(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    def flag(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return ToolResult("flagged", True, {"why": "test"})

    scripted.add(tool_calls(call("flag", {}, id="f")), text("ok"))
    async with client_for(scripted) as client:
        result = await client.run("go", [native("flag", flag)])
    record = result.tool_calls[0]
    assert (record.output, record.is_error, record.metadata) == ("flagged", True, {"why": "test"})


async def test_extra_headers_are_sent_and_win_over_the_auth_header(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("ok"))
    headers = {"X-Trace": "t-1", "Authorization": "Bearer gateway"}
    async with client_for(scripted, headers=headers) as client:
        await client.run("hi")
    sent = scripted.requests[0].headers
    assert (sent["x-trace"], sent["authorization"]) == ("t-1", "Bearer gateway")


@pytest.mark.parametrize("kind", ["sync in place", "async returning"])
async def test_body_transform_may_be_async_or_edit_the_body_in_place(
    scripted: ScriptedModel, client_for: ClientFor, kind: str
) -> None:
    def in_place(body: dict[str, Any]) -> None:
        body["user"] = "u-1"

    async def returning(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "user": "u-1"}

    scripted.add(text("ok"))
    transform = in_place if kind == "sync in place" else returning
    async with client_for(scripted, body_transform=transform) as client:
        await client.run("hi")
    assert scripted.requests[0].body["user"] == "u-1"


async def test_a_body_transform_edit_in_place_stays_in_the_body_it_was_made_on(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    def mark_last(body: dict[str, Any]) -> None:
        body["messages"][-1]["marked"] = True

    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("ok"))
    async with client_for(scripted, "anthropic", body_transform=mark_last) as client:
        await client.run("hi", [add])
    second = scripted.requests[1].body["messages"]
    assert [m.get("marked") for m in second] == [None, None, True]


async def test_a_before_llm_hook_editing_the_transcript_in_place_is_sent(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    def edit(info: dict[str, Any]) -> None:
        if info["turn"] == 1:
            info["messages"][0]["content"] = "edited"

    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("ok"))
    async with client_for(scripted, style, hooks={"before_llm": edit}) as client:
        await client.run("hi", [add])
    assert scripted.requests[1].body["messages"][0]["content"] == "edited"


async def test_a_tool_receives_its_call_id_the_cancel_signal_and_the_time_left(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    seen: list[ToolContext | None] = []

    def probe(args: dict[str, Any], ctx: ToolContext | None) -> str:
        seen.append(ctx)
        return "ok"

    cancel = asyncio.Event()
    scripted.add(tool_calls(call("probe", {}, id="p1")), text("ok"))
    async with client_for(scripted, timeout_ms=30_000) as client:
        await client.run("go", [native("probe", probe)], cancel=cancel)
    ctx = seen[0]
    assert ctx is not None
    assert (ctx.call_id, ctx.signal, ctx.answer) == ("p1", cancel, None)
    assert ctx.timeout is not None
    assert 0 < ctx.timeout <= 30


async def test_the_in_process_client_numbers_tool_calls_that_come_without_an_id() -> None:
    replies: list[Any] = [{"toolCalls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]}, "2"]
    seen: list[dict[str, Any]] = []

    def generate(request: dict[str, Any]) -> Any:
        seen.append(request)
        return replies[len(seen) - 1]

    async with create_in_process_client(model="local", generate=generate) as client:
        result = await client.run("1+1", [add])
    call_id = result.messages[1]["tool_calls"][0]["id"]
    assert call_id
    assert seen[1]["messages"][-1] == {"role": "tool", "tool_call_id": call_id, "content": "2"}


async def test_an_in_process_generate_returning_nonsense_is_a_bad_response() -> None:
    async with create_in_process_client(model="local", generate=lambda r: 42) as client:
        with pytest.raises(BadResponse, match="generate must return a dict"):
            await client.run("hi")
