"""``toolnexus worker --app module:factory``: the host's client and toolkit, resumed runs."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import os
import signal
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import typer

from .._visible import visible
from ..client import Client
from ..errors import UsageError
from ..stores.runs import InMemoryRunStore
from . import codes
from .running import task_stack

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


async def run_worker(ref: str, concurrency: int, grace: float = 20.0) -> int:
    client, toolkit = await load_app(ref)
    _durable(client)
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
