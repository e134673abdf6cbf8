"""Newline-delimited JSON-RPC 2.0 with a child process over its stdin/stdout.

Why our own wire rather than the ACP SDK's client side: the package's ``generate`` is a
*synchronous* call that hosts make from plain code, from worker threads and from inside an
event loop alike, and a permission request must be able to wait for a human without stopping
the agent's messages from being read. A reader thread over a ``subprocess.Popen`` pipe does all
of that with the standard library only; the SDK's client is bound to one asyncio loop and would
add pydantic models and a runtime dependency for about two hundred lines of framing. The
agent side of our tests *is* the SDK (``agent-client-protocol``), so the framing is checked
against it.

One `Connection` per child. Outgoing requests get the ids ``c-1``, ``c-2``, …; a response is
matched to its request by id (late, unknown and duplicate ids are dropped), notifications and
the agent's own requests go to the handler given at construction. A line that is not a JSON
object is skipped. At EOF every outstanding call fails with code ``-1``.
"""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from ..errors import ResumeError, ToolnexusError

__all__ = [
    "ACPError",
    "ACPPermissionTimeoutError",
    "ACPSessionGone",
    "Call",
    "Connection",
    "Incoming",
    "result_of",
]

log = logging.getLogger("toolnexus.acp")

EOF_CODE = -1
EOF_TEXT = "acp: child process closed the connection"


class ACPError(ToolnexusError, RuntimeError):
    """The ACP agent failed, answered with an error, timed out or went away.

    ``code`` is the JSON-RPC error code when the agent sent one (``-1``: the child closed the
    connection).
    """

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class ACPSessionGone(ACPError, ResumeError):
    """An answer came for a turn whose agent is gone (the client closed, the child died):
    nothing was sent, and the halted run is unchanged (also a `ResumeError`, COMPAT §9)."""


class ACPPermissionTimeoutError(ACPError):
    """A turn heard nothing from the agent for ``permission_timeout`` seconds (time spent
    waiting for a human is not counted)."""


Incoming = Callable[[str, Any, Any], None]
"""``handler(method, params, id)``: a notification (``id`` is ``None``) or an agent request."""


class Call:
    __slots__ = ("done", "error", "on_done", "result")

    def __init__(self, on_done: Callable[[], None] | None = None) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: ACPError | None = None
        self.on_done = on_done

    def finish(self) -> None:
        self.done.set()
        if self.on_done is not None:
            self.on_done()


class Connection:
    """A child process spoken to in JSON-RPC lines (see the module docstring)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        on_message: Incoming,
    ) -> None:
        try:
            self._proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=cwd,
                env=dict(env),
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError as exc:
            raise ACPError(f"acp: cannot start {argv[0]!r}: {exc}") from exc
        self._on_message = on_message
        self._ids = itertools.count(1)
        self._calls: dict[str, Call] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.closed = threading.Event()
        self._reader = threading.Thread(target=self._read, name="toolnexus-acp-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return not self.closed.is_set() and self._proc.poll() is None

    # -- writing -------------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        stdin = self._proc.stdin
        try:
            with self._write_lock:
                if stdin is None:
                    raise OSError("stdin is closed")
                stdin.write(line + "\n")
                stdin.flush()
        except (OSError, ValueError) as exc:
            raise ACPError(f"acp: failed to write to child process: {exc}") from exc

    def start(
        self, method: str, params: Any, on_done: Callable[[], None] | None = None
    ) -> tuple[str, Call]:
        """Send a request; its id and the pending call (``on_done`` runs when it settles)."""
        call = Call(on_done)
        rid = f"c-{next(self._ids)}"
        with self._lock:
            if self.closed.is_set():
                raise ACPError(EOF_TEXT, EOF_CODE)
            self._calls[rid] = call
        try:
            self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        except ACPError:
            with self._lock:
                self._calls.pop(rid, None)
            raise
        return rid, call

    def request(self, method: str, params: Any, timeout: float) -> Any:
        """Send a request and wait for its result (at most ``timeout`` seconds)."""
        rid, call = self.start(method, params)
        if not call.done.wait(timeout):
            with self._lock:
                self._calls.pop(rid, None)
            raise ACPError(f"acp: {method} timed out after {timeout:g}s")
        return result_of(call)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification (no reply)."""
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def respond(self, rid: Any, result: Any) -> None:
        """Answer one of the agent's requests."""
        self._write({"jsonrpc": "2.0", "id": rid, "result": result})

    def respond_error(self, rid: Any, code: int, message: str) -> None:
        self._write({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

    # -- reading -------------------------------------------------------------------------

    def _read(self) -> None:
        stdout = self._proc.stdout
        try:
            if stdout is not None:
                for line in stdout:
                    self._dispatch(line)
        except (OSError, ValueError):
            pass
        finally:
            self._eof()

    def _dispatch(self, line: str) -> None:
        try:
            message: Any = json.loads(line)
        except ValueError:
            if line.strip():
                log.debug("acp: skipped a line that is not JSON: %.200r", line)
            return
        if not isinstance(message, dict):
            return
        msg = cast(dict[str, Any], message)
        method = msg.get("method")
        if isinstance(method, str):
            try:
                self._on_message(method, msg.get("params"), msg.get("id"))
            except Exception:
                log.warning("acp: handling %s failed", method, exc_info=True)
            return
        rid = msg.get("id")
        if not isinstance(rid, str):
            return
        with self._lock:
            call = self._calls.pop(rid, None)
        if call is None:
            log.debug("acp: dropped a response to an unknown or finished call %r", rid)
            return
        error = msg.get("error")
        if isinstance(error, dict):
            err = cast(dict[str, Any], error)
            code = err.get("code")
            call.error = ACPError(
                f"acp error {code}: {err.get('message', '')}",
                code if isinstance(code, int) else None,
            )
        else:
            call.result = msg.get("result")
        call.finish()

    def _eof(self) -> None:
        with self._lock:
            self.closed.set()
            calls, self._calls = list(self._calls.values()), {}
        for call in calls:
            call.error = ACPError(EOF_TEXT, EOF_CODE)
            call.finish()
        try:
            self._on_message("$/eof", None, None)
        except Exception:
            log.debug("acp: the EOF handler failed", exc_info=True)

    # -- closing -------------------------------------------------------------------------

    def close(self, grace: float = 5.0) -> None:
        """Close stdin, terminate, wait ``grace`` seconds, kill. Idempotent."""
        proc = self._proc
        if proc.stdin is not None and not proc.stdin.closed:
            try:
                with self._write_lock:
                    proc.stdin.close()
            except OSError:
                pass
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._reader.join(grace)
        if proc.stdout is not None:
            proc.stdout.close()


def result_of(call: Call) -> Any:
    if call.error is not None:
        raise call.error
    return call.result
