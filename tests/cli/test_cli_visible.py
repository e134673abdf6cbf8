"""What the model or a tool writes cannot drive the approver's terminal: ``toolnexus pending``,
``toolnexus answer --wait`` and ``toolnexus run`` in a real pseudo-terminal (pexpect), with a
prompt, an argument, a tool's output and the model's reply carrying a screen clear (CSI 2J),
a clipboard write (OSC 52), a hidden link target (OSC 8), an 8-bit CSI and a right-to-left
override. Every byte the terminal receives is checked: nothing of the untrusted text arrives
raw, and each attack shows in its visible form (``␛[2J``, ``⟨U+202E⟩``). ``--json`` stays
exactly the data.

The model is a `ScriptedModel` on this test's event loop; while a command runs in the
pseudo-terminal, pexpect waits in a thread so the loop keeps answering the model's requests.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import unicodedata
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

import pexpect
import pytest
from cli_app import refund_tool
from test_cli_follow import start_worker
from test_cli_store_commands import HERE

from proc_support import stop
from toolnexus import create_client
from toolnexus.stores.url import resolve_store
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"  # OSC 52 (BEL-terminated): "rm -rf ~" to the clipboard
LINK = "\x1b]8;;http://evil.example\x1b\\refund 5\x1b]8;;\x1b\\"  # OSC 8 (ST): a hidden target
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "5000" reads as "0005"
CSI8 = "\x9b2J"  # the 8-bit CSI introducer
HOSTILE = f"{CLEAR}{CLIPBOARD}{LINK} total {RLO}0005 {CSI8}"

SHOWN_CLEAR = "␛[2J"
SHOWN_CLIPBOARD = "␛]52;c;cm0gLXJmIH4K␇"
SHOWN_LINK = "␛]8;;http://evil.example␛\\refund 5␛]8;;␛\\"
SHOWN_RLO = "⟨U+202E⟩0005"
SHOWN_CSI8 = "\\x9b2J"
SHOWN_HOSTILE = f"{SHOWN_CLEAR}{SHOWN_CLIPBOARD}{SHOWN_LINK} total {SHOWN_RLO} {SHOWN_CSI8}"

ORDERS = {  # one attack per pending row: each prompt fits the table's 60 characters
    "A-1": f"A-1 {CLEAR}",
    "A-2": f"A-2 {CLIPBOARD}",
    "A-3": f"A-3 {LINK}",
    "A-4": f"A-4 {RLO}0005 {CSI8}",
}
SHOWN_ORDERS = {
    "A-1": f"A-1 {SHOWN_CLEAR}",
    "A-2": f"A-2 {SHOWN_CLIPBOARD}",
    "A-3": f"A-3 {SHOWN_LINK}",
    "A-4": f"A-4 {SHOWN_RLO} {SHOWN_CSI8}",
}
SGR = re.compile(rb"\x1b\[[0-9;]*m")
"""rich's own styling (bold headers, colours): the only escape sequences allowed through."""


def untrusted_raw(output: bytes) -> list[str]:
    """What reached the terminal that it would obey or a reader could not see: control and
    format characters, but for the line ends and tabs of the layout."""
    shown = output.decode("utf-8")
    return [
        c
        for c in shown
        if c not in "\r\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    ]


def spawn(args: list[str], term: str, **env: str) -> tuple[pexpect.spawn, BytesIO]:
    """``toolnexus *args`` in a 50x250 pseudo-terminal of type ``term``; every byte it writes
    is kept in the returned buffer."""
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
    environment.update(TERM=term, COLUMNS="250", LINES="50", **env)
    environment.pop("NO_COLOR", None)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "toolnexus", *args],
        cwd=str(HERE),
        env=environment,
        timeout=40,
        dimensions=(50, 250),
    )
    seen = BytesIO()
    child.logfile_read = seen
    return child, seen


async def waiting(step: Callable[..., Any], *args: Any) -> Any:
    """A blocking pexpect call, in a thread: the scripted model on this loop keeps answering."""
    return await asyncio.to_thread(step, *args)


