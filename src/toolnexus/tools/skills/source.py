"""`load_skills` and `list_skills`: the skill source as the toolkit and the host see it.

::

    source = load_skills("./skills", filter={"pdf-tools": True})
    source.tool       # the one `skill` tool
    source.prompt()   # the skills section of the system prompt
    source.skills     # {name: SkillInfo} of every loadable skill, in discovery order
    source.skipped    # every refused candidate, with its reason

Both are synchronous, with the toolnexus package's signatures (a positional ``dirs``), and
their results can also be awaited (``await load_skills(...)`` gives the same object), so
older async callers keep working. Ours' keyword spellings stay as aliases: ``skills_dir`` for
``dirs``, ``skills_filter`` for ``filter``, plus ``disable_skills`` and ``skill_provider``.
A provider here must be synchronous; `create_toolkit` (through `load_skill_source`) also
awaits an async one.

The steps, in order: discover candidates (folders, then ``skills``, then ``skill_provider``),
keep the first skill of each name, apply the filter and ``disable_skills``, then build the
tool and the prompt from what is left, so the two always agree.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from ..._types import Tool
from ...errors import UsageError
from .._shims import SelfAwaitable, warn_stderr
from .discovery import (
    Candidate,
    Rejected,
    call_provider,
    candidates_from_defs,
    merge,
    provided_defs,
    resolve_provider,
    roots_of,
    scan_roots,
)
from .model import (
    SkillDef,
    SkillDefLike,
    SkillInfo,
    SkillInventory,
    SkillProvider,
    SkillSkip,
    items_of,
    skill_def_of,
)
from .render import render_skills_prompt, skill_tool

__all__ = [
    "SkillSource",
    "SkillsDir",
    "apply_skills_filter",
    "list_skills",
    "load_skill_source",
    "load_skills",
]

log = logging.getLogger("toolnexus")

SkillsDir: TypeAlias = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
"""One skills folder, or a list of them."""


@dataclass(frozen=True, slots=True)
class SkillSource(SelfAwaitable):
    """The loaded skill source.

    Attributes:
        skills: every loadable skill (deduplicated and filtered), keyed by name in discovery
            order.
        tool: the ``skill`` tool (always a tool; with no skill it lists none).
        skipped: every candidate refused (the records `list_skills` reports).
    """

    skills: dict[str, SkillInfo]
    tool: Tool
    skipped: list[SkillSkip] = field(default_factory=list[SkillSkip])

    def prompt(self) -> str:
        """The skills section of the system prompt.

        ``"No skills are currently available."`` when no skill has a description (a
        ``description: ""`` counts as one); otherwise the preamble, a blank line, ``## Available
        Skills`` and one ``- **name**: description`` line per described skill, sorted by name.
        A toolkit built with no skill source at all has ``skills_prompt() == ""`` instead.
        """
        return render_skills_prompt(self.skills.values())


def load_skills(
    dirs: SkillsDir | None = None,
    *,
    skills: Iterable[SkillDefLike] | None = None,
    filter: Mapping[str, bool] | None = None,
    sample_limit: int = 0,
    skills_dir: SkillsDir | None = None,
    skills_filter: Mapping[str, bool] | None = None,
    disable_skills: Iterable[str] | None = None,
    skill_provider: SkillProvider | None = None,
) -> SkillSource:
    """Discover skills and build the ``skill`` tool and the skills prompt (synchronous).

    Files that cannot become skills are skipped (``source.skipped``) with a warning; a failing
    ``skill_provider`` is isolated the same way. Discovery never raises for what it finds on
    disk. ``await load_skills(...)`` also works and gives the same source.

    Args:
        dirs: folders searched recursively for ``SKILL.md`` (symlinks followed); one path or
            a list. ``skills_dir`` is the same option under ours' name.
        skills: data skills (`SkillDef` or dicts with the same keys).
        filter: ``{name: bool}``. Empty ⇒ every skill; any ``True`` ⇒ only the names marked
            ``True``; only ``False`` ⇒ every skill but those. Names that match no skill are
            warned about once. ``skills_filter`` is the same option under ours' name.
        sample_limit: files listed by the tool per skill: ``0`` ⇒ 10, ``n > 0`` ⇒ ``n``,
            ``-1`` ⇒ no ``<skill_files>`` block.
        disable_skills: names to drop; an explicit filter entry for the same name wins.
        skill_provider: a synchronous callable returning data skills; called once, now.

    Raises:
        UsageError: an argument of the wrong type, both spellings of one option, a
            ``sample_limit`` below ``-1``, or a ``skill_provider`` that returned an awaitable
            (async providers are for `create_toolkit`).

    Example::

        source = load_skills(["./skills", "~/.agent/skills"], sample_limit=5)
    """
    roots, rules = _prepare(dirs, skills_dir, filter, skills_filter, disable_skills, sample_limit)
    defs = _defs(skills)
    produced = call_provider(skill_provider)
    if inspect.isawaitable(produced):
        _discard(produced)
        raise UsageError(
            "load_skills: skill_provider returned an awaitable, but load_skills is synchronous; "
            "pass the async provider to create_toolkit(skill_provider=...), which awaits it"
        )
    return _build(
        scan_roots(roots) + defs + candidates_from_defs(provided_defs(produced)),
        rules,
        sample_limit,
    )


async def load_skill_source(
    skills_dir: SkillsDir | None = None,
    *,
    skills: Iterable[SkillDefLike] | None = None,
    skill_provider: SkillProvider | None = None,
    skills_filter: Mapping[str, bool] | None = None,
    disable_skills: Iterable[str] | None = None,
    sample_limit: int = 0,
) -> SkillSource | None:
    """The toolkit's loader: `load_skills`, but an async ``skill_provider`` is awaited, and
    ``None`` when no skill source was given at all (no folder, data skills or provider), so a
    toolkit without skills gets no ``skill`` tool and an empty skills prompt."""
    roots, rules = _prepare(skills_dir, None, skills_filter, None, disable_skills, sample_limit)
    defs = _defs(skills)
    if skills_dir is None and skills is None and skill_provider is None:
        return None
    provided = candidates_from_defs(await resolve_provider(skill_provider))
    return _build(scan_roots(roots) + defs + provided, rules, sample_limit)


def list_skills(
    dirs: SkillsDir | None = None,
    *,
    skills: Iterable[SkillDefLike] | None = None,
    skills_dir: SkillsDir | None = None,
    skill_provider: SkillProvider | None = None,
) -> SkillInventory:
    """Every skill the given sources hold, and every candidate skipped with its reason.

    The inventory is **unfiltered** (it is what a filter is written from), builds no tool and
    leaves nothing open. Skipped candidates are returned, not logged. Synchronous; awaiting
    the result also works.

    Example::

        inventory = list_skills("./skills")
        for skip in inventory.skipped:
            print(skip.location, skip.reason, skip.detail)
    """
    roots = roots_of(_one_of("dirs", dirs, "skills_dir", skills_dir))
    defs = _defs(skills)
    produced = call_provider(skill_provider)
    if inspect.isawaitable(produced):
        _discard(produced)
        raise UsageError(
            "list_skills: skill_provider returned an awaitable, but list_skills is synchronous"
        )
    candidates = scan_roots(roots) + defs + candidates_from_defs(provided_defs(produced))
    found, rejected = merge(candidates)
    return SkillInventory(skills=found, skipped=[r.skip for r in rejected])


def _build(
    candidates: list[Candidate], rules: Mapping[str, bool], sample_limit: int
) -> SkillSource:
    found, rejected = merge(candidates)
    _report(rejected)
    selected = apply_skills_filter(found, rules)
    return SkillSource(
        skills={s.name: s for s in selected},
        tool=skill_tool(selected, sample_limit),
        skipped=[r.skip for r in rejected],
    )


def _report(rejected: Iterable[Rejected]) -> None:
    for r in rejected:
        if r.skip.reason == "duplicate-name":
            warn_stderr(f"{r.detail} — keeping first")
        else:
            log.warning(
                "toolnexus: skill skipped (%s): %s: %s", r.skip.reason, r.skip.location, r.detail
            )


def _prepare(
    dirs: SkillsDir | None,
    skills_dir: SkillsDir | None,
    wanted: Mapping[str, bool] | None,
    skills_filter: Mapping[str, bool] | None,
    disable_skills: Iterable[str] | None,
    sample_limit: int,
) -> tuple[list[str], dict[str, bool]]:
    _check_sample_limit(sample_limit)
    roots = roots_of(_one_of("dirs", dirs, "skills_dir", skills_dir))
    rules = _filter_rules(_one_of("filter", wanted, "skills_filter", skills_filter), disable_skills)
    return roots, rules


def _one_of(name: str, value: Any, alias: str, alias_value: Any) -> Any:
    if value is not None and alias_value is not None:
        raise UsageError(f"give {name} or {alias}, not both (they are the same option)")
    return value if value is not None else alias_value


def _defs(skills: Iterable[SkillDefLike] | None) -> list[Candidate]:
    if skills is None:
        return []
    checked: list[SkillDef] = [skill_def_of(i) for i in items_of(skills, "skills")]
    return candidates_from_defs(checked)


def _discard(awaitable: object) -> None:
    close = getattr(awaitable, "close", None)  # a coroutine: no "never awaited" warning
    if callable(close):
        close()


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
