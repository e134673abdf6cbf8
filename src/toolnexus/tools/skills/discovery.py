"""Gathering skill candidates: folders first, then data, then the provider; then dedupe.

Every source yields *candidates* in a fixed order — each skills root in the order given (its
``SKILL.md`` files sorted by segment count below the root, then by relative path in code-point
order, so a shallower skill always beats a nested copy), then the ``skills`` list, then what
the ``skill_provider`` returned. `merge` keeps the first skill of each name and turns the rest
into ``duplicate-name`` skips. Nothing here raises for bad *files*: a file that cannot become a
skill is a `Rejected` candidate carrying the reason (for `list_skills`) and a human detail
(for the log). Bad *arguments* from the host are `UsageError`s.
"""

from __future__ import annotations

import inspect
import logging
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from ...errors import UsageError
from .._shims import warn_stderr
from .frontmatter import parse_frontmatter
from .model import (
    SkillDef,
    SkillInfo,
    SkillProvider,
    SkillSkip,
    SkillSkipReason,
    has_control_chars,
    items_of,
    skill_def_of,
)
from .walk import SKILL_FILE, by_depth_then_path, walk_files

__all__ = [
    "MAX_SKILL_FILE_BYTES",
    "PROVIDER_FAILED",
    "Candidate",
    "Rejected",
    "call_provider",
    "candidates_from_defs",
    "merge",
    "provided_defs",
    "read_skill_file",
    "resolve_provider",
    "roots_of",
    "scan_roots",
]

log = logging.getLogger("toolnexus")

MAX_SKILL_FILE_BYTES = 1 << 20
"""A SKILL.md larger than this (1 MiB) is skipped as ``unreadable`` rather than read whole.

A skill's body goes into the model's context; a megabyte of it is far past any useful size,
and the cap keeps a stray multi-gigabyte file from being loaded into memory.
"""


@dataclass(frozen=True, slots=True)
class Rejected:
    """A candidate that did not become a skill: the skip record plus a detail for the log."""

    skip: SkillSkip
    detail: str


Candidate: TypeAlias = SkillInfo | Rejected


def roots_of(skills_dir: object) -> list[str]:
    """``skills_dir`` (one path or a list of them) as absolute paths, links not resolved.

    A leading ``~`` is expanded to the home directory.
    """
    if skills_dir is None:
        return []
    items: list[object]
    if isinstance(skills_dir, str | os.PathLike):
        items = [skills_dir]
    elif isinstance(skills_dir, Sequence):
        items = list(cast(Sequence[object], skills_dir))
    else:
        raise UsageError(
            f"skills_dir must be a path or a list of paths, got {type(skills_dir).__name__}"
        )
    roots: list[str] = []
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise UsageError(f"skills_dir entries must be paths, got {type(item).__name__}")
        path = os.fspath(cast("str | os.PathLike[str]", item))
        roots.append(os.path.abspath(os.path.expanduser(path)))
    return roots


def scan_roots(roots: Iterable[str]) -> list[Candidate]:
    """Every ``SKILL.md`` under ``roots``, read and parsed, in walk order.

    Roots are walked with one shared set of visited directories, so a tree reachable from two
    roots (or twice from one) is read once. A root that is not a directory is logged and
    passed over.
    """
    visited: set[str] = set()
    found: list[Candidate] = []
    for root in roots:
        if not os.path.isdir(root):
            warn_stderr(f"skills dir not found: {root}")
            continue
        skill_files = [e for e in walk_files(root, visited) if e.name == SKILL_FILE]
        for entry in sorted(skill_files, key=by_depth_then_path):
            found.append(read_skill_file(entry.path))
    return found


