"""The model hears the human: a decline's reason and an approver's note reach the model in the
tool result (`toolnexus.suspension.with_note`, docs/suspension.md "What the model hears").

Each test reads what the model was sent on its next turn (the ScriptedModel's recorded request),
so it checks the bytes the model sees, not our own objects. Without a note every string stays the
CONTRACT's byte-exact one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from refund_support import halted_refund, refund_tool, refunds
from refund_support import store_url as store_url
from toolnexus import Answer, create_client, create_toolkit
from toolnexus.suspension import Request, with_note
from toolnexus.testing import ScriptedModel, call, text, tool_calls


def tool_message(model: ScriptedModel) -> dict[str, Any]:
    """The tool result the model was sent last (OpenAI wire: the last ``tool`` message)."""
    sent = model.requests[-1].body["messages"]
    return [m for m in sent if m["role"] == "tool"][-1]


async def run_inline(tmp_path: Path, answer: Answer) -> tuple[ScriptedModel, Path]:
    ledger = tmp_path / "ledger.jsonl"
    tk = await create_toolkit(extra_tools=[refund_tool(ledger)], builtins=False)
    async with ScriptedModel(default=text("done")) as model:
        model.add(tool_calls(call("refund", {"order": "A-7", "amount": 5000}, id="c1")))

        async def wait_for(request: Request) -> Answer:
            return Answer(id=request.id, ok=answer.ok, data=answer.data, reason=answer.reason)

        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", wait_for=wait_for
        ) as client:
            result = await client.run("refund A-7", tk)
        assert result.status == "done"
        return model, ledger


async def test_an_inline_decline_tells_the_model_why(tmp_path: Path) -> None:
    no = Answer(id="x", ok=False, reason="declined", data={"note": "  over the 1000 limit  "})
    model, ledger = await run_inline(tmp_path, no)
    sent = tool_message(model)
    assert sent["content"] == "declined/expired: Refund 5000 on A-7?\nreason: over the 1000 limit"
    assert refunds(ledger) == []


async def test_a_decline_without_a_reason_keeps_the_pinned_text(tmp_path: Path) -> None:
    model, _ = await run_inline(tmp_path, Answer(id="x", ok=False, reason="declined"))
    assert tool_message(model)["content"] == "declined/expired: Refund 5000 on A-7?"
    blank = Answer(id="x", ok=False, reason="declined", data={"note": "   "})
    model, _ = await run_inline(tmp_path, blank)
    assert tool_message(model)["content"] == "declined/expired: Refund 5000 on A-7?"


async def test_an_approvers_note_follows_the_tools_result(tmp_path: Path) -> None:
    yes = Answer(id="x", ok=True, data={"note": "ok this once; tell the customer"})
    model, ledger = await run_inline(tmp_path, yes)
    assert tool_message(model)["content"] == (
        "refunded 5000 on A-7\napprover's note: ok this once; tell the customer"
    )
    assert refunds(ledger) == [{"amount": 5000, "order": "A-7"}]


async def test_a_durable_decline_recorded_by_another_surface_reaches_the_model(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with halted_refund(store_url, ledger) as h:
        # the command line records the decline in its own process, as an operator would
        done = subprocess.run(
            [
                *(sys.executable, "-m", "toolnexus", "answer", h.request_id, "--decline"),
                *("--reason", "customer already refunded by card", "--store", store_url),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        result = await h.client.resume(h.toolkit, h.request_id)
        assert result.status == "done"
        assert tool_message(h.model)["content"] == (
            "declined/expired: Refund 5000 on A-7?\nreason: customer already refunded by card"
        )
        record = await h.client.run_store.answer_record(h.request_id)
        assert record is not None
        assert record.answer.data == {"note": "customer already refunded by card"}
    assert refunds(ledger) == []


async def test_a_relay_decline_carries_the_reason(tmp_path: Path) -> None:
    from toolnexus import relay_tool

    tk = await create_toolkit(extra_tools=[relay_tool("pay", "Pay.", {"type": "object"})])
    async with ScriptedModel(default=text("done")) as model:
        model.add(tool_calls(call("pay", {"to": "x"}, id="c1")))
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            store=f"sqlite:///{tmp_path / 'runs.db'}",
        ) as client:
            halted = await client.run("pay x", tk)
            assert halted.pending is not None
            no = {"ok": False, "reason": "declined", "data": {"note": "not this vendor"}}
            await client.answer(halted.pending.id, {"id": halted.pending.id, **no})
            result = await client.resume(tk, halted.pending.id)
        assert result.status == "done"
        assert tool_message(model)["content"] == (
            "relay declined for pay: declined\nreason: not this vendor"
        )


def test_with_note_shapes() -> None:
    no = Answer(id="r", ok=False, reason="declined", data={"note": "why"})
    assert with_note("declined/expired: P", no) == "declined/expired: P\nreason: why"
    assert (
        with_note("out", Answer(id="r", ok=True, data={"note": "n"})) == "out\napprover's note: n"
    )
    assert with_note("out", Answer(id="r", ok=True, data={"note": 5})) == "out"  # not text
    assert with_note("out", Answer(id="r", ok=True)) == "out"
    assert json.dumps(with_note("x", no)) == '"x\\nreason: why"'