async def halt_each(model: ScriptedModel, store_url: str, ledger: Path) -> dict[str, str]:
    """One run halted per order (the model calls ``refund`` with it) → request id by order."""
    ids: dict[str, str] = {}
    store: Any = resolve_store(store_url)
    async with (
        store,
        create_client(
            base_url=model.openai_base_url, model="m-1", api_key="sk-test-0123456789", store=store
        ) as client,
    ):
        for key, order in ORDERS.items():
            model.add(tool_calls(call("refund", {"order": order})))
            result = await client.run(f"refund {key}", [refund_tool(ledger)])
            assert result.pending is not None
            ids[key] = result.pending.id
    return ids


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


# -- toolnexus pending -----------------------------------------------------------------------


@pytest.mark.parametrize("term", ["dumb", "xterm-256color"])
async def test_pending_shows_each_attack_in_a_prompt_visibly_and_sends_none_raw(
    store_url: str, tmp_path: Path, term: str
) -> None:
    async with ScriptedModel() as model:
        await halt_each(model, store_url, tmp_path / "ledger.txt")
    child, seen = spawn(["pending", "--store", store_url], term)
    try:
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, seen.getvalue()
    output = seen.getvalue()
    for key, shown in SHOWN_ORDERS.items():
        assert f"Refund order {shown}?".encode() in output, (key, output)
    if term == "dumb":
        assert b"\x1b" not in output  # not a single escape byte: rich draws no style either
    else:
        assert b"\x1b[1m" in output  # rich's own bold headers: the check below can see them
    assert untrusted_raw(SGR.sub(b"", output)) == []


async def test_pending_json_is_exactly_the_stored_data_with_nothing_raw(
    store_url: str, tmp_path: Path
) -> None:
    async with ScriptedModel() as model:
        ids = await halt_each(model, store_url, tmp_path / "ledger.txt")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "pending",
        "--store",
        store_url,
        "--json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=HERE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 50)
    assert proc.returncode == 0, err
    assert untrusted_raw(out) == []
    for escaped in (b"\\u202e0005", b"\\u001b[2J", b"\\u009b2J"):
        assert escaped in out
    listed = [json.loads(line) for line in out.decode().splitlines()]
    store: Any = resolve_store(store_url)
    async with store:
        stored = await store.list_pending()
    assert [e["request_id"] for e in listed] == [e.request_id for e in stored]
    assert [e["prompt"] for e in listed] == [e.prompt for e in stored]
    assert {e["request_id"]: e["prompt"] for e in listed} == {
        ids[key]: f"Refund order {order}?" for key, order in ORDERS.items()
    }


# -- toolnexus answer --wait -----------------------------------------------------------------


def hostile_reply(request: RecordedRequest) -> Reply:
    """The model's final word after the refund ran: the hostile text, over two lines."""
    assert request.body["messages"][-1]["role"] == "tool"
    return text(f"Refunded. {HOSTILE}\nsecond line")


