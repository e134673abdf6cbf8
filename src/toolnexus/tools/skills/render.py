"""What the model sees: the ``skill`` tool, its output, and the skills prompt.

The texts here are pinned byte for byte by the contract (§3) and shared with the other
toolnexus ports, so a model moving between them reads the same thing.

The tool's output for a folder skill, lines joined with ``\\n``::

    <skill_content name="NAME">
    # Skill: NAME

    <SKILL.md body, trimmed>

    Base directory for this skill: file:///abs/dir
    Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.
    Note: file list is sampled.

    <skill_files>
    <file>/abs/dir/scripts/run.sh</file>
    </skill_files>
    </skill_content>

The ``<file>`` lines are joined into ONE line of the template, as in the other ports: with no
files that line is empty, so the block reads ``<skill_files>``, an empty line,
``</skill_files>``. A data skill shows its logical base and its ``resources`` instead of host
paths. The note and the block (with the empty line before them) are left out together when
there is nothing to sample: a data skill with no resources, or a sample limit of ``-1``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from .model import SkillInfo
from .walk import SKILL_FILE, by_path, walk_files

__all__ = [
    "DEFAULT_SAMPLE_LIMIT",
    "NO_SKILLS_PROMPT",
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_INPUT_SCHEMA",
    "SKILL_TOOL_DESCRIPTION",
    "render_skill",
    "render_skills_prompt",
    "sample_files",
    "skill_tool",
]

SKILL_TOOL_DESCRIPTION = (
    "Load a specialized skill when the task at hand matches one of the skills listed in the "
    "system prompt.\n\n"
    "Use this tool to inject the skill's instructions and resources into current conversation. "
    "The output may contain detailed workflow guidance as well as references to scripts, files, "
    "etc in the same directory as the skill.\n\n"
    "The skill name must match one of the skills listed in your system prompt."
)
"""The ``skill`` tool's description: three paragraphs separated by blank lines."""

SKILLS_PROMPT_PREAMBLE = (
    "Skills provide specialized instructions and workflows for specific tasks.\n"
    "Use the skill tool to load a skill when a task matches its description."
)
"""The first lines of the skills prompt when at least one skill has a description."""

NO_SKILLS_PROMPT = "No skills are currently available."
"""The skills prompt when a skill source was given but no skill has a description."""

SKILL_INPUT_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "The name of the skill to load"}},
    "required": ["name"],
    "additionalProperties": False,
}

DEFAULT_SAMPLE_LIMIT = 10
"""Sibling files listed when the sample limit is ``0``."""

_RELATIVE_NOTE = (
    "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory."
)


def render_skills_prompt(skills: Iterable[SkillInfo]) -> str:
    """The skills section of the system prompt for a configured skill source.

    Described skills (a ``""`` description counts) are listed by name (code point order); a
    skill without one is loadable but not listed. With none described the result is
    ``NO_SKILLS_PROMPT``.
    """
    described = sorted((s for s in skills if s.description is not None), key=lambda s: s.name)
    if not described:
        return NO_SKILLS_PROMPT
    lines = [f"- **{s.name}**: {s.description}" for s in described]
    return SKILLS_PROMPT_PREAMBLE + "\n\n## Available Skills\n" + "\n".join(lines)


def sample_files(directory: str, limit: int) -> list[str]:
    """Up to ``limit`` files under ``directory`` (recursive, links followed), absolute.

    Every file is collected first and sorted by its ``/``-separated relative path in code-point
    order, then capped (so ``a-c`` comes before ``a/b``). Any file named ``SKILL.md`` is left
    out, as are dangling links and non-regular files.
    """
    if limit <= 0:
        return []
    files = [e for e in walk_files(directory) if e.regular and e.name != SKILL_FILE]
    return [e.path for e in sorted(files, key=by_path)[:limit]]


def render_skill(skill: SkillInfo, files: Sequence[str] | None) -> str:
    """The ``skill`` tool's output for ``skill``.

    Args:
        skill: the skill to render.
        files: the paths (or logical resource names) for the ``<skill_files>`` block, or
            ``None`` to leave out the note and the block.
    """
    lines = [
        f'<skill_content name="{skill.name}">',
        f"# Skill: {skill.name}",
        "",
        skill.content.strip(),
        "",
        f"Base directory for this skill: {_base_of(skill)}",
        _RELATIVE_NOTE,
    ]
    if files is not None:
        lines += [
            "Note: file list is sampled.",
            "",
            "<skill_files>",
            "\n".join(f"<file>{f}</file>" for f in files),
            "</skill_files>",
        ]
    lines.append("</skill_content>")
    return "\n".join(lines)


def skill_tool(skills: Sequence[SkillInfo], sample_limit: int = 0) -> Tool:
    """The one ``skill`` tool over ``skills`` (``source="skill"``).

    Args:
        skills: the loadable skills, already deduplicated and filtered.
        sample_limit: files listed per skill: ``0`` ⇒ 10, ``n > 0`` ⇒ at most ``n``, ``-1`` ⇒
            no ``<skill_files>`` block.
    """
    by_name: Mapping[str, SkillInfo] = {s.name: s for s in skills}
    limit = DEFAULT_SAMPLE_LIMIT if sample_limit == 0 else sample_limit

    async def execute(args: Mapping[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        del ctx
        name = args.get("name", "")
        name = name if isinstance(name, str) else str(name)
        skill = by_name.get(name)
        if skill is None:
            available = ", ".join(sorted(by_name)) or "none"
            return ToolResult(f'Skill "{name}" not found. Available skills: {available}', True)
        return ToolResult(
            render_skill(skill, _files_of(skill, limit)),
            metadata={"name": skill.name, "dir": _dir_of(skill)},
        )

    return Tool(
        name="skill",
        description=SKILL_TOOL_DESCRIPTION,
        input_schema=copy.deepcopy(SKILL_INPUT_SCHEMA),
        source="skill",
        execute=execute,
    )


def _files_of(skill: SkillInfo, limit: int) -> list[str] | None:
    if limit < 0:
        return None
    if skill.base is not None:
        resources = list(skill.resources or ())
        return resources[:limit] if resources else None
    return sample_files(_dir_of(skill), limit)


def _dir_of(skill: SkillInfo) -> str:
    return skill.base if skill.base is not None else os.path.dirname(skill.location)


def _base_of(skill: SkillInfo) -> str:
    return skill.base if skill.base is not None else Path(_dir_of(skill)).as_uri()
