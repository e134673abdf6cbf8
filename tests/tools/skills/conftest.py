"""Fixtures for the skill source: real SKILL.md folders written into ``tmp_path``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

WriteSkill = Callable[..., Path]


def skill_text(name: str | None, description: str | None = None, body: str = "Body.\n") -> str:
    """A SKILL.md with a frontmatter of ``name`` and ``description`` (each left out if None)."""
    header = ["---"]
    if name is not None:
        header.append(f"name: {name}")
    if description is not None:
        header.append(f"description: {description}")
    header.append("---")
    return "\n".join(header) + "\n" + body


@pytest.fixture
def write_skill() -> WriteSkill:
    """``write_skill(folder, name, description=None, body="Body.\\n", raw=None)``.

    Creates ``folder`` and writes ``folder/SKILL.md`` (``raw`` verbatim when given), returning
    the SKILL.md path.
    """

    def write(
        folder: Path,
        name: str | None = None,
        description: str | None = None,
        body: str = "Body.\n",
        *,
        raw: str | bytes | None = None,
    ) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "SKILL.md"
        if isinstance(raw, bytes):
            target.write_bytes(raw)
        else:
            text = raw if raw is not None else skill_text(name, description, body)
            target.write_bytes(text.encode())
        return target

    return write
