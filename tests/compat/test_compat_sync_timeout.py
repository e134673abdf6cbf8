"""COMPAT §2: a synchronous ``http_transport`` gets what is left of ``timeout_ms`` as the
``timeout`` of every blocking call — ``post`` and the streaming ``open`` alike — so a call to a
server that accepts the connection and never answers ends by itself, soon after the run's
budget, instead of holding a worker thread (and the interpreter's exit) for 120 s."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import toolnexus as tn
from toolnexus.client import UrllibTransport

KEY = "sk-test"


class Silent:
    """A loopback server that accepts every connection and never reads or answers."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.accepted.set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.close()


class Watched:
    """Wraps a sync transport: records each call's timeout, and when and how it ended."""

    def __init__(self, inner: UrllibTransport) -> None:
        self.inner = inner
        self.timeouts: list[float] = []
        self.ended = threading.Event()
        self.outcome: BaseException | None = None
        self.took = 0.0

    def _watch(self, method: Any, *args: Any) -> Any:
        self.timeouts.append(args[-1])
        started = time.monotonic()
        try:
            return method(*args)
        except BaseException as exc:
            self.outcome = exc
            raise
        finally:
            self.took = time.monotonic() - started
            self.ended.set()

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        return self._watch(self.inner.post, url, headers, payload, timeout)

    def open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any:
        return self._watch(self.inner.open, url, headers, payload, timeout)


def client(silent: Silent, transport: Watched, **extra: Any) -> tn.Client:
    return tn.Client(
        base_url=silent.base_url,
        model="m",
        api_key=KEY,
        retries=0,
        http_transport=transport,
        **extra,
    )


async def test_a_post_to_a_server_that_never_answers_ends_with_the_run_budget(
    silent: Silent,
) -> None:
    transport = Watched(UrllibTransport())
    async with client(silent, transport, timeout_ms=600) as c:
        with pytest.raises(tn.RunTimeout, match="run timeout after 600ms"):
            await c.run("hi")
    assert silent.accepted.is_set()
    ((timeout,),) = [transport.timeouts]
    assert isinstance(timeout, float)
    assert 0 < timeout <= 0.6
    # The blocked call in its worker thread times out by itself, within its own timeout.
    assert await asyncio.to_thread(transport.ended.wait, 10)
    assert isinstance(transport.outcome, TimeoutError | OSError)
    assert transport.took < 5


async def test_a_streaming_open_to_a_server_that_never_answers_ends_with_the_run_budget(
    silent: Silent,
) -> None:
    transport = Watched(UrllibTransport())
    async with client(silent, transport, timeout_ms=600) as c:
        with pytest.raises(tn.RunTimeout, match="run timeout after 600ms"):
            async for _ in c.stream("hi"):
                pass
    assert silent.accepted.is_set()
    ((timeout,),) = [transport.timeouts]
    assert isinstance(timeout, float)
    assert 0 < timeout <= 0.6  # not the 120 s default: the open() is bounded by the budget
    assert await asyncio.to_thread(transport.ended.wait, 10)
    assert isinstance(transport.outcome, TimeoutError | OSError)
    assert transport.took < 5


class Refusing(Watched):
    """Records the timeout, then fails at once as a network error."""

    def _watch(self, method: Any, *args: Any) -> Any:
        self.timeouts.append(args[-1])
        raise ConnectionRefusedError("refused")


async def test_without_timeout_ms_post_and_open_get_the_120_second_default(
    silent: Silent,
) -> None:
    transport = Refusing(UrllibTransport())
    async with client(silent, transport) as c:
        with pytest.raises(tn.TransportError):
            await c.run("hi")
        with pytest.raises(tn.TransportError):
            async for _ in c.stream("hi"):
                pass
    assert transport.timeouts == [120.0, 120.0]


async def test_each_retry_gets_what_is_left_of_the_budget(silent: Silent) -> None:
    transport = Refusing(UrllibTransport())
    async with tn.Client(
        base_url=silent.base_url,
        model="m",
        api_key=KEY,
        retries=2,
        retry_base_ms=50,
        timeout_ms=5000,
        http_transport=transport,
    ) as c:
        with pytest.raises(tn.TransportError):
            await c.run("hi")
    assert len(transport.timeouts) == 3
    assert all(0 < t <= 5.0 for t in transport.timeouts)
    assert transport.timeouts == sorted(transport.timeouts, reverse=True)
