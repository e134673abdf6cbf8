"""``toolnexus.skill``: SKILL.md folders as a tool source, under the existing package's path.

A thin re-export: every name is the same object as ``toolnexus.<name>``.
"""

from .tools.skills import (
    SKILL_TOOL_DESCRIPTION,
    SKILLS_PROMPT_PREAMBLE,
    SkillDef,
    SkillInfo,
    SkillInventory,
    SkillProvider,
    SkillSkip,
    SkillSkipReason,
    SkillSource,
    list_skills,
    load_skills,
)

__all__ = [
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_TOOL_DESCRIPTION",
    "SkillDef",
    "SkillInfo",
    "SkillInventory",
    "SkillProvider",
    "SkillSkip",
    "SkillSkipReason",
    "SkillSource",
    "list_skills",
    "load_skills",
]
