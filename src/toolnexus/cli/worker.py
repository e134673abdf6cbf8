"""``toolnexus worker --app module:factory``: the host's client and toolkit, resumed runs."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import signal
import sys
from typing import Any, NoReturn

import typer

from .._visible import visible
from ..client import Client
from ..errors import UsageError
from . import codes
from .running import task_stack

__all__ = ["load_app", "run_worker"]


async def load_app(ref: str) -> tuple[Client, Any]:
    """Import ``module:factory`` and call it (awaiting it when async): ``(client, toolkit)``.

    Raises:
        UsageError: the reference, the import or what the factory returned is wrong.
    """
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise UsageError(f"--app takes module:factory, got {ref!r}")
    if "" not in sys.path:
        sys.path.insert(0, "")  # the working directory, as `python -m` does
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"--app: cannot import {module_name!r}: {exc}") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UsageError(f"--app: {module_name} has no callable {attr!r}")
    made = factory()
    if inspect.isawaitable(made):
        made = await made
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], Client)):  # pyright: ignore[reportUnknownArgumentType]
        raise UsageError(f"--app: {ref} must return (client, toolkit)")
    return made[0], made[1]  # pyright: ignore[reportUnknownVariableType]


async def run_worker(ref: str, concurrency: int, grace: float = 20.0) -> int:
    client, toolkit = await load_app(ref)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def done(request_id: str, result: Any) -> None:
        typer.echo(visible(f"{request_id}: {getattr(result, 'status', '?')}"))

    await client.__aenter__()  # (left by hand below: the shutdown has a deadline)
    work = client.worker(toolkit, concurrency=concurrency, on_result=done)
    work.start()
    typer.echo("worker: ready", err=True)
    await stop.wait()
    try:
        async with asyncio.timeout(grace):
            await work.stop()
            await client.aclose()
    except TimeoutError:
        _abandon(grace, work)
    typer.echo(f"worker: stopped ({work.resumed} resumed, {work.failed} failed)", err=True)
    return codes.OK


def _abandon(grace: float, work: Any) -> NoReturn:
    """The shutdown outran ``grace``: say where every task stands, then exit at once.

    Nothing is lost by leaving: a run this worker still held is handed to another worker
    when its lease runs out (fencing keeps this one from committing anything after that).
    `asyncio.run` would wait for the stuck tasks, so the process ends with `os._exit`.
    """
    typer.echo(
        f"worker: the shutdown took longer than {grace:g}s; exiting now ({work.resumed} "
        "resumed; any run still held goes to another worker when its lease runs out)",
        err=True,
    )
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            sys.stderr.write(task_stack(task))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(codes.FAILED)