async def test_answer_wait_shows_the_models_reply_visibly(store_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel() as model:
        model.add(tool_calls(call("refund", {"order": "B-1"})))
        store: Any = resolve_store(store_url)
        async with (
            store,
            create_client(
                base_url=model.openai_base_url,
                model="m-1",
                api_key="sk-test-0123456789",
                store=store,
            ) as client,
        ):
            halted = await client.run("refund B-1", [refund_tool(ledger)])
        assert halted.pending is not None
        rid = halted.pending.id
        model.default(hostile_reply)
        worker = await start_worker(store_url, model.openai_base_url, ledger)
        child, seen = spawn(
            ["answer", rid, "--store", store_url, "--approve", "--wait", "--timeout", "30"], "dumb"
        )
        try:
            await waiting(child.expect, pexpect.EOF)
        finally:
            child.close(force=True)
            await stop(worker, 30, "the worker")
    output = seen.getvalue()
    assert child.exitstatus == 0, output
    assert f"Refunded. {SHOWN_HOSTILE}\r\nsecond line".encode() in output
    assert b"\x1b" not in output
    assert untrusted_raw(output) == []
    assert ledger.read_text() == "refunded B-1\n"


async def test_answer_wait_json_carries_the_reply_exactly(store_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel() as model:
        model.add(tool_calls(call("refund", {"order": ORDERS["A-4"]})))
        store: Any = resolve_store(store_url)
        async with (
            store,
            create_client(
                base_url=model.openai_base_url,
                model="m-1",
                api_key="sk-test-0123456789",
                store=store,
            ) as client,
        ):
            halted = await client.run("refund A-4", [refund_tool(ledger)])
        assert halted.pending is not None
        rid = halted.pending.id
        model.default(hostile_reply)
        worker = await start_worker(store_url, model.openai_base_url, ledger)
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "toolnexus",
                "answer",
                rid,
                "--store",
                store_url,
                "--approve",
                "--wait",
                "--json",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=HERE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 50)
        finally:
            await stop(worker, 30, "the worker")
    assert proc.returncode == 0, err
    assert untrusted_raw(out) == []
    record = json.loads(out)
    assert record["outcome"]["text"] == f"Refunded. {HOSTILE}\nsecond line"
    async with resolve_store(store_url) as store:
        stored = await store.answer_record(rid)
    assert stored is not None
    assert record["outcome"] == json.loads(json.dumps(stored.outcome))
    assert record["digest"] == stored.digest


# -- toolnexus run ---------------------------------------------------------------------------

QUESTION = f"Refund {RLO}0005 {CLEAR}{LINK}?"
PRINTED = "\\033[2J\\033]52;c;cm0gLXJmIH4K\\007 \\342\\200\\256printed"
"""printf's escapes for what the bash tool writes: CSI 2J, OSC 52 and U+202E in UTF-8."""


async def test_run_shows_reply_arguments_prompt_and_tool_output_visibly(tmp_path: Path) -> None:
    script = [
        tool_calls(
            call("question", {"questions": [{"question": QUESTION, "options": ["yes", "no"]}]}),
            text=f"Let me ask. {HOSTILE}\n",
        ),
        tool_calls(call("bash", {"command": f"printf '{PRINTED}'"})),
        text(f"All done. {HOSTILE}"),
    ]
    async with ScriptedModel(script) as model:
        child, seen = spawn(
            [
                "run",
                "--base-url",
                model.openai_base_url,
                "--model",
                "m-1",
                "--api-key",
                "sk-test-0123456789",
            ],
            "dumb",
        )
        try:
            await waiting(child.expect_exact, b"> ")
            child.sendline(b"go")
            await waiting(child.expect_exact, b"[y]es [n]o [a]lways [e]dit: ")
            child.sendline(b"y")
            await waiting(child.expect_exact, b"answer: ")
            child.sendline(b"1")
            await waiting(child.expect_exact, b"[y]es [n]o [a]lways [e]dit: ")
            child.sendline(b"y")
            await waiting(child.expect_exact, f"All done. {SHOWN_HOSTILE}".encode())
            await waiting(child.expect_exact, b"> ")
            child.sendeof()
            await waiting(child.expect, pexpect.EOF)
        finally:
            child.close(force=True)
    output = seen.getvalue()
    assert b"\x1b" not in output, output
    assert untrusted_raw(output) == []
    shown = output.decode()
    assert f"Let me ask. {SHOWN_HOSTILE}" in shown  # the model's streamed text
    assert "Refund ⟨U+202E⟩0005 ␛[2J␛]8;;http://evil.example␛\\refund 5␛]8;;␛\\?" in shown
    # the arguments, as JSON that parses back to exactly them (what [e]dit takes)
    gate = re.search(r"\nrun question (.*)\? \[y\]es", shown)
    assert gate is not None
    assert "\\u202e0005 \\u001b[2J" in gate.group(1)
    assert json.loads(gate.group(1)) == script[0].calls[0].args
    assert "← ␛[2J␛]52;c;cm0gLXJmIH4K␇ ⟨U+202E⟩printed" in shown  # the tool's output
    assert f"All done. {SHOWN_HOSTILE}" in shown
