"""Agent skills: ``SKILL.md`` folders (and skills given as data) behind one ``skill`` tool.

A skill is a folder holding a ``SKILL.md``: YAML frontmatter (``name`` required,
``description`` optional) over Markdown instructions, next to any scripts or references the
instructions mention. The model sees a short catalog in the system prompt (`SkillSource.prompt`)
and loads a skill's full instructions on demand through the ``skill`` tool (progressive
disclosure)::

    source = load_skills("./skills")        # sync; ``await load_skills(...)`` works too
    tools = [source.tool]
    system = "You are helpful.\\n\\n" + source.prompt()

The parts: `walk` (the symlink-following, cycle-safe, sorted walk), `frontmatter` (the YAML
header), `model` (the data types), `discovery` (candidates and dedupe), `render` (the pinned
texts: tool output and prompt) and `source` (`load_skills`, `list_skills`).
"""

from __future__ import annotations

from .discovery import MAX_SKILL_FILE_BYTES
from .model import (
    SkillDef,
    SkillDefLike,
    SkillInfo,
    SkillInventory,
    SkillOrigin,
    SkillProvider,
    SkillSkip,
    SkillSkipReason,
)
from .render import NO_SKILLS_PROMPT, SKILL_TOOL_DESCRIPTION, SKILLS_PROMPT_PREAMBLE
from .source import SkillsDir, SkillSource, list_skills, load_skill_source, load_skills

__all__ = [
    "MAX_SKILL_FILE_BYTES",
    "NO_SKILLS_PROMPT",
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_TOOL_DESCRIPTION",
    "SkillDef",
    "SkillDefLike",
    "SkillInfo",
    "SkillInventory",
    "SkillOrigin",
    "SkillProvider",
    "SkillSkip",
    "SkillSkipReason",
    "SkillSource",
    "SkillsDir",
    "list_skills",
    "load_skill_source",
    "load_skills",
]
