"""A run holding content parts halts into a durable store and resumes from it (COMPAT §6).

The checkpoint keeps the canonical part dicts (COMPAT pins the transcript form: ``{type,
mimeType, data, name?}``); provider blocks are made at send time only, so the stored bytes hold
no wire form. A second client on the same store resumes and sends the parts again, encoded.
"""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from pg_support import pg_connect
from png_support import make_png
from toolnexus import Tool, ToolContext, ToolResult, pending
from toolnexus.loop.checkpoint import Checkpoint, Outstanding
from toolnexus.testing import ScriptedModel, call, tool_calls
from toolnexus.testing import text as reply

PNG = make_png(4, 4, (0, 128, 255))
B64 = base64.b64encode(PNG).decode()
SHOT = make_png(1, 1)
SHOT_B64 = base64.b64encode(SHOT).decode()
SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
WIRE_FORMS = ("image_url", "data:image/png;base64", "media_type", '"source"', "input_audio")


def tools(runs: Counter[str]) -> list[Tool]:
    async def snap(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        runs["snap"] += 1
        return ToolResult("shot taken", parts=[tn.image(SHOT, mime_type="image/png", name="s.png")])

    async def gate(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        runs["gate"] += 1
        if ctx is not None and ctx.answer is not None and ctx.answer.ok:
            return ToolResult("approved")
        return pending(kind="approval", prompt="publish the picture?")

    return [
        Tool("snap", "takes a picture", SCHEMA, "native", snap),
        Tool("gate", "asks first", SCHEMA, "native", gate),
    ]


def stored_sqlite(path: Path) -> str:
    """Every value of every table of the SQLite file, as one text."""
    with sqlite3.connect(path) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [repr(r) for n in names for r in conn.execute(f'SELECT * FROM "{n}"')]
    return "\n".join(rows)


def stored_pg(url: str) -> str:
    with pg_connect(url) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        ]
        rows = [repr(r) for n in names for r in conn.execute(f'SELECT * FROM "{n}"')]
    return "\n".join(rows)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Any]:
    if request.param == "sqlite":
        path = tmp_path / "parts.db"
        return f"sqlite:///{path}", lambda: stored_sqlite(path)
    url = request.getfixturevalue("pg_url")
    return url, lambda: stored_pg(url)


async def test_a_halted_run_with_parts_resumes_from_the_store(
    backend: tuple[str, Any], client_for: Any, style: str
) -> None:
    store, dump = backend
    runs: Counter[str] = Counter()
    async with ScriptedModel(
        [tool_calls(call("snap", {}, id="c1"), call("gate", {}, id="c2")), reply("published")]
    ) as model:
        async with client_for(model, style, store=store) as first:
            halted = await first.run(
                ["publish this", tn.image(PNG, mime_type="image/png")], tools(runs)
            )
        assert halted.status == "pending"
        assert halted.pending is not None

        text = dump()
        assert B64 in text
        assert SHOT_B64 in text
        assert '"mimeType":"image/png"' in text
        for form in WIRE_FORMS:
            assert form not in text, form

        async with client_for(model, style, store=store) as second:
            done = await second.resume(tools(runs), tn.Answer(id=halted.pending.id, ok=True))
    assert done.status == "done"
    assert done.text == "published"
    assert runs == Counter({"snap": 1, "gate": 2})  # snap is spliced from the checkpoint

    body = model.requests[1].body
    wire = json.dumps(body)
    assert wire.count(B64) == 1
    assert wire.count(SHOT_B64) == 1
    if style == "openai":
        assert body["messages"][0]["content"][1] == {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{B64}"},
        }
        assert body["messages"][4] == {
            "role": "user",
            "content": [
                {"type": "text", "text": "Output of tool snap (c1):"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{SHOT_B64}"}},
            ],
        }
    else:
        results = body["messages"][2]["content"]
        assert results[0]["content"][1] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": SHOT_B64},
        }
        assert results[1] == {"type": "tool_result", "tool_use_id": "c2", "content": "approved"}
    assert done.messages[2]["parts"] == [
        {"type": "image", "mimeType": "image/png", "data": SHOT_B64, "name": "s.png"}
    ]


def halted_checkpoint() -> Checkpoint:
    request = tn.Request(id="r1", kind="approval", prompt="ok?")
    result = ToolResult(
        "shot", parts=[{"type": "image", "mimeType": "image/png", "data": SHOT_B64}]
    )
    return Checkpoint(
        model="m",
        style="openai",
        messages=[
            {"role": "user", "content": [{"type": "image", "mimeType": "image/png", "data": B64}]},
            {"role": "assistant", "content": None, "tool_calls": []},
        ],
        turn=1,
        usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        tool_calls=[],
        outstanding=[
            Outstanding(call_id="c1", name="snap", arguments="{}", state="done", result=result),
            Outstanding(
                call_id="c2", name="gate", arguments="{}", state="suspended", request=request
            ),
        ],
        pending=request,
    )


def test_a_checkpoint_with_parts_is_version_2_and_round_trips() -> None:
    checkpoint = halted_checkpoint()
    data = json.loads(checkpoint.dumps())
    assert data["version"] == 2
    back = Checkpoint.loads(checkpoint.dumps())
    assert back.outstanding[0].result is not None
    assert back.outstanding[0].result.parts == [
        {"type": "image", "mimeType": "image/png", "data": SHOT_B64}
    ]
    assert back.messages == checkpoint.messages


def test_a_checkpoint_without_parts_stays_version_1() -> None:
    checkpoint = halted_checkpoint()
    checkpoint.messages[0]["content"] = "plain"
    assert checkpoint.outstanding[0].result is not None
    checkpoint.outstanding[0].result.parts = None
    assert json.loads(checkpoint.dumps())["version"] == 1


def _edited(edit: Any) -> str:
    data = json.loads(halted_checkpoint().dumps())
    edit(data)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda d: d["outstanding"][0]["result"]["parts"][0].update(data="@@not base64@@"),
            "not valid padded base64",
        ),
        (
            lambda d: d["outstanding"][0]["result"]["parts"][0].update(type="video"),
            'unknown content part type "video"',
        ),
        (lambda d: d["outstanding"][0]["result"].update(parts="x"), "are not a list"),
        (
            lambda d: d["outstanding"][0]["result"]["parts"][0].pop("mimeType"),
            "needs a mimeType",
        ),
        (
            lambda d: d["messages"][0]["content"][0].update(data=B64[:-3]),
            "messages[0] holds a bad content part",
        ),
        (lambda d: d["messages"][0].update(parts=[{"type": "text"}]), "a text part needs text"),
    ],
)
def test_a_stored_checkpoint_with_a_bad_part_is_refused(edit: Any, problem: str) -> None:
    with pytest.raises(tn.CheckpointError, match=re.escape(problem)):
        Checkpoint.loads(_edited(edit))