def read_skill_file(path: str) -> Candidate:
    """Read and parse one ``SKILL.md``; any problem becomes a `Rejected` candidate."""
    try:
        data = _read_capped(path)
    except _Unreadable as exc:
        return _reject(path, "unreadable", str(exc))
    except OSError as exc:
        return _reject(path, "unreadable", exc.strerror or type(exc).__name__)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _reject(path, "unreadable", "not UTF-8 text")
    header = parse_frontmatter(text)
    if header.malformed:
        return _reject(
            path,
            "malformed-frontmatter",
            f"the frontmatter is not YAML: {header.yaml_error}",
            header.yaml_error,
        )
    name = header.fields.get("name", "")
    if not name:
        return _reject(path, "missing-name", "the frontmatter has no name")
    if has_control_chars(name):
        return _reject(path, "missing-name", "the name holds control characters")
    return SkillInfo(
        name=name,
        location=path,
        content=header.body,
        description=header.fields.get("description"),
        origin="fs",
    )


class _Unreadable(Exception):
    pass


def _read_capped(path: str) -> bytes:
    # Opened non-blocking and checked with fstat, so a FIFO or device named SKILL.md (or a link
    # to one) is refused instead of blocking the walk or streaming forever.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Unreadable("not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_SKILL_FILE_BYTES:
            chunk = os.read(fd, MAX_SKILL_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_SKILL_FILE_BYTES:
        raise _Unreadable(f"larger than {MAX_SKILL_FILE_BYTES} bytes")
    return data


def candidates_from_defs(defs: Iterable[SkillDef]) -> list[Candidate]:
    """Data skills as candidates: names and descriptions trimmed, the base defaulted."""
    found: list[Candidate] = []
    for d in defs:
        name = d.name.strip()
        if not name or has_control_chars(name):
            detail = "no name" if not name else "the name holds control characters"
            found.append(_reject(d.base or "skill://", "missing-name", detail))
            continue
        base = d.base or f"skill://{name}/"
        found.append(
            SkillInfo(
                name=name,
                location=base,
                content=d.content,
                description=None if d.description is None else d.description.strip(),
                origin="logical",
                resources=tuple(d.resources or ()),
                base=base,
            )
        )
    return found


def call_provider(provider: SkillProvider | None) -> object:
    """Call the provider once; what it returned (maybe an awaitable), or `PROVIDER_FAILED`.

    A provider that raises is isolated: logged as a warning, it contributes no skills.
    """
    if provider is None:
        return None
    if not callable(provider):
        raise UsageError("skill_provider must be a callable returning skill definitions")
    try:
        return provider()
    except Exception:
        log.warning("toolnexus: skill provider failed; its skills are left out", exc_info=True)
        return PROVIDER_FAILED


PROVIDER_FAILED = object()
"""What `call_provider` gives for a provider that raised."""


def provided_defs(produced: object) -> list[SkillDef]:
    """Check what the provider returned (already awaited): a list of skill definitions.

    Anything else is isolated like a raising provider: logged, and no skills come from it.
    """
    if produced is None or produced is PROVIDER_FAILED:
        return []
    try:
        return [skill_def_of(item) for item in items_of(produced, "skill_provider's result")]
    except Exception:
        log.warning("toolnexus: skill provider failed; its skills are left out", exc_info=True)
        return []


async def resolve_provider(provider: SkillProvider | None) -> list[SkillDef]:
    """Call the provider once (sync or async) and check what it returned."""
    produced: Any = call_provider(provider)
    if inspect.isawaitable(produced):
        try:
            produced = await produced
        except Exception:
            log.warning("toolnexus: skill provider failed; its skills are left out", exc_info=True)
            return []
    return provided_defs(produced)


def merge(candidates: Iterable[Candidate]) -> tuple[list[SkillInfo], list[Rejected]]:
    """Keep the first skill of each name; later ones become ``duplicate-name`` skips."""
    kept: dict[str, SkillInfo] = {}
    rejected: list[Rejected] = []
    for candidate in candidates:
        if isinstance(candidate, Rejected):
            rejected.append(candidate)
            continue
        first = kept.get(candidate.name)
        if first is not None:
            detail = f'duplicate skill name "{candidate.name}" ({candidate.location})'
            rejected.append(_reject(candidate.location, "duplicate-name", detail))
            continue
        kept[candidate.name] = candidate
    return list(kept.values()), rejected


def _reject(location: str, reason: SkillSkipReason, detail: str, yaml_error: str = "") -> Rejected:
    return Rejected(SkillSkip(location=location, reason=reason, detail=yaml_error), detail)
