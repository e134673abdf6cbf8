"""A directory ↔ symlink race against the path-taking built-ins (imported as ``race_support``;
also driven by ``bench/bench_confine_race.py`` for the 10,000-try figure).

A second real process swaps ``ws/d`` between a real directory (holding ``secret.txt`` with the
text ``inside TOKEN``) and a symlink to ``outside/`` (whose ``secret.txt`` says ``OUTSIDE
TOKEN``), as fast as it can, while the built-ins read, grep and edit ``d/secret.txt`` and write
or add ``d/<name>``. An *escape* is a read or grep that returns ``OUTSIDE``, an edit that changes
the outside file, or a write or patch that creates a file in ``outside/``.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

from toolnexus.tools.builtins import create_builtin_tools

_SWAPPER = r"""
import os, shutil, sys
ws, outside = sys.argv[1], sys.argv[2]
d, real, link = (os.path.join(ws, n) for n in ("d", "d_real", "d_link"))
os.symlink(outside, link)

def put(src, dst):
    # A write that made the missing ``d`` as a fresh directory is legitimate: clear it away.
    while True:
        try:
            os.rename(src, dst)
            return
        except OSError:
            shutil.rmtree(dst, ignore_errors=True)

first = True
while True:
    put(d, real)
    put(link, d)
    if first:
        print("ready", flush=True)
        first = False
    put(d, link)
    put(real, d)
"""


@dataclass(slots=True, kw_only=True)
class RaceTally:
    """What the race produced."""

    tries: int = 0
    escapes: int = 0
    succeeded: int = 0
    refused: int = 0


def make_layout(base: Path) -> tuple[Path, Path]:
    """``base/ws`` (with ``d/secret.txt``) and ``base/outside`` (with its own secret)."""
    ws, outside = base / "ws", base / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "secret.txt").write_text("inside TOKEN")
    (outside / "secret.txt").write_text("OUTSIDE TOKEN")
    return ws, outside


async def race(base: Path, tries: int, *, kinds: tuple[str, ...] = ("read", "write")) -> RaceTally:
    """Run ``tries`` calls of each built-in in ``kinds`` against the swapper."""
    ws, outside = make_layout(base)
    tools = {t.name: t for t in create_builtin_tools({"workspace": str(ws)})}
    swapper = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _SWAPPER, str(ws), str(outside), stdout=asyncio.subprocess.PIPE
    )
    tally = RaceTally()
    try:
        assert swapper.stdout is not None
        assert await asyncio.wait_for(swapper.stdout.readline(), 30) == b"ready\n"
        for i in range(tries):
            for kind in kinds:
                tally.tries += 1
                if kind == "read":
                    result = await tools["read"].execute({"path": "d/secret.txt"})
                    escaped = "OUTSIDE" in result.output
                elif kind == "write":
                    result = await tools["write"].execute({"path": f"d/w{i}.txt", "content": "x"})
                    escaped = (outside / f"w{i}.txt").exists()
                elif kind == "grep":
                    result = await tools["grep"].execute({"pattern": "TOKEN", "path": "d"})
                    escaped = "OUTSIDE" in result.output
                    result.is_error = result.is_error or not result.output  # walked nothing
                elif kind == "edit":
                    old, new = ("TOKEN", "token") if i % 2 == 0 else ("token", "TOKEN")
                    args = {"path": "d/secret.txt", "oldString": old, "newString": new}
                    result = await tools["edit"].execute(args)
                    escaped = (outside / "secret.txt").read_text() != "OUTSIDE TOKEN"
                    if escaped:  # put it back, so each escape is counted once
                        (outside / "secret.txt").write_text("OUTSIDE TOKEN")
                else:
                    patch = f"*** Begin Patch\n*** Add File: d/p{i}.txt\n+x\n*** End Patch"
                    result = await tools["apply_patch"].execute({"patchText": patch})
                    escaped = (outside / f"p{i}.txt").exists()
                tally.escapes += escaped
                if result.is_error:
                    tally.refused += 1
                elif not escaped:
                    tally.succeeded += 1
    finally:
        swapper.kill()
        await swapper.wait()
    leaked = sorted(p.name for p in outside.iterdir() if p.name != "secret.txt")
    tally.escapes = max(tally.escapes, len(leaked))
    return tally
