"""Agent homes (CONTRACT §7E): a directory of Markdown files that becomes an agent's soul.

::

    home/
      AGENTS.md  SOUL.md  IDENTITY.md  USER.md  TOOLS.md  HEARTBEAT.md  MEMORY.md

`compose_soul` turns the files that exist into one system prompt, `memory_tool` lets the agent
write to ``MEMORY.md`` / ``USER.md`` for its next session, and `persona_from_dir` bundles both
(the runtime wraps it as ``agent_from_dir``)::

    persona = persona_from_dir("agents/ada")
    persona.soul    # "## SOUL.md\\n\\nYou are Ada…\\n\\n## MEMORY.md\\n\\n- likes tea"
    persona.tools   # (memory,)

Decisions the contract leaves open, taken here:

- **Text**: files are read as UTF-8 (a leading BOM is dropped). A character the 2 MB cap cuts
  in half is dropped whole, so the soul never ends in a broken character; any other invalid
  UTF-8 becomes U+FFFD. The file on disk is never touched.
- **Present means included**: an empty file still yields its ``## <file>`` heading.
- **Unreadable files** (permission denied, a directory or FIFO under that name, an I/O error)
  are skipped with a warning on the ``toolnexus`` logger; composing never fails because of one.
  A *home* that is not a directory is the caller's mistake: `UsageError`.
- **memory**: ``replace`` and ``remove`` act on the **first** occurrence only (the smallest
  change; the model can repeat the call). ``remove`` also drops the line it leaves empty
  (``- likes tea`` disappears whole, not as a bare ``-``). Writes go to a temporary file in the
  same directory, then an atomic rename: a crash never leaves a half-written file. Bytes that
  are not UTF-8 survive a rewrite unchanged. A symlinked memory file is written through to its
  target. Each action reads, edits and writes without yielding to the event loop, so parallel
  calls in one process never lose an update; separate processes writing the same home can.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .._types import JSONSchema, Tool, ToolContext, ToolResult
from ..errors import UsageError

__all__ = [
    "BOOTSTRAP_CAP_BYTES",
    "BOOTSTRAP_ORDER",
    "HEARTBEAT_OK",
    "HEARTBEAT_PROMPT",
    "MEMORY_TOOL_SCHEMA",
    "Persona",
    "compose_soul",
    "memory_tool",
    "persona_from_dir",
]

log = logging.getLogger("toolnexus")

BOOTSTRAP_ORDER = (
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
)
"""The home files, in the order their sections appear in the soul."""

BOOTSTRAP_CAP_BYTES = 2097152
"""Per-file cap: at most this many bytes of each file reach the soul."""

TRUNCATION_NOTICE = "\n[truncated: exceeds 2 MB bootstrap cap]"

HEARTBEAT_OK = "HEARTBEAT_OK"
"""What an agent replies to a heartbeat when nothing needs attention; such replies are silent."""

HEARTBEAT_PROMPT = (
    "Heartbeat. Read your HEARTBEAT.md section and follow it. "
    "If nothing needs attention, reply HEARTBEAT_OK."
)

MEMORY_TOOL_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "replace", "remove"]},
        "target": {"enum": ["self", "user"]},
        "text": {"type": "string"},
        "with": {"type": "string"},
    },
    "required": ["action", "text"],
}

_MEMORY_DESCRIPTION = (
    "Keep notes across sessions. target 'self' (default) edits MEMORY.md, your own memory; "
    "'user' edits USER.md, what you know about the user. action 'add' appends `text` as a new "
    "'- ' entry; 'replace' swaps the first occurrence of `text` for `with`; 'remove' deletes "
    "the first occurrence of `text`. Changes are saved to disk at once but do NOT change your "
    "current prompt: they load next session."
)

_TARGET_FILES = {"self": "MEMORY.md", "user": "USER.md"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Persona:
    """An agent assembled from its home directory; the soul is composed once and frozen.

    Attributes:
        name: the directory's name, unless one was given.
        soul: the composed system prompt (see `compose_soul`).
        files: the home files found, in `BOOTSTRAP_ORDER`.
        tools: the tools given, then the ``memory`` tool when memory is on.
    """

    name: str
    soul: str
    files: tuple[str, ...]
    tools: tuple[Tool, ...]


def compose_soul(home: str | os.PathLike[str]) -> tuple[str, list[str]]:
    """Compose the soul from the home files that exist.

    Each present file, in `BOOTSTRAP_ORDER`, becomes ``## <file>\\n\\n<stripped body>``; the
    sections are joined by ``\\n\\n``. A file over `BOOTSTRAP_CAP_BYTES` contributes only its
    first 2,097,152 bytes, followed by ``\\n[truncated: exceeds 2 MB bootstrap cap]``.

    Args:
        home: the agent's home directory.

    Returns:
        ``(soul, found)``: the soul (``""`` when no file exists) and the names of the files
        that went into it.

    Raises:
        UsageError: ``home`` is not a directory.

    Example:
        >>> import tempfile, pathlib
        >>> home = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (home / "SOUL.md").write_text("Be kind.\\n")
        >>> compose_soul(home)
        ('## SOUL.md\\n\\nBe kind.', ['SOUL.md'])
    """
    root = _home(home)
    sections: list[str] = []
    found: list[str] = []
    for name in BOOTSTRAP_ORDER:
        body = _read_capped(root / name)
        if body is None:
            continue
        sections.append(f"## {name}\n\n{body}")
        found.append(name)
    return "\n\n".join(sections), found


def _home(home: str | os.PathLike[str]) -> Path:
    root = Path(home)
    if not root.is_dir():
        raise UsageError(f"agent home is not a directory: {os.fspath(root)}")
    return root


def _read_capped(path: Path) -> str | None:
    """The stripped, capped text of ``path``; ``None`` when absent or unreadable."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _skip(path, exc.strerror or type(exc).__name__)
    if not stat.S_ISREG(info.st_mode):
        # A FIFO would block the open forever; a directory cannot be read at all.
        return _skip(path, "not a regular file")
    try:
        with path.open("rb") as handle:
            data = handle.read(BOOTSTRAP_CAP_BYTES + 1)
    except FileNotFoundError:  # removed between stat and open
        return None
    except OSError as exc:
        return _skip(path, exc.strerror or type(exc).__name__)
    truncated = len(data) > BOOTSTRAP_CAP_BYTES
    decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
    # Not final when truncated: a trailing partial character is held back, i.e. dropped.
    text = decoder.decode(data[:BOOTSTRAP_CAP_BYTES], final=not truncated).strip()
    return text + TRUNCATION_NOTICE if truncated else text


