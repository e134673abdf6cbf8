"""`load_skills` and `list_skills`: the skill source as the toolkit and the host see it.

::

    source = await load_skills(skills_dir="./skills", skills_filter={"pdf-tools": True})
    source.tool       # the one `skill` tool (None when no skill source was given)
    source.prompt()   # the skills section of the system prompt
    source.skills     # the SkillInfo of every loadable skill

The steps, in order: discover candidates (folders, then ``skills``, then ``skill_provider``),
keep the first skill of each name, apply ``skills_filter`` and ``disable_skills``, then build
the tool and the prompt from what is left, so the two always agree.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, cast

from ..._types import Tool
from ...errors import UsageError
from .discovery import (
    Candidate,
    candidates_from_defs,
    merge,
    resolve_provider,
    roots_of,
    scan_roots,
)
from .model import (
    SkillDefLike,
    SkillInfo,
    SkillInventory,
    SkillProvider,
    items_of,
    skill_def_of,
)
from .render import render_skills_prompt, skill_tool

__all__ = ["SkillSource", "SkillsDir", "apply_skills_filter", "list_skills", "load_skills"]

log = logging.getLogger("toolnexus")

SkillsDir: TypeAlias = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
"""One skills folder, or a list of them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillSource:
    """The loaded skill source.

    Attributes:
        skills: every loadable skill (deduplicated and filtered), in discovery order.
        tool: the ``skill`` tool, or ``None`` when no skill source was given at all (no
            ``skills_dir``, ``skills`` or ``skill_provider``).
    """

    skills: list[SkillInfo] = field(default_factory=list[SkillInfo])
    tool: Tool | None = None

    def prompt(self) -> str:
        """The skills section of the system prompt.

        ``""`` with no skill source; ``"No skills are currently available."`` when there is a
        source but no skill with a description; otherwise the preamble, a blank line,
        ``## Available Skills`` and one ``- **name**: description`` line per described skill,
        sorted by name.
        """
        if self.tool is None:
            return ""
        return render_skills_prompt(self.skills)


async def load_skills(
    *,
    skills_dir: SkillsDir | None = None,
    skills: Iterable[SkillDefLike] | None = None,
    skill_provider: SkillProvider | None = None,
    skills_filter: Mapping[str, bool] | None = None,
    disable_skills: Iterable[str] | None = None,
    sample_limit: int = 0,
) -> SkillSource:
    """Discover skills and build the ``skill`` tool and the skills prompt.

    Files that cannot become skills are skipped with a warning on the ``toolnexus`` logger
    (`list_skills` reports them as data); a failing ``skill_provider`` is isolated the same
    way. Discovery never raises for what it finds on disk.

    Args:
        skills_dir: folders searched recursively for ``SKILL.md`` (symlinks followed).
        skills: data skills (`SkillDef` or dicts with the same keys).
        skill_provider: a callable, sync or async, returning data skills; called once, now.
        skills_filter: ``{name: bool}``. Empty ⇒ every skill; any ``True`` ⇒ only the names
            marked ``True``; only ``False`` ⇒ every skill but those. Names that match no
            skill are warned about once.
        disable_skills: names to drop; an explicit ``skills_filter`` entry for the same name
            wins.
        sample_limit: files listed by the tool per skill: ``0`` ⇒ 10, ``n > 0`` ⇒ ``n``,
            ``-1`` ⇒ no ``<skill_files>`` block.

    Raises:
        UsageError: an argument of the wrong type, or a ``sample_limit`` below ``-1``.

    Example::

        source = await load_skills(skills_dir=["./skills", "~/.agent/skills"], sample_limit=5)
    """
    _check_sample_limit(sample_limit)
    rules = _filter_rules(skills_filter, disable_skills)
    if skills_dir is None and skills is None and skill_provider is None:
        return SkillSource()
    found, rejected = merge(await _candidates(skills_dir, skills, skill_provider))
    for r in rejected:
        log.warning(
            "toolnexus: skill skipped (%s): %s: %s", r.skip.reason, r.skip.location, r.detail
        )
    selected = apply_skills_filter(found, rules)
    return SkillSource(skills=selected, tool=skill_tool(selected, sample_limit))


async def list_skills(
    *,
    skills_dir: SkillsDir | None = None,
    skills: Iterable[SkillDefLike] | None = None,
    skill_provider: SkillProvider | None = None,
) -> SkillInventory:
    """Every skill the given sources hold, and every candidate skipped with its reason.

    The inventory is **unfiltered** (it is what a ``skills_filter`` is written from), builds
    no tool and leaves nothing open. Skipped candidates are returned, not logged.

    Example::

        inventory = await list_skills(skills_dir="./skills")
        for skip in inventory.skipped:
            print(skip.location, skip.reason)
    """
    found, rejected = merge(await _candidates(skills_dir, skills, skill_provider))
    return SkillInventory(skills=found, skipped=[r.skip for r in rejected])


def apply_skills_filter(skills: Sequence[SkillInfo], rules: Mapping[str, bool]) -> list[SkillInfo]:
    """``skills`` narrowed by ``rules`` (``{name: keep}``), order kept.

    No rules ⇒ every skill; any ``True`` ⇒ an allowlist of the ``True`` names; only ``False``
    ⇒ a drop-list. Names matching no skill are logged once, in one warning.
    """
    if not rules:
        return list(skills)
    known = {s.name for s in skills}
    unknown = sorted(name for name in rules if name not in known)
    if unknown:
        log.warning(
            "toolnexus: skills_filter/disable_skills name(s) match no skill: %s",
            ", ".join(unknown),
        )
    if any(rules.values()):
        return [s for s in skills if rules.get(s.name, False)]
    return [s for s in skills if rules.get(s.name, True)]


async def _candidates(
    skills_dir: SkillsDir | None,
    skills: Iterable[SkillDefLike] | None,
    skill_provider: SkillProvider | None,
) -> list[Candidate]:
    roots = roots_of(skills_dir)
    defs = [] if skills is None else [skill_def_of(i) for i in items_of(skills, "skills")]
    provided = await resolve_provider(skill_provider)
    return scan_roots(roots) + candidates_from_defs(defs) + candidates_from_defs(provided)


def _filter_rules(
    skills_filter: Mapping[str, bool] | None, disable_skills: Iterable[str] | None
) -> dict[str, bool]:
    """One ``{name: keep}`` map: ``disable_skills`` as ``False``, overridden by the filter."""
    rules: dict[str, bool] = {}
    dropped = cast(object, disable_skills)
    if dropped is not None:
        names = [dropped] if isinstance(dropped, str) else items_of(dropped, "disable_skills")
        for name in names:
            if not isinstance(name, str):
                raise UsageError(f"disable_skills entries must be names, got {name!r}")
            rules[name] = False
    wanted = cast(object, skills_filter)
    if wanted is not None:
        if not isinstance(wanted, Mapping):
            raise UsageError("skills_filter must be a mapping of skill name to bool")
        for name, keep in cast(Mapping[object, object], wanted).items():
            if not isinstance(name, str):
                raise UsageError(f"skills_filter keys must be names, got {name!r}")
            rules[name] = bool(keep)
    return rules


def _check_sample_limit(sample_limit: object) -> None:
    if isinstance(sample_limit, bool) or not isinstance(sample_limit, int) or sample_limit < -1:
        raise UsageError(f"sample_limit must be -1, 0 or a positive int, got {sample_limit!r}")
