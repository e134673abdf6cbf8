"""``toolnexus worker --app module:factory``: the host's client and toolkit, resumed runs."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import os
import signal
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import typer

from .._visible import visible
from ..client import Client
from ..errors import UsageError
from ..stores.requests import holder_name
from ..stores.runs import InMemoryRunStore
from . import codes
from .running import task_stack
from .stopping import Stopping

__all__ = ["load_app", "run_worker"]


async def load_app(ref: str) -> tuple[Client, Any]:
    """Import ``module:factory`` and call it (awaiting it when async): ``(client, toolkit)``.

    Raises:
        UsageError: the reference, the import or what the factory returned is wrong.
    """
    module_name, _, attr = ref.rpartition(":")
    if not module_name or not attr:
        raise UsageError(
            f"--app takes module:factory or path/to/file.py:factory, got {ref!r} "
            "(the factory returns (client, toolkit))"
        )
    if "" not in sys.path:
        sys.path.insert(0, "")  # the working directory, as `python -m` does
    module = _module_of(module_name)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UsageError(f"--app: {module_name} has no callable {attr!r}")
    made = factory()
    if inspect.isawaitable(made):
        made = await made
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], Client)):  # pyright: ignore[reportUnknownArgumentType]
        raise UsageError(f"--app: {ref} must return (client, toolkit)")
    return made[0], made[1]  # pyright: ignore[reportUnknownVariableType]


def _module_of(name: str) -> ModuleType:
    """The module ``--app`` names: a dotted module on the path, or a ``.py`` file."""
    if name.endswith(".py") or os.sep in name or name.startswith("."):
        path = Path(name)
        if not path.is_file():
            raise UsageError(f"--app: no such file {name!r}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"--app: {name!r} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # as an import would (dataclasses, pickling)
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise UsageError(f"--app: cannot import {name!r}: {exc}") from exc


def _durable(client: Client) -> None:
    """A worker resumes runs other processes halted: a store only this process sees has none.

    Raises:
        UsageError: the client keeps its halted runs in this process's memory.
    """
    runs = client.run_store
    if isinstance(runs, InMemoryRunStore) or getattr(runs, "path", None) == ":memory:":
        raise UsageError(
            "toolnexus worker: the app's client keeps halted runs in memory, where no other "
            "process can answer them and this worker would idle for ever; give create_client "
            "a durable store= (sqlite:///state.db or postgresql://...)"
        )


class _Signals:
    """SIGINT and SIGTERM as they arrive: the first stops the worker, the next hurries it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._queue: asyncio.Queue[int] = asyncio.Queue()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._queue.put_nowait, sig)

    async def next(self) -> int:
        return await self._queue.get()


async def _first(task: asyncio.Future[Any], signals: _Signals, timeout: float) -> bool:
    """Wait until ``task`` ends, a signal comes or ``timeout`` passes; whether a signal came.
    (``task`` is never cancelled here.)"""
    came = asyncio.ensure_future(signals.next())
    try:
        await asyncio.wait({task, came}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not came.done():
            came.cancel()
    return came.done() and not came.cancelled()


async def run_worker(ref: str, concurrency: int, grace: float = 20.0) -> int:
    """Resume the app's answered runs until SIGINT/SIGTERM; then give the runs in flight
    ``grace`` seconds to finish, abandon the rest, and say which went which way (`Stopping`)."""
    client, toolkit = await load_app(ref)
    _durable(client)
    signals = _Signals(asyncio.get_running_loop())
    stopping = Stopping(in_flight=())

    def done(request_id: str, result: Any) -> None:
        status = getattr(result, "status", "?")
        typer.echo(visible(f"{request_id}: {status}"))
        if request_id in stopping.in_flight:
            stopping.finished[request_id] = str(status)

    await client.__aenter__()  # (left by hand below: the shutdown has a deadline)
    work = client.worker(toolkit, concurrency=concurrency, on_result=done)
    runner = work.start()
    typer.echo(f"worker: ready, holding the runs it takes as {holder_name()}", err=True)
    await signals.next()
    work.stop_taking()
    stopping = Stopping(in_flight=work.in_flight)
    typer.echo(visible(stopping.announce(grace)), err=True)
    if stopping.in_flight:
        hurried = await _first(runner, signals, grace)
        if not runner.done():
            why = "asked again" if hurried else f"{grace:g}s passed"
            typer.echo(f"worker: {why}: abandoning the runs still in flight", err=True)
    stop = asyncio.ensure_future(work.stop())
    bound = max(grace, 1.0)
    hurried = await _first(stop, signals, bound)
    if not stop.done():
        late = f"the runs in flight did not end {bound:g}s after being cancelled"
        _abandon("asked to stop again" if hurried else late, work)
    stop.result()
    try:
        async with asyncio.timeout(bound):
            lines = await stopping.report(work, client.run_store, time.time())
            await client.aclose()
    except TimeoutError:
        _abandon(f"the store did not close within {bound:g}s", work)
    for line in lines:
        typer.echo(visible(line), err=True)
    left = f", {len(work.abandoned)} abandoned" if work.abandoned else ""
    typer.echo(f"worker: stopped ({work.resumed} resumed, {work.failed} failed{left})", err=True)
    return codes.OK


def _abandon(why: str, work: Any) -> NoReturn:
    """The runs in flight did not end soon after being cancelled (a tool that ignores
    cancellation), or a signal came meanwhile (``why``): say where every task stands, then
    exit at once.

    Nothing is lost by leaving: a run this worker still held is handed to another worker
    when its lease runs out (fencing keeps this one from committing anything after that).
    `asyncio.run` would wait for the stuck tasks, so the process ends with `os._exit`.
    """
    held = ", ".join(work.in_flight) or "none"
    typer.echo(
        visible(
            f"worker: {why}; exiting now ({work.resumed} resumed; still held: {held} — each "
            "goes to another worker when its lease runs out)"
        ),
        err=True,
    )
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            sys.stderr.write(task_stack(task))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(codes.FAILED)
