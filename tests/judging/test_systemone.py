"""The systemone style against a real HTTP endpoint on loopback: the body and headers it sends,
retries with the client's policy and ``Retry-After``, and every failure as a `ClassifierError`
that carries no secret (COMPAT §10)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import pytest
from judging_support import STALL, Reply, ok, serve_systemone

from toolnexus import (
    AiohttpTransport,
    ClassifierError,
    ClassifierResponse,
    ErrorTier,
    NoulQuestion,
    canonical_json,
    create_classifier,
)
from toolnexus.judging.systemone import no_jitter
from toolnexus.llm.retry import backoff_delay

WAIT = 5.0
Q = {"q": NoulQuestion("Is it spam?")}
NOUL = {"q": {"type": "noul", "noul": 0.9}}
SECRET = "sk-judge-secret-0000"


async def test_the_body_is_the_canonical_request_with_the_state_verbatim() -> None:
    state = {"text": "<b>A & B</b>", "n": 1.5, "é": ["z", "a"]}
    async with serve_systemone(ok(NOUL)) as server:
        async with create_classifier(base_url=server.base_url, model="jev-x") as clf:
            decision = await clf.evaluate(state, Q)
    assert decision.noul("q").noul == 0.9
    seen = server.seen[0]
    assert seen.path == "/v1/systemone"
    assert seen.headers["Content-Type"] == "application/json"
    assert seen.body == canonical_json(
        {
            "model": "jev-x",
            "questions": {"q": {"type": "noul", "instructions": "Is it spam?"}},
            "state": state,
        }
    )


async def test_the_key_and_the_expanded_headers_are_read_at_call_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", SECRET)
    async with serve_systemone(ok(NOUL), ok(NOUL)) as server:
        async with create_classifier(
            base_url=server.base_url,
            api_key_env="JUDGE_TEST_KEY",
            headers={"X-Tenant": "t-${JUDGE_TEST_TENANT}"},
        ) as clf:
            monkeypatch.setenv("JUDGE_TEST_TENANT", "first")
            await clf.evaluate("s", Q)
            monkeypatch.setenv("JUDGE_TEST_TENANT", "second")
            monkeypatch.delenv("JUDGE_TEST_KEY")
            await clf.evaluate("s", Q)
    first, second = server.seen
    assert first.headers["Authorization"] == f"Bearer {SECRET}"
    assert [first.headers["X-Tenant"], second.headers["X-Tenant"]] == ["t-first", "t-second"]
    assert "Authorization" not in second.headers


async def test_request_params_win_and_the_body_transform_has_the_last_word() -> None:
    async with serve_systemone(ok(NOUL), ok(NOUL)) as server:
        async with create_classifier(
            base_url=server.base_url,
            request_params={"provider": {"order": ["typesafe"]}, "model": "overridden"},
            body_transform=lambda body: {**body, "wrapped": True},
        ) as clf:
            await clf.evaluate("s", Q)
        async with create_classifier(
            base_url=server.base_url, body_transform=lambda b: None
        ) as clf:
            await clf.evaluate("s", Q)
    sent, kept = server.seen[0].json, server.seen[1].json
    assert sent["provider"] == {"order": ["typesafe"]}
    assert sent["model"] == "overridden"
    assert sent["wrapped"] is True
    assert set(kept) == {"model", "questions", "state"}


async def test_retry_after_is_honoured_instead_of_the_backoff() -> None:
    # A backoff of a minute would time this out: the replies' Retry-After of 0 is what is waited.
    now = {"Retry-After": "0"}
    async with serve_systemone(
        Reply(503, b"busy", now), Reply(429, b"slow", now), ok(NOUL)
    ) as server:
        async with create_classifier(base_url=server.base_url, retry_base_ms=60_000) as clf:
            decision = await asyncio.wait_for(clf.evaluate("s", Q), WAIT)
    assert decision.noul("q").noul == 0.9
    assert len(server.seen) == 3


@pytest.mark.parametrize("status", [408, 500, 502, 504, 529])
async def test_the_clients_retryable_statuses_and_408_are_retried(status: int) -> None:
    async with serve_systemone(Reply(status, b"later"), ok(NOUL)) as server:
        async with create_classifier(base_url=server.base_url, retry_base_ms=1) as clf:
            await clf.evaluate("s", Q)
    assert len(server.seen) == 2


@pytest.mark.parametrize("status", [400, 422, 501, 520])
async def test_another_status_fails_at_once(status: int) -> None:
    async with serve_systemone(Reply(status, b"nope")) as server:
        async with create_classifier(base_url=server.base_url, retries=3, retry_base_ms=1) as clf:
            with pytest.raises(ClassifierError) as caught:
                await clf.evaluate("s", Q)
    assert str(caught.value) == f"classifier: POST {server.base_url}/systemone: HTTP {status}: nope"
    assert caught.value.status == status
    assert len(server.seen) == 1


async def test_retryable_statuses_widen_the_set() -> None:
    async with serve_systemone(Reply(520, b"origin"), ok(NOUL)) as server:
        async with create_classifier(
            base_url=server.base_url, retry_base_ms=1, retryable_statuses=[520, 521]
        ) as clf:
            await clf.evaluate("s", Q)
    assert len(server.seen) == 2


async def test_the_retries_are_bounded() -> None:
    busy = Reply(503, b"busy", {"Retry-After": "0"})
    async with serve_systemone(busy, busy, busy, busy) as server:
        async with create_classifier(base_url=server.base_url, retries=2) as clf:
            with pytest.raises(ClassifierError, match="HTTP 503: busy"):
                await clf.evaluate("s", Q)
    assert len(server.seen) == 3


async def test_on_error_sees_each_failure_and_can_stop_the_retries() -> None:
    infos: list[dict[str, Any]] = []

    def on_error(info: Any) -> ErrorTier:
        infos.append(dict(info))
        return "retry" if info["attempt"] == 0 else "fail"

    busy = Reply(503, b"busy", {"Retry-After": "0"})
    async with serve_systemone(busy, busy, busy) as server:
        async with create_classifier(base_url=server.base_url, retries=5, on_error=on_error) as clf:
            with pytest.raises(ClassifierError, match="503"):
                await clf.evaluate("s", Q)
    assert [(i["status"], i["attempt"], i["retryable"]) for i in infos] == [
        (503, 0, True),
        (503, 1, True),
    ]
    assert len(server.seen) == 2


async def test_an_auth_failure_never_shows_its_body_or_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", SECRET)
    monkeypatch.setenv("JUDGE_TEST_HEADER", "header-secret-1111")
    reflected = json.dumps({"error": f"bad key Bearer {SECRET} / header-secret-1111"}).encode()
    events: list[dict[str, Any]] = []
    async with serve_systemone(Reply(401, reflected)) as server:
        async with create_classifier(
            base_url=server.base_url,
            api_key_env="JUDGE_TEST_KEY",
            headers={"X-Extra": "${JUDGE_TEST_HEADER}"},
            on_metric=events.append,
        ) as clf:
            with pytest.raises(ClassifierError) as caught:
                await clf.evaluate("s", Q)
    assert str(caught.value) == f"classifier: POST {server.base_url}/systemone: HTTP 401"
    assert len(server.seen) == 1
    text = json.dumps(events) + str(caught.value)
    for secret in (SECRET, "header-secret-1111", "bad key"):
        assert secret not in text
    assert server.seen[0].headers["X-Extra"] == "header-secret-1111"


async def test_another_error_body_is_masked_redacted_and_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", SECRET)
    body = json.dumps({"user_id": "user_2abc", "echo": f"Bearer {SECRET}", "pad": "x" * 400})
    async with serve_systemone(Reply(400, body.encode())) as server:
        async with create_classifier(base_url=server.base_url, api_key_env="JUDGE_TEST_KEY") as clf:
            with pytest.raises(ClassifierError) as caught:
                await clf.evaluate("s", Q)
    message = str(caught.value)
    shown = message.split(": HTTP 400: ", 1)[1]
    assert SECRET not in message
    assert "user_2abc" not in message
    assert "«redacted»" in shown
    assert "Bearer ***" in shown
    assert len(shown) == 201
    assert shown.endswith("…")


async def test_a_reply_that_is_not_json_fails_without_a_retry() -> None:
    async with serve_systemone(Reply(200, b"<html>gateway</html>"), ok(NOUL)) as server:
        async with create_classifier(base_url=server.base_url) as clf:
            with pytest.raises(ClassifierError) as caught:
                await clf.evaluate("s", Q)
    assert str(caught.value) == (
        f"classifier: POST {server.base_url}/systemone: HTTP 200: the reply is not JSON: "
        "'<html>gateway</html>'"
    )
    assert len(server.seen) == 1


async def test_a_malformed_answer_fails_and_is_never_repaired() -> None:
    broken = ok({"q": {"type": "noul", "noul": "very likely"}})
    async with serve_systemone(broken, ok(NOUL)) as server:
        async with create_classifier(base_url=server.base_url) as clf:
            with pytest.raises(ClassifierError, match="answer 'q': noul must be a number"):
                await clf.evaluate("s", Q)
    assert len(server.seen) == 1


async def test_a_stalled_endpoint_times_out_and_is_retried() -> None:
    async with serve_systemone(STALL, STALL) as server:
        async with create_classifier(
            base_url=server.base_url, timeout=0.2, retries=1, retry_base_ms=1
        ) as clf:
            with pytest.raises(ClassifierError) as caught:
                await asyncio.wait_for(clf.evaluate("s", Q), WAIT)
    assert str(caught.value) == (
        f"classifier: POST {server.base_url}/systemone: TimeoutError: timed out after 0.2s"
    )
    assert len(server.seen) == 2


async def test_a_refused_connection_is_a_classifier_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    async with create_classifier(base_url=base, retries=1, retry_base_ms=1) as clf:
        with pytest.raises(ClassifierError) as caught:
            await clf.evaluate("s", Q)
    assert str(caught.value).startswith(f"classifier: POST {base}/systemone: ")
    assert isinstance(caught.value.__cause__, Exception)


async def test_the_metric_events_say_what_each_evaluation_cost() -> None:
    events: list[dict[str, Any]] = []
    usage = {"input_tokens": 12, "output_tokens": 3}
    async with serve_systemone(ok(NOUL, usage=usage), Reply(422, b"bad")) as server:
        async with create_classifier(base_url=server.base_url, on_metric=events.append) as clf:
            await clf.evaluate("s", Q)
            with pytest.raises(ClassifierError):
                await clf.evaluate("s", Q)
    good, bad = events
    assert isinstance(good["ms"], int)
    assert isinstance(bad["ms"], int)
    assert {k: v for k, v in good.items() if k != "ms"} == {
        "event": "classifier.evaluate",
        "model": "jev-test",
        "status": "ok",
        "prompt_tokens": 12,
        "completion_tokens": 3,
    }
    assert (bad["status"], bad["model"], bad["prompt_tokens"]) == ("error", "jev-latest", 0)
    assert bad["error"] == f"classifier: POST {server.base_url}/systemone: HTTP 422: bad"


# -- the host's transport ----------------------------------------------------------------------


class SyncTransport:
    """The existing package's shape: a blocking ``post``."""

    def __init__(self, *replies: ClassifierResponse | Exception) -> None:
        self.replies = list(replies)
        self.threads: list[int] = []
        self.calls: list[tuple[str, dict[str, str], bytes, float]] = []

    def post(
        self, url: str, headers: dict[str, str], body: bytes, timeout: float
    ) -> ClassifierResponse:
        self.threads.append(threading.get_ident())
        self.calls.append((url, headers, body, timeout))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def answered() -> ClassifierResponse:
    return ClassifierResponse(200, json.dumps({"model": "m", "answers": NOUL}).encode())


