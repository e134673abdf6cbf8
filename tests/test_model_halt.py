"""A model source that asks first: ``generate`` returns ``{"pending": Request}`` and the run halts
at the model call (no tool call), durably; the resume hands ``generate`` the Answer."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Answer, Request, create_in_process_client
from toolnexus.errors import BadResponse, ResumeError


class Asking:
    """Asks once per prompt, then answers with what it was told."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(request)
        answer = request.get("answer")
        if answer is None:
            return {
                "pending": Request(id=f"pnd-m{len(self.calls)}", kind="approval", prompt="May I?")
            }
        assert isinstance(answer, Answer)
        return {
            "content": f"told ok={answer.ok}",
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }


async def test_the_run_halts_at_the_model_and_the_resume_passes_the_answer_to_generate() -> None:
    model = Asking()
    events: list[dict[str, Any]] = []
    async with create_in_process_client(
        model="m", generate=model, on_metric=events.append
    ) as client:
        halted = await client.run("hello")
        assert halted.status == "pending"
        assert halted.pending is not None
        assert halted.pending.id == "pnd-m1"
        assert halted.text == "May I?"
        assert halted.turns == 0
        assert [e["event"] for e in events] == ["run"]  # the question is no failed llm call
        done = await client.resume(None, Answer(id="pnd-m1", ok=False, reason="declined"))
    assert done.text == "told ok=False"
    assert done.turns == 1
    assert done.usage["total_tokens"] == 5
    assert [c.get("answer") for c in model.calls] == [
        None,
        Answer("pnd-m1", False, None, "declined"),
    ]
    assert model.calls[1]["messages"] == model.calls[0]["messages"]  # the same prompt again


async def test_a_wait_for_answers_the_model_inline() -> None:
    model = Asking()
    async with create_in_process_client(
        model="m", generate=model, wait_for=lambda r: Answer(id=r.id, ok=True)
    ) as client:
        done = await client.run("hello")
    assert done.text == "told ok=True"
    assert len(model.calls) == 2


@pytest.mark.parametrize("bad", ["pnd-1", {"id": "pnd-1"}, None])
async def test_a_pending_that_is_not_a_request_is_a_bad_response(bad: Any) -> None:
    async with create_in_process_client(model="m", generate=lambda r: {"pending": bad}) as client:
        with pytest.raises(BadResponse, match="pending must be a toolnexus Request"):
            await client.run("hello")
        assert await client.list_pending() == []


async def test_without_its_stored_checkpoint_a_model_halt_is_not_rebuilt_from_messages() -> None:
    async with create_in_process_client(model="m", generate=Asking()) as client:
        halted = await client.run("hello")
    assert halted.pending is not None
    async with create_in_process_client(model="m", generate=Asking()) as elsewhere:
        with pytest.raises(ResumeError, match="no halted assistant turn"):
            await elsewhere.run_with_answer(
                None, halted.messages, halted.pending, Answer(id=halted.pending.id, ok=True)
            )
        assert await elsewhere.list_pending() == []


async def test_an_agent_whose_model_asks_suspends_and_its_runtime_resumes_it() -> None:
    from toolnexus.agents import agent

    result = await agent("solo", does="asks first").run("hello", in_process=Asking())
    assert result.status == "pending"
    assert result.pending is not None
    assert result.runtime is not None
    done = await result.runtime.resume(Answer(id=result.pending.id, ok=True))
    assert (done.status, done.text, done.turns) == ("done", "told ok=True", 1)


def same_again(request: dict[str, Any]) -> dict[str, Any]:
    return {"pending": Request(id="pnd-same", kind="approval", prompt="Again?")}


async def test_a_model_that_asks_an_answered_question_again_is_a_bad_response(
    tmp_path: Any,
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    async with create_in_process_client(model="m", generate=same_again, store=store) as client:
        halted = await client.run("hello")
        assert halted.pending is not None
        with pytest.raises(BadResponse, match="asked pnd-same again after it was answered"):
            await client.resume(None, Answer(id="pnd-same", ok=True))
        # Nothing was settled: the recorded answer still waits for a resumer.
        assert await client.list_pending() == []
        with pytest.raises(BadResponse, match="again"):
            await client.resume(None, "pnd-same")
    async with create_in_process_client(
        model="m", generate=same_again, wait_for=lambda r: Answer(id=r.id, ok=True)
    ) as inline:
        with pytest.raises(BadResponse, match="again after it was answered"):
            await inline.run("hello")


async def test_a_model_that_asks_without_end_is_stopped() -> None:
    asked = iter(range(10_000))

    def endless(request: dict[str, Any]) -> dict[str, Any]:
        return {"pending": Request(id=f"pnd-{next(asked)}", kind="input", prompt="More?")}

    async with create_in_process_client(
        model="m", generate=endless, wait_for=lambda r: Answer(id=r.id, ok=True)
    ) as client:
        with pytest.raises(BadResponse, match="more than 64 questions in one call"):
            await client.run("hello")
    assert next(asked) == 65