def _skip(path: Path, why: str) -> None:
    log.warning("toolnexus: agent home file skipped (%s): %s", why, path)
    return None


def memory_tool(home: str | os.PathLike[str]) -> Tool:
    """The ``memory`` tool over ``home``: add, replace or remove notes for the next session.

    ``target`` ``self`` (the default) edits ``MEMORY.md``, ``user`` edits ``USER.md``. ``add``
    appends ``- <text>`` on a new line, creating the file when missing; ``replace`` swaps the
    first occurrence of ``text`` for ``with``; ``remove`` deletes it. Success is
    ``ok (<action> → <FILE>); loads next session``; a ``replace``/``remove`` whose ``text`` is
    absent is the error result ``not found: <text>``. The live prompt is never changed.

    Raises:
        UsageError: ``home`` is not a directory.

    Example::

        tool = memory_tool("agents/ada")
        await tool.execute({"action": "add", "text": "likes tea"}, None)
        # ToolResult(output="ok (add → MEMORY.md); loads next session")
    """
    root = _home(home)

    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        return _remember(root, args)

    execute.__qualname__ = "memory.execute"
    return Tool(
        name="memory",
        description=_MEMORY_DESCRIPTION,
        input_schema=MEMORY_TOOL_SCHEMA,
        source="native",
        execute=execute,
    )


def _remember(root: Path, args: object) -> ToolResult:
    if not isinstance(args, dict):
        return ToolResult("memory: arguments must be an object", is_error=True)
    given = cast(dict[str, object], args)
    action = given.get("action")
    target = given.get("target", "self")
    text = given.get("text")
    replacement = given.get("with")
    if action not in ("add", "replace", "remove"):
        return ToolResult("memory: action must be add, replace or remove", is_error=True)
    file_name = _TARGET_FILES.get(target) if isinstance(target, str) else None
    if file_name is None:
        return ToolResult("memory: target must be self or user", is_error=True)
    if not isinstance(text, str) or not text.strip():
        return ToolResult("memory: text must be a non-empty string", is_error=True)
    if action == "replace" and not isinstance(replacement, str):
        return ToolResult('memory: replace needs a "with" string', is_error=True)
    path = Path(os.path.realpath(root / file_name))
    try:
        current = _read_all(path)
        if action == "add":
            updated = _added(current, text)
        else:
            at = current.find(text)
            if at < 0:
                return ToolResult(f"not found: {text}", is_error=True)
            if isinstance(replacement, str) and action == "replace":
                updated = current[:at] + replacement + current[at + len(text) :]
            else:
                updated = _removed(current, at, len(text))
        _write_atomic(path, updated)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return ToolResult(f"memory: cannot write {file_name}: {why}", is_error=True)
    return ToolResult(f"ok ({action} → {file_name}); loads next session")


def _read_all(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ""
    return data.decode("utf-8", errors="surrogateescape")


def _added(current: str, text: str) -> str:
    if current and not current.endswith("\n"):
        current += "\n"
    return f"{current}- {text}\n"


def _removed(current: str, at: int, length: int) -> str:
    """``current`` without ``[at, at+length)``; the line(s) it spanned go if left empty."""
    line_start = current.rfind("\n", 0, at) + 1
    line_end = current.find("\n", at + length)
    line_end = len(current) if line_end < 0 else line_end
    rest = current[line_start:at] + current[at + length : line_end]
    if rest.strip() in ("", "-"):
        return current[:line_start] + current[line_end + 1 :]
    return current[:at] + current[at + length :]


def _write_atomic(path: Path, text: str) -> None:
    data = text.encode("utf-8", errors="surrogateescape")
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None  # a new file keeps mkstemp's owner-only permissions
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def persona_from_dir(
    home: str | os.PathLike[str],
    *,
    name: str | None = None,
    memory: bool = True,
    tools: Sequence[Tool] | None = None,
) -> Persona:
    """Assemble a `Persona` from an agent home: its soul, name and tools.

    Args:
        home: the agent's home directory.
        name: the agent's name (default: the directory's name).
        memory: add the ``memory`` tool (turn off for a read-only persona).
        tools: further tools, listed before ``memory``.

    Raises:
        UsageError: ``home`` is not a directory, or ``memory`` is on and ``tools`` already
            holds a tool named ``memory``.

    Example::

        persona = persona_from_dir("agents/ada", tools=[search])
        (persona.name, persona.files, [t.name for t in persona.tools])
        # ("ada", ["SOUL.md", "MEMORY.md"], ["search", "memory"])
    """
    soul, found = compose_soul(home)
    given = tuple(tools or ())
    if memory:
        if any(tool.name == "memory" for tool in given):
            raise UsageError('a tool named "memory" is already given; pass memory=False')
        given = (*given, memory_tool(home))
    resolved = name if name is not None else Path(os.path.abspath(home)).name
    return Persona(name=resolved, soul=soul, files=tuple(found), tools=given)