async def test_a_blocking_host_transport_runs_in_a_worker_thread() -> None:
    transport = SyncTransport(answered())
    clf = create_classifier(http_transport=transport, timeout=3)
    await clf.evaluate("s", Q)
    url, _, body, timeout = transport.calls[0]
    assert url == "https://api.typesafe.ai/v1/systemone"
    assert json.loads(body)["state"] == "s"
    assert timeout == 3.0
    assert transport.threads[0] != threading.get_ident()


async def test_an_async_host_transport_is_awaited_on_the_loop() -> None:
    threads: list[int] = []

    class AsyncTransport:
        async def post(
            self, url: str, headers: dict[str, str], body: bytes, timeout: float
        ) -> ClassifierResponse:
            threads.append(threading.get_ident())
            return answered()

    await create_classifier(http_transport=AsyncTransport()).evaluate("s", Q)
    assert threads == [threading.get_ident()]


async def test_a_host_transport_fault_is_retried_and_named() -> None:
    transport = SyncTransport(OSError("connection reset"), OSError("connection reset"))
    clf = create_classifier(http_transport=transport, retries=1, retry_base_ms=1)
    with pytest.raises(ClassifierError) as caught:
        await clf.evaluate("s", Q)
    assert str(caught.value) == (
        "classifier: POST https://api.typesafe.ai/v1/systemone: OSError: connection reset"
    )
    assert len(transport.calls) == 2


