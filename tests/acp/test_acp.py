"""ACP agents over stdio, against a real agent process built on the official ACP SDK."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Answer, Request, create_client, create_in_process_client
from toolnexus.acp import ACPClient, ACPError, ACPOptions, ACPPermissionTimeoutError, load_acp
from toolnexus.errors import AnswerMismatch, CallbackError, InvalidAnswer, UsageError
from toolnexus.testing import ScriptedModel, call, text, tool_calls

AGENT = str(Path(__file__).parents[1] / "helpers" / "acp_agent.py")


def options(**extra: Any) -> ACPOptions:
    return ACPOptions(sys.executable, [AGENT], **extra)


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def approve(request: Request) -> Answer:
    return Answer(id=request.id, ok=True)


@pytest.fixture(scope="module")
def shared() -> Iterator[ACPClient]:
    """One agent process for the tests that leave its session as they found it."""
    client = load_acp(options(wait_for=approve))
    yield client
    client.close()


def test_a_turn_returns_the_agents_message_chunks_only(shared: ACPClient) -> None:
    assert shared.generate(user("echo hello")) == {"content": "you said: hello"}


def test_the_prompt_is_the_whole_transcript_and_supersedes_with_the_last_user_text(
    shared: ACPClient,
) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]},
        {"role": "tool", "content": "42"},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "sh"}, {"type": "text", "text": "ow"}],
        },
    ]
    got = shared.generate({"messages": messages})
    assert got["content"] == (
        "system: Be brief.\nuser: first\ntool: 42\nassistant: a\nuser: show\n"
        "SUPERSEDES-ALL-PRIOR: show"
    )


def test_malformed_lines_and_unknown_response_ids_from_the_agent_are_skipped(
    shared: ACPClient,
) -> None:
    assert shared.generate(user("noise")) == {"content": "survived the noise"}
    assert shared.generate(user("echo still here")) == {"content": "you said: still here"}


async def test_the_agent_is_the_model_of_an_in_process_client(shared: ACPClient) -> None:
    client = create_in_process_client(model="acp", generate=shared.agenerate)
    async with client:
        result = await client.run("echo from the loop")
    assert (result.status, result.text) == ("done", "you said: from the loop")


def test_a_permission_request_becomes_an_approval_request_answered_inline() -> None:
    seen: list[Request] = []

    def wait_for(request: Request) -> Answer:
        seen.append(request)
        return Answer(id=request.id, ok=True)

    with load_acp(options(wait_for=wait_for)) as acp:
        assert acp.generate(user("write notes.txt")) == {"content": "outcome: yes-once"}
    (request,) = seen
    assert (request.kind, request.prompt) == ("approval", "Write notes.txt")
    assert request.id.startswith("pnd-")
    assert request.data == {
        "acp": {
            "sessionId": "sess-1",
            "toolCall": {"toolCallId": "t1", "title": "Write notes.txt"},
            "options": [
                {"optionId": "yes-always", "name": "Always", "kind": "allow_always"},
                {"optionId": "yes-once", "name": "Once", "kind": "allow_once"},
                {"optionId": "no-once", "name": "No", "kind": "reject_once"},
            ],
        }
    }


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ({"ok": True, "data": {"optionId": "yes-always"}}, "yes-always"),
        ({"ok": False, "reason": "declined"}, "no-once"),
        ({"ok": False, "reason": "cancelled"}, "cancelled"),
        ({"ok": False}, "cancelled"),
    ],
)
def test_the_answer_chooses_the_agents_option(answer: dict[str, Any], outcome: str) -> None:
    with load_acp(options(wait_for=lambda r: Answer(id=r.id, **answer))) as acp:
        assert acp.generate(user("write a.txt")) == {"content": f"outcome: {outcome}"}


def test_an_option_the_agent_did_not_offer_is_refused_and_its_permission_cancelled() -> None:
    """The answer intake refuses an option the permission does not list (it names the ones it
    does); the agent is told cancelled, so its turn never waits on it (the turn ends: the
    call raises instead of hanging)."""
    made_up = {"ok": True, "data": {"optionId": "made-up"}}
    with load_acp(options(wait_for=lambda r: Answer(id=r.id, **made_up))) as acp:
        with pytest.raises(InvalidAnswer, match='"made-up" is not one of its options'):
            acp.generate(user("write a.txt"))


async def test_an_async_wait_for_runs_on_the_callers_loop() -> None:
    loops: list[Any] = []

    async def wait_for(request: Request) -> Answer:
        loops.append(asyncio.get_running_loop())
        return Answer(id=request.id, ok=True)

    with load_acp(options(wait_for=wait_for)) as acp:
        assert await acp.agenerate(user("write-twice")) == {
            "content": "outcomes: yes-once, yes-once"
        }
    assert loops == [asyncio.get_running_loop()] * 2


def test_an_answer_that_does_not_echo_the_request_is_refused_and_the_agent_told_no() -> None:
    with load_acp(options(wait_for=lambda r: Answer(id="pnd-other", ok=True))) as acp:
        with pytest.raises(AnswerMismatch):
            acp.generate(user("write a.txt"))
        # the agent got "cancelled" and finished its turn; the session is usable again
        assert acp.generate(user("echo ok")) == {"content": "you said: ok"}


def test_a_raising_wait_for_is_a_callback_error_and_the_agent_is_told_cancelled() -> None:
    def broken(request: Request) -> Answer:
        raise RuntimeError("the approvals service is down")

    with load_acp(options(wait_for=broken)) as acp:
        with pytest.raises(CallbackError, match="approvals service is down"):
            acp.generate(user("write a.txt"))
        assert acp.generate(user("echo ok")) == {"content": "you said: ok"}


def test_permission_allow_keeps_the_packages_auto_allow() -> None:
    with load_acp(options(permission="allow")) as acp:
        assert acp.generate(user("write a.txt")) == {"content": "outcome: yes-always"}


def test_with_no_wait_for_generate_returns_the_request_and_the_answer_finishes_the_turn() -> None:
    with load_acp(options(permission_timeout=0.3)) as acp:
        asked = acp.generate(user("write held.txt"))
        held = asked["pending"]
        assert isinstance(held, Request)
        assert held.prompt == "Write held.txt"
        assert acp.pending() == [held]
        done = acp.generate(
            {**user("write held.txt"), "answer": Answer(held.id, False, None, "declined")}
        )
        assert done == {"content": "outcome: no-once"}
        assert acp.pending() == []


@pytest.mark.parametrize("bad", [42, "pnd-x", {"id": "pnd-x"}, {"id": "pnd-x", "ok": "yes"}])
def test_a_malformed_answer_to_generate_is_a_usage_error_and_the_turn_stays_parked(
    bad: Any,
) -> None:
    with load_acp(options()) as acp:
        held = acp.generate(user("write a.txt"))["pending"]
        with pytest.raises(UsageError, match="answer"):
            acp.generate({**user("write a.txt"), "answer": bad})
        assert acp.pending() == [held]
        done = acp.generate({**user("write a.txt"), "answer": {"id": held.id, "ok": True}})
        assert done == {"content": "outcome: yes-once"}


def test_a_new_prompt_cancels_a_parked_turn_it_does_not_answer() -> None:
    with load_acp(options()) as acp:
        acp.generate(user("write a.txt"))
        assert acp.generate(user("echo next")) == {"content": "you said: next"}
        assert acp.pending() == []


def test_closing_the_client_drops_its_parked_turns() -> None:
    acp = load_acp(options())
    held = acp.generate(user("write a.txt"))["pending"]
    acp.close()
    assert acp.pending() == []
    assert not acp.is_alive()
    with pytest.raises(ACPError, match="is gone"):
        acp.generate({**user("write a.txt"), "answer": Answer(id=held.id, ok=True)})


async def test_as_a_tool_a_permission_suspends_the_run_and_the_resume_continues_the_turn() -> None:
    with load_acp(options()) as acp:
        tool = acp.as_tool("coder", "Hands work to the coding agent.")
        script = [tool_calls(call("coder", {"prompt": "write plan.md"})), text("relayed")]
        async with ScriptedModel(script) as model:
            client = create_client(base_url=model.openai_base_url, model="m", api_key="k")
            async with client:
                halted = await client.run("go", [tool])
                assert halted.status == "pending"
                assert halted.pending is not None
                assert halted.pending.prompt == "Write plan.md"
                assert [r.prompt for r in acp.pending()] == ["Write plan.md"]
                done = await client.run_with_answer(
                    [tool], halted.messages, halted.pending, Answer(id=halted.pending.id, ok=True)
                )
        assert done.status == "done"
        assert done.tool_calls[-1].output == "outcome: yes-once"
        assert acp.pending() == []
        assert acp.generate(user("echo free")) == {"content": "you said: free"}


async def test_as_a_tool_the_clients_wait_for_answers_inline() -> None:
    asked: list[Request] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer(id=request.id, ok=False, reason="declined")

    with load_acp(options()) as acp:
        script = [tool_calls(call("acp_agent", {"prompt": "write x"})), text("ok")]
        async with ScriptedModel(script) as model:
            client = create_client(
                base_url=model.openai_base_url, model="m", api_key="k", wait_for=wait_for
            )
            async with client:
                result = await client.run("go", [acp.as_tool()])
    assert result.status == "done"
    assert result.tool_calls[0].output == "outcome: no-once"
    assert [r.prompt for r in asked] == ["Write x"]


async def test_a_resume_after_the_session_is_gone_sends_nothing_and_says_so() -> None:
    acp = load_acp(options())
    tool = acp.as_tool()
    script = [tool_calls(call("acp_agent", {"prompt": "write y"})), text("reported")]
    async with ScriptedModel(script) as model:
        client = create_client(base_url=model.openai_base_url, model="m", api_key="k")
        async with client:
            halted = await client.run("go", [tool])
            assert halted.pending is not None
            await asyncio.to_thread(acp.close)
            done = await client.run_with_answer(
                [tool], halted.messages, halted.pending, Answer(id=halted.pending.id, ok=True)
            )
    assert done.tool_calls[-1].is_error
    assert "is gone; nothing was sent" in done.tool_calls[-1].output


def test_a_silent_agent_times_out_with_the_packages_text() -> None:
    with load_acp(options(permission_timeout=0.3)) as acp:
        with pytest.raises(ACPPermissionTimeoutError) as caught:
            acp.generate(user("hang"))
    assert str(caught.value) == (
        "acp: turn hung waiting on a reply (possibly an unanswered session/request_permission) "
        "after 0.3s"
    )
    assert isinstance(caught.value, RuntimeError)


def test_an_agent_that_dies_mid_turn_fails_it_with_code_minus_one() -> None:
    acp = load_acp(options())
    with pytest.raises(ACPError) as caught:
        acp.generate(user("crash"))
    assert (str(caught.value), caught.value.code) == (
        "acp: child process closed the connection",
        -1,
    )
    assert not acp.is_alive()
    with pytest.raises(ACPError):
        acp.generate(user("echo again"))
    acp.close()
    acp.close()  # idempotent


def test_an_agent_error_reply_is_an_acp_error_with_its_code(shared: ACPClient) -> None:
    with pytest.raises(ACPError) as caught:
        shared.generate(user("fail"))
    assert (str(caught.value), caught.value.code) == ("acp error -32001: the agent refused", -32001)
    assert shared.generate(user("echo fine")) == {"content": "you said: fine"}


def test_the_session_gets_the_mode_an_absolute_cwd_and_the_merged_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    with load_acp(options(mode="plan", cwd="work", env={"ACP_TEST_ENV": "merged"})) as acp:
        assert acp.generate(user("mode?")) == {"content": "plan"}
        assert acp.generate(user("cwd?")) == {"content": str(tmp_path / "work")}
        assert acp.generate(user("env?")) == {"content": "merged"}
    assert os.environ.get("ACP_TEST_ENV") is None


def test_a_command_that_does_not_exist_is_an_acp_error() -> None:
    with pytest.raises(ACPError, match="cannot start"):
        load_acp({"command": "/nonexistent/acp-agent"})


def test_a_failed_handshake_stops_the_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    with pytest.raises(ACPError, match="without a sessionId"):
        load_acp(
            ACPOptions(
                sys.executable, [AGENT, "--no-session-id"], env={"ACP_TEST_PIDFILE": str(pidfile)}
            )
        )
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped and reaped


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"permission": "always"}, "permission must be"),
        ({"permission_timeout": 0}, "permission_timeout must be positive"),
        ({"command": ""}, "command must be a non-empty string"),
        ({"args": "acp_agent.py"}, "args must be a list of strings"),
        ({"env": {"X": 1}}, "env must map strings to strings"),
    ],
)
def test_bad_options_are_usage_errors(bad: dict[str, Any], message: str) -> None:
    opts: dict[str, Any] = {"command": sys.executable, "args": [AGENT], **bad}
    with pytest.raises(UsageError, match=message):
        load_acp(opts)


def test_one_turn_at_a_time_per_session(shared: ACPClient) -> None:
    results: list[Any] = []

    def turn(i: int) -> None:
        results.append(shared.generate(user(f"echo {i}"))["content"])

    threads = [threading.Thread(target=turn, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == [f"you said: {i}" for i in range(4)]
