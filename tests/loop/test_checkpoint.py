"""The checkpoint: a halted run as plain, versioned JSON (DESIGN §3, STYLE 13)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import (
    Checkpoint,
    CheckpointError,
    Client,
    Request,
    Tool,
    ToolCallRecord,
    ToolContext,
    ToolResult,
    define_tool,
    pending,
)
from toolnexus.loop.checkpoint import CHECKPOINT_VERSION, Outstanding, tool_fingerprint
from toolnexus.testing import ScriptedModel, call, tool_calls

ClientFor = Callable[..., Client]

REQUEST = Request(id="req-1", kind="approval", prompt="Ship it?", data={"env": "prod"})


def sample(**changes: Any) -> Checkpoint:
    """A checkpoint of a turn with one finished call and one suspended call."""
    fields: dict[str, Any] = {
        "model": "m-1",
        "style": "anthropic",
        "messages": [
            {"role": "user", "content": "ship"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "add", "arguments": "{}"}},
                    {
                        "id": "s",
                        "type": "function",
                        "function": {"name": "ship", "arguments": "{}"},
                    },
                ],
            },
        ],
        "turn": 1,
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        "tool_calls": [
            ToolCallRecord(name="add", args={"a": 1}, output="1", is_error=False, id="a")
        ],
        "outstanding": [
            Outstanding(
                call_id="a", name="add", arguments='{"a":1}', state="done", result=ToolResult("1")
            ),
            Outstanding(
                call_id="s", name="ship", arguments="{}", state="suspended", request=REQUEST
            ),
        ],
        "pending": REQUEST,
        "fingerprint": "abc123",
        "conversation_id": "conv-9",
        "created_at": 1_700_000_000.5,
    }
    fields.update(changes)
    return Checkpoint(**fields)


def test_a_checkpoint_round_trips_through_json_text() -> None:
    original = sample()
    assert Checkpoint.loads(original.dumps()) == original


def test_the_json_is_versioned_and_names_every_part() -> None:
    data = json.loads(sample().dumps())
    assert data["version"] == 1  # no content parts: still readable by a version-1 reader
    assert CHECKPOINT_VERSION == 3
    assert set(data) == {
        "version",
        "model",
        "style",
        "messages",
        "turn",
        "usage",
        "tool_calls",
        "outstanding",
        "pending",
        "fingerprint",
        "conversation_id",
        "created_at",
    }
    assert data["pending"] == REQUEST.to_dict()
    assert data["outstanding"][1]["request"] == REQUEST.to_dict()


def test_a_request_inside_result_metadata_is_stored_as_its_wire_dict() -> None:
    held = Outstanding(
        call_id="s",
        name="ship",
        arguments="{}",
        state="done",
        result=pending(kind="approval", prompt="Ship it?", id="req-1"),
    )
    data = json.loads(sample(outstanding=[held]).dumps())
    assert data["outstanding"][0]["result"]["metadata"] == {
        "pending": {"id": "req-1", "kind": "approval", "prompt": "Ship it?"}
    }


def test_a_halt_at_the_model_call_is_version_3_with_no_outstanding_call() -> None:
    at_model = sample(outstanding=[])
    data = json.loads(at_model.dumps())
    assert data["version"] == 3  # a reader that knows only versions 1-2 refuses it
    assert data["outstanding"] == []
    assert Checkpoint.loads(at_model.dumps()).outstanding == []


def test_an_empty_outstanding_list_below_version_3_is_refused() -> None:
    data = json.loads(sample(outstanding=[]).dumps())
    data["version"] = 2
    with pytest.raises(CheckpointError, match="no outstanding tool calls"):
        Checkpoint.loads(json.dumps(data))


def test_loads_accepts_bytes() -> None:
    assert Checkpoint.loads(sample().dumps().encode()) == sample()


@pytest.mark.parametrize("version", [CHECKPOINT_VERSION + 1, 0, -1])
def test_an_unknown_version_is_refused_with_a_clear_error(version: int) -> None:
    data = json.loads(sample().dumps())
    data["version"] = version
    with pytest.raises(CheckpointError, match=f"checkpoint version {version} is not supported"):
        Checkpoint.loads(json.dumps(data))


@pytest.mark.parametrize("version", [None, "1", True, 1.0])
def test_a_version_that_is_not_an_integer_is_refused(version: Any) -> None:
    data = json.loads(sample().dumps())
    data["version"] = version
    with pytest.raises(CheckpointError, match="no integer version"):
        Checkpoint.loads(json.dumps(data))


@pytest.mark.parametrize(
    ("text_", "match"),
    [
        ("{truncated", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ("", "not valid JSON"),
    ],
    ids=["truncated", "array", "empty"],
)
def test_text_that_is_not_a_checkpoint_object_is_refused(text_: str, match: str) -> None:
    with pytest.raises(CheckpointError, match=match):
        Checkpoint.loads(text_)


def corrupt(path: tuple[Any, ...], value: Any) -> str:
    data = json.loads(sample().dumps())
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(data)


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        (("messages",), "not a list", "messages must be a list of objects"),
        (("messages",), [1, 2], "messages must be a list of objects"),
        (("outstanding",), [], "no outstanding tool calls"),
        (("pending",), {"id": "x"}, "pending request is malformed"),
        (("outstanding", 0, "state"), "exploded", "unknown call state 'exploded'"),
        (("outstanding", 0, "result"), {"no": "output"}, "recorded tool result is malformed"),
        (("outstanding", 1, "request"), {"id": "r", "kind": "k"}, "malformed request"),
        (("outstanding", 0, "call_id"), 7, "lacks call_id/name"),
        (("tool_calls",), ["not an object"], "tool_calls entry is not an object"),
    ],
    ids=[
        "messages not a list",
        "messages not objects",
        "no outstanding",
        "bad pending",
        "bad state",
        "bad result",
        "bad request",
        "bad call id",
        "bad record",
    ],
)
def test_a_hand_edited_checkpoint_is_refused_with_a_clear_error(
    path: tuple[Any, ...], value: Any, match: str
) -> None:
    with pytest.raises(CheckpointError, match=match):
        Checkpoint.loads(corrupt(path, value))


# -- hostile hand-edited JSON: every malformed input is a CheckpointError ------------------


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("created_at",), "yesterday"),
        (("created_at",), True),
        (("created_at",), [1]),
        (("created_at",), 10**400),
        (("model",), 7),
        (("model",), {"name": "m"}),
        (("style",), ["openai"]),
        (("turn",), "1"),
        (("turn",), -1),
        (("turn",), 1.5),
        (("usage",), "lots"),
        (("usage",), [1, 2, 3]),
        (("usage", "prompt_tokens"), "ten"),
        (("usage", "total_tokens"), -3),
        (("tool_calls",), 5),
        (("tool_calls",), {"0": {}}),
        (("tool_calls", 0, "args"), "a=1"),
        (("tool_calls", 0, "name"), 3),
        (("tool_calls", 0, "output"), {"text": "1"}),
        (("tool_calls", 0, "is_error"), "no"),
        (("tool_calls", 0, "metadata"), [1]),
        (("outstanding",), "calls"),
        (("outstanding",), {"0": {}}),
        (("outstanding", 0), "a call"),
        (("outstanding", 0, "arguments"), {"a": 1}),
        (("outstanding", 0, "name"), None),
        (("outstanding", 0, "result"), "1"),
        (("outstanding", 0, "result", "is_error"), "yes"),
        (("outstanding", 0, "result", "metadata"), "meta"),
        (("outstanding", 1, "request"), "req-1"),
        (("outstanding", 1, "request"), [1]),
        (("outstanding", 1, "request", "kind"), 7),
        (("outstanding", 1, "request", "prompt"), ["Ship", "it?"]),
        (("outstanding", 1, "request", "data"), "env=prod"),
        (("pending",), None),
        (("pending",), "req-1"),
        (("pending",), ["req-1"]),
        (("pending",), {"id": "req-1", "kind": "approval", "prompt": "?", "extra": 1}),
        (("pending", "id"), 1),
        (("pending", "kind"), None),
        (("pending", "prompt"), {"text": "?"}),
        (("pending", "url"), 5),
        (("pending", "expiresAt"), 1_700_000_000),
        (("fingerprint",), ["abc"]),
        (("conversation_id",), 9),
        (("messages",), None),
        (("messages",), {"role": "user"}),
    ],
    ids=lambda value: repr(value)[:40],
)
def test_a_wrong_type_or_value_anywhere_is_a_checkpoint_error(
    path: tuple[Any, ...], value: Any
) -> None:
    with pytest.raises(CheckpointError):
        Checkpoint.loads(corrupt(path, value))


@pytest.mark.parametrize("depth", [10_000, 1_000_000])
@pytest.mark.parametrize("bracket", ["[", '{"a":'])
def test_deeply_nested_json_is_a_checkpoint_error(depth: int, bracket: str) -> None:
    with pytest.raises(CheckpointError, match="not valid JSON"):
        Checkpoint.loads(bracket * depth)


def test_deep_nesting_inside_a_field_is_a_checkpoint_error() -> None:
    text = corrupt(("fingerprint",), "x").replace('"x"', "[" * 100_000 + "]" * 100_000)
    with pytest.raises(CheckpointError):
        Checkpoint.loads(text)


@pytest.mark.parametrize(
    "text_",
    ["NaN", "Infinity", "null", "true", "7", '"checkpoint"', "\ufeff{}", "{}", '{"version": 1}'],
)
def test_json_that_is_no_checkpoint_is_a_checkpoint_error(text_: str) -> None:
    with pytest.raises(CheckpointError):
        Checkpoint.loads(text_)


@pytest.mark.parametrize("created_at", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_creation_time_is_a_checkpoint_error(created_at: str) -> None:
    text = corrupt(("created_at",), 0).replace('"created_at": 0', f'"created_at": {created_at}')
    assert created_at in text
    with pytest.raises(CheckpointError, match="created_at"):
        Checkpoint.loads(text)


@pytest.mark.parametrize("raw", [b"\xff\xfe{", b"\x80abc", 12, None, ["{}"]], ids=repr)
def test_input_that_is_not_text_is_a_checkpoint_error(raw: Any) -> None:
    with pytest.raises(CheckpointError, match="not valid JSON"):
        Checkpoint.loads(raw)


@pytest.mark.parametrize("data", [None, [], "text", 7, {"version": 1, "messages": {}}], ids=repr)
def test_from_json_refuses_data_that_is_no_checkpoint(data: Any) -> None:
    with pytest.raises(CheckpointError):
        Checkpoint.from_json(data)


def test_a_missing_optional_field_takes_its_default() -> None:
    data = json.loads(sample().dumps())
    for key in ("model", "turn", "usage", "tool_calls", "fingerprint", "conversation_id"):
        del data[key]
    loaded = Checkpoint.from_json(data)
    assert (loaded.model, loaded.turn, loaded.tool_calls, loaded.fingerprint) == ("", 0, [], "")
    assert loaded.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert loaded.conversation_id is None


def tool(name: str, schema: dict[str, Any]) -> Tool:
    return Tool(name=name, description="", input_schema=schema, source="native", execute=print)


def test_the_tool_fingerprint_ignores_order_and_sees_schema_changes() -> None:
    a = tool("a", {"type": "object", "properties": {}})
    b = tool("b", {"type": "object", "properties": {}})
    b2 = tool("b", {"type": "object", "properties": {"x": {"type": "string"}}})
    assert tool_fingerprint([a, b]) == tool_fingerprint([b, a])
    assert tool_fingerprint([a, b]) != tool_fingerprint([a, b2])
    assert tool_fingerprint([a]) != tool_fingerprint([a, b])


# -- a checkpoint taken from a real halted run ----------------------------------------------


@define_tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def gate() -> Tool:
    def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        return pending(kind="approval", prompt="Ship it?", id="req-live")

    return Tool(
        name="ship",
        description="",
        input_schema={"type": "object", "properties": {}},
        source="native",
        execute=execute,
    )


async def test_a_halted_runs_checkpoint_holds_the_turn_and_survives_json(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="a"), call("ship", {}, id="s")))
    async with client_for(scripted, style) as client:
        result = await client.run("go", [add, gate()])
        checkpoint = await client.run_store.load_halt("req-live")
    assert result.status == "pending"
    assert checkpoint is not None
    assert (checkpoint.model, checkpoint.style, checkpoint.turn) == ("m-1", style, 1)
    assert checkpoint.messages[-1]["role"] == "assistant"
    assert [(o.call_id, o.state) for o in checkpoint.outstanding] == [
        ("a", "done"),
        ("s", "suspended"),
    ]
    assert checkpoint.outstanding[0].result == ToolResult("3")
    assert checkpoint.pending.id == "req-live"
    assert Checkpoint.loads(checkpoint.dumps()) == checkpoint
