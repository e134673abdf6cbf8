"""The data of the skill source: what a skill is, what was skipped and why.

A skill comes either from a folder (a ``SKILL.md`` file found on disk) or from data (a
`SkillDef` handed over by the host, directly or through a provider). Both end up as a
`SkillInfo`; a candidate that cannot become one is reported as a `SkillSkip`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast

from ...errors import UsageError
from .._shims import SelfAwaitable

__all__ = [
    "SkillDef",
    "SkillDefLike",
    "SkillInfo",
    "SkillInventory",
    "SkillOrigin",
    "SkillProvider",
    "SkillSkip",
    "SkillSkipReason",
    "has_control_chars",
    "items_of",
    "skill_def_of",
]

SkillSkipReason: TypeAlias = Literal[
    "missing-name", "malformed-frontmatter", "duplicate-name", "unreadable"
]
"""Why a candidate did not become a skill."""


@dataclass(frozen=True, slots=True)
class SkillDef:
    """A skill supplied as data rather than found on disk.

    Attributes:
        name: the skill's name (required; the model loads the skill by it).
        content: the instructions handed to the model when the skill is loaded.
        description: one line for the system prompt; a skill without one is loadable but not
            listed there.
        resources: logical names listed in the ``<skill_files>`` block (never host paths).
        base: the logical base shown to the model; ``skill://<name>/`` when omitted.

    Example::

        SkillDef(name="tone", description="House writing style", content="Write plainly.")
    """

    name: str
    content: str
    description: str | None = None
    resources: Sequence[str] | None = None
    base: str | None = None


SkillDefLike: TypeAlias = SkillDef | Mapping[str, Any]
"""A `SkillDef`, or a plain dict with the same keys."""

SkillProvider: TypeAlias = Callable[[], Iterable[SkillDefLike] | Awaitable[Iterable[SkillDefLike]]]
"""A zero-argument callable, sync or async, returning data skills. Called once, at build."""


SkillOrigin: TypeAlias = Literal["fs", "logical"]
"""Where a skill came from: a ``SKILL.md`` on disk, or data (a logical base)."""


@dataclass(frozen=True, slots=True)
class SkillInfo:
    """One usable skill.

    The positional order is ``(name, location, content, description, origin, resources,
    base)``, as in the toolnexus package; keyword construction works too.

    Attributes:
        name: the trimmed name from the frontmatter (or the `SkillDef`).
        location: the absolute path to the ``SKILL.md`` file (as reached, links not
            resolved); for a data skill, its logical base.
        content: the body after the frontmatter, untrimmed.
        description: the trimmed description; ``""`` when the header says ``description:
            ""``, ``None`` when there is none.
        origin: ``"fs"`` for a folder skill, ``"logical"`` for a data skill.
        resources: a data skill's logical resource names; ``None`` for a folder skill.
        base: a data skill's logical base (``skill://<name>/`` by default); ``None`` for a
            folder skill.
    """

    name: str
    location: str
    content: str
    description: str | None = None
    origin: SkillOrigin = "fs"
    resources: tuple[str, ...] | None = None
    base: str | None = None

    @property
    def is_data(self) -> bool:
        """True for a skill supplied as data (it has a logical base, not a folder)."""
        return self.base is not None


@dataclass(frozen=True, slots=True)
class SkillSkip:
    """A candidate that did not become a skill.

    Attributes:
        location: the ``SKILL.md`` path, or a data skill's logical base.
        reason: ``missing-name`` (no usable name, or a header that is never closed),
            ``malformed-frontmatter`` (YAML refused the header and no name could be read
            from it line by line), ``duplicate-name`` (an earlier skill has the name) or
            ``unreadable`` (not a regular file, not UTF-8, too large, or an I/O error).
        detail: the YAML parser's own message (newlines as spaces) when YAML refused the
            header; ``""`` otherwise.
    """

    location: str
    reason: SkillSkipReason
    detail: str = ""


@dataclass(frozen=True, slots=True)
class SkillInventory(SelfAwaitable):
    """What `list_skills` found: the usable skills and the skipped candidates, unfiltered.

    Awaiting it gives the inventory itself, so ``await list_skills(...)`` keeps working.
    """

    skills: list[SkillInfo] = field(default_factory=list[SkillInfo])
    skipped: list[SkillSkip] = field(default_factory=list[SkillSkip])


_DEF_KEYS = frozenset({"name", "content", "description", "resources", "base"})


def skill_def_of(value: object) -> SkillDef:
    """``value`` as a checked `SkillDef`; a dict is converted.

    Raises:
        UsageError: ``value`` is neither a `SkillDef` nor a mapping, has unknown keys, or a
            field of the wrong type.
    """
    if isinstance(value, SkillDef):
        d = value
    elif isinstance(value, Mapping):
        raw = cast(Mapping[Any, Any], value)
        unknown = sorted(str(k) for k in raw if k not in _DEF_KEYS)
        if unknown:
            raise UsageError(f"skill definition: unknown key(s) {', '.join(unknown)}")
        d = SkillDef(
            name=raw.get("name", ""),
            content=raw.get("content", ""),
            description=raw.get("description"),
            resources=raw.get("resources"),
            base=raw.get("base"),
        )
    else:
        raise UsageError(
            f"skill definition: expected a SkillDef or a dict, got {type(value).__name__}"
        )
    _check_def(d)
    return d


def _check_def(d: SkillDef) -> None:
    for label, field_value, optional in (
        ("name", d.name, False),
        ("content", d.content, False),
        ("description", d.description, True),
        ("base", d.base, True),
    ):
        if not isinstance(field_value, str) and not (optional and field_value is None):
            raise UsageError(
                f"skill definition: {label} must be a string, got {type(field_value).__name__}"
            )
    if d.resources is None:
        return
    resources = items_of(d.resources, "skill definition: resources")
    if not all(isinstance(r, str) for r in resources):
        raise UsageError("skill definition: resources must be a list of strings")


def items_of(value: object, what: str) -> list[object]:
    """``value`` as a list, refusing the look-alikes (a string, a dict, one `SkillDef`).

    Raises:
        UsageError: ``value`` is not a list-like collection; ``what`` names it.
    """
    kind = type(value).__name__
    if isinstance(value, str | bytes | Mapping | SkillDef) or not isinstance(value, Iterable):
        raise UsageError(f"{what} must be a list, got {kind}")
    return list(cast(Iterable[object], value))


def has_control_chars(text: str) -> bool:
    """True when ``text`` holds a C0/C1 control character (newline and tab included).

    Such a name would break the one-line-per-skill prompt list and the tool output header, so
    it does not count as a usable name.
    """
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)
