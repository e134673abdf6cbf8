"""``git`` under a bash allowlist: the rules that keep it from running other programs.

Allowing ``git`` must not allow everything git can start: ``git -c alias.x='!cmd' x``,
``-c core.fsmonitor=cmd``, ``--upload-pack=cmd``, ``rebase --exec cmd`` (or its abbreviation
``--exe``), ``grep -O cmd``, ``submodule foreach cmd``, a hook, or a configuration the model
wrote (``git log --format=… --output=.git/config``, then ``git status``). Option-by-option
refusal alone cannot be proved complete, so the defence has three layers, each closing a class:

1. **What may be typed** (`check_git_words`): only the subcommands in `GIT_SUBCOMMANDS`
   (local history work plus clone/fetch/pull/push/remote); a subcommand outside it (``config``,
   ``submodule``, ``bisect``, ``difftool``, ``filter-branch``, ``worktree``, ``help``, an alias,
   any ``git-<name>`` program on ``PATH``) is refused. No option may come before the
   subcommand except the harmless ones in `GIT_GLOBAL_OPTIONS` (so no ``-c``,
   ``--config-env``, ``--exec-path``, ``-C``, ``--git-dir``, ``--work-tree``, ``--bare``).
   After it, the options in `GIT_REFUSED_LONG` (``--output``, ``--upload-pack``,
   ``--receive-pack``, ``--exec``, ``--template``, ``--separate-git-dir``, ``--config``,
   ``--open-files-in-pager``, ``--unsafe-paths``, ``--recurse-submodules``…) are refused in
   every spelling git accepts: ``--name``, ``--name=value`` and any abbreviation of the name;
   so are the short forms in `GIT_REFUSED_SHORT` (``clone -c``/``-u``, ``ls-remote -u``,
   ``rebase -x``, ``grep -O``), also inside a cluster like ``-nO``, and a merge strategy
   (``-s``/``--strategy``) other than git's own.
2. **Where configuration comes from** (`git_environment`): git runs with no inherited
   ``GIT_*`` variable (so no ``GIT_SSH_COMMAND``, ``GIT_CONFIG_*``, ``GIT_EXEC_PATH``,
   ``GIT_DIR``…; the four author/committer identity variables are kept), with
   ``GIT_CONFIG_NOSYSTEM=1`` and ``GIT_CONFIG_GLOBAL=/dev/null`` (system and user config are
   not read), no prompts, ``:`` as editor and ``cat`` as pager, ``GIT_CEILING_DIRECTORIES`` at
   the workspace's parent (no repository above the workspace is found), and, through
   ``GIT_CONFIG_COUNT`` (command-line scope, which beats the repository's own config),
   `GIT_OVERRIDES`: hooks off (``core.hooksPath=/dev/null``), ``core.fsmonitor=false``, no
   credential helper, the ``file`` and ``ext`` transports refused (a local push or fetch would
   start git in another repository, whose config the model could have written, without these
   overrides), and implicit bare repositories refused (``safe.bareRepository=explicit``).
3. **Who writes ``.git``**: in a workspace the file built-ins refuse every path under a
   ``.git`` directory (see `_confine`), and layer 1 refuses the git options that write
   configuration or files of the model's choosing. So the repository configuration git reads
   is the one the host put there.

What is *not* covered: a repository whose ``.git/config`` was hostile before the model
started (unpacked from an untrusted archive, say) may name filter, diff or merge drivers by
arbitrary names, which no fixed override reaches; and another allowlisted program that writes
files (``cp``, ``tee``, ``sed -i``, ``python``…) can rewrite ``.git/config``. For those, run
bash in the sandbox (``"bash": {"sandbox": True}``), where whatever git starts is confined too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ._output import BuiltinError

__all__ = [
    "GIT_GLOBAL_OPTIONS",
    "GIT_OVERRIDES",
    "GIT_REFUSED_LONG",
    "GIT_REFUSED_SHORT",
    "GIT_SUBCOMMANDS",
    "check_git_words",
    "git_environment",
]

GIT_SUBCOMMANDS = frozenset(
    {
        "add", "am", "apply", "blame", "branch", "cat-file", "check-ignore", "checkout",
        "cherry", "cherry-pick", "clean", "clone", "commit", "describe", "diff", "diff-files",
        "diff-index", "diff-tree", "fetch", "for-each-ref", "format-patch", "fsck", "grep",
        "init", "log", "ls-files", "ls-remote", "ls-tree", "merge", "merge-base", "mv",
        "name-rev", "notes", "pull", "push", "range-diff", "rebase", "reflog", "remote",
        "reset", "restore", "revert", "rev-list", "rev-parse", "rm", "shortlog", "show",
        "show-ref", "stash", "status", "switch", "tag", "version", "whatchanged",
    }
)  # fmt: skip
"""The subcommands an allowlisted ``git`` may run."""

GIT_GLOBAL_OPTIONS = frozenset(
    {
        "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
        "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--version",
    }
)  # fmt: skip
"""The only options allowed before the subcommand."""

GIT_REFUSED_LONG = (
    "output",
    "upload-pack",
    "receive-pack",
    "exec",
    "template",
    "separate-git-dir",
    "config",
    "config-env",
    "open-files-in-pager",
    "unsafe-paths",
    "recurse-submodules",
    "recursive",
)
"""Long options refused after any subcommand, in every abbreviation."""

GIT_REFUSED_SHORT: Mapping[str, str] = {
    "clone": "cu",
    "ls-remote": "u",
    "rebase": "x",
    "grep": "O",
}
"""Short options refused per subcommand (also inside a cluster such as ``-nO``)."""

_STRATEGY_COMMANDS = frozenset({"merge", "pull", "rebase", "cherry-pick", "revert"})
_STRATEGIES = frozenset({"ort", "recursive", "resolve", "octopus", "ours", "subtree"})

GIT_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("credential.helper", ""),
    ("protocol.file.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("safe.bareRepository", "explicit"),
)
"""Settings given to every allowlisted run in command-line scope (``GIT_CONFIG_COUNT``)."""

_KEPT_GIT_VARIABLES = frozenset(
    {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"}
)
_DROPPED = frozenset({"SSH_ASKPASS", "PAGER", "EDITOR", "VISUAL"})


def check_git_words(words: Sequence[str]) -> None:
    """Refuse a ``git`` command line (``words[0]`` is ``git``) that could run another program
    or write git's configuration. Raises `BuiltinError` naming what was refused."""
    rest = list(words[1:])
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option not in GIT_GLOBAL_OPTIONS:
            raise BuiltinError(
                f"git option {option!r} is not allowed here (before the subcommand only "
                f"{', '.join(sorted(GIT_GLOBAL_OPTIONS))} are): it can point git at other "
                "configuration, repositories or programs"
            )
    if not rest:
        return
    sub, args = rest[0], rest[1:]
    if sub not in GIT_SUBCOMMANDS:
        raise BuiltinError(
            f"git {sub!r} is not allowed here (allowed subcommands: "
            f"{', '.join(sorted(GIT_SUBCOMMANDS))})"
        )
    short = GIT_REFUSED_SHORT.get(sub, "")
    for i, word in enumerate(args):
        if word.startswith("--") and len(word) > 2:
            name = word[2:].split("=", 1)[0]
            if any(refused.startswith(name) for refused in GIT_REFUSED_LONG):
                raise BuiltinError(
                    f"git {sub}: option {word.split('=', 1)[0]!r} is not allowed here (it "
                    "runs a program or writes files or configuration of its choosing)"
                )
        elif word.startswith("-") and len(word) > 1 and word != "-":
            hit = next((c for c in word[1:] if c in short), None)
            if hit is not None:
                raise BuiltinError(f"git {sub}: option -{hit} is not allowed here")
        if sub in _STRATEGY_COMMANDS:
            _check_strategy(sub, word, args[i + 1] if i + 1 < len(args) else None)