async def test_a_host_transport_that_returns_something_else_is_refused() -> None:
    class Wrong:
        def post(self, url: str, headers: dict[str, str], body: bytes, timeout: float) -> object:
            return {"status": 200}

    with pytest.raises(ClassifierError, match="returned dict, not a ClassifierResponse"):
        await create_classifier(http_transport=Wrong()).evaluate("s", Q)


async def test_a_shared_aiohttp_transport_stays_open_when_the_classifier_closes() -> None:
    shared = AiohttpTransport()
    try:
        async with serve_systemone(ok(NOUL), ok(NOUL)) as server:
            async with create_classifier(base_url=server.base_url, http_transport=shared) as clf:
                await clf.evaluate("s", Q)
            async with create_classifier(base_url=server.base_url, http_transport=shared) as clf:
                await clf.evaluate("s", Q)
        assert len(server.seen) == 2
    finally:
        await shared.aclose()


# -- construction ------------------------------------------------------------------------------


def test_the_backends_set_url_model_and_key_as_a_unit_and_explicit_options_win() -> None:
    clf = create_classifier(backend="openrouter")
    assert (clf.base_url, clf.model, clf.api_key_env) == (
        "https://openrouter.ai/api/v1",
        "typesafe/jev-1.13",
        "OPENROUTER_API_KEY",
    )
    mine = create_classifier(backend="openrouter", model="typesafe/jev-2", api_key_env="MINE")
    assert (mine.model, mine.api_key_env) == ("typesafe/jev-2", "MINE")
    default = create_classifier()
    assert (
        default.style,
        default.base_url,
        default.model,
        default.api_key_env,
        default.timeout,
    ) == (
        "systemone",
        "https://api.typesafe.ai/v1",
        "jev-latest",
        "TYPESAFE_API_KEY",
        10.0,
    )


def test_typesafes_model_name_on_openrouter_is_refused() -> None:
    with pytest.raises(ClassifierError) as caught:
        create_classifier(base_url="https://openrouter.ai/api/v1", model="jev-latest")
    assert str(caught.value) == (
        'classifier: model "jev-latest" is TypeSafe\'s spelling; on openrouter.ai use '
        '"typesafe/jev-1.13"'
    )


def test_the_backoff_has_no_jitter() -> None:
    assert [backoff_delay(n, 500, no_jitter(), 60_000) for n in range(3)] == [0.5, 1.0, 2.0]