def _check_strategy(sub: str, word: str, following: str | None) -> None:
    value: str | None = None
    if word in ("-s", "--strategy"):
        value = following
    elif word.startswith("--strategy="):
        value = word.split("=", 1)[1]
    elif word.startswith("-s") and not word.startswith("--"):
        value = word[2:]
    if value is not None and value not in _STRATEGIES:
        raise BuiltinError(
            f"git {sub}: merge strategy {value!r} is not allowed here (allowed: "
            f"{', '.join(sorted(_STRATEGIES))})"
        )


def git_environment(base: Mapping[str, str], workspace: Path | None) -> dict[str, str]:
    """The environment of an allowlisted command: ``base`` without ``GIT_*`` (identity kept),
    with git's system and user config off and `GIT_OVERRIDES` in command-line scope."""
    env = {
        k: v
        for k, v in base.items()
        if (not k.startswith("GIT_") or k in _KEPT_GIT_VARIABLES) and k not in _DROPPED
    }
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_PROTOCOL_FROM_USER="0",
        GIT_EDITOR=":",
        GIT_SEQUENCE_EDITOR=":",
        GIT_PAGER="cat",
        GIT_CONFIG_COUNT=str(len(GIT_OVERRIDES)),
    )
    for i, (key, value) in enumerate(GIT_OVERRIDES):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    if workspace is not None:
        env["GIT_CEILING_DIRECTORIES"] = str(workspace.parent)
    return env
