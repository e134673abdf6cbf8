"""``git`` under a bash allowlist cannot run other programs (issue 10, item 1).

Every attempt below tries to make a real ``git`` run ``touch <marker>``, the marker lying
outside the workspace; the attempt held when the marker does not exist afterwards. On the old
code (git run as typed, with the host's environment) each of them created the marker.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from builtin_support import Builtin

from toolnexus._types import Tool


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "MARKER"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """``tmp_path/ws``: a git repository with two commits, the workspace of the tests."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "model@example.invalid")
    git(ws, "config", "user.name", "model")
    (ws / "a.txt").write_text("one\n")
    git(ws, "add", "a.txt")
    git(ws, "commit", "-qm", "first")
    (ws / "a.txt").write_text("two\n")
    git(ws, "commit", "-qam", "second")
    return ws


@pytest.fixture
def bash(builtin: Builtin, repo: Path) -> Tool:
    return builtin("bash", workspace=str(repo), bash={"allow": ["git"]})


def touch(marker: Path) -> str:
    return f"touch {marker}"


REFUSED_COMMANDS = [
    "git -c alias.x={bang} x",
    "git -c core.fsmonitor={shell} status",
    "git -c core.sshCommand={shell} fetch ssh://example.invalid/r",
    "git -c core.pager={shell} -p log",
    "git --config-env=core.fsmonitor=HOME status",
    "git --exec-path=/tmp status",
    "git -C / status",
    "git --git-dir=/tmp status",
    "git --work-tree=/ status",
    "git --bare status",
    "git --help",
    "git fetch --upload-pack={shell} .",
    "git fetch --upload-p={shell} .",
    "git ls-remote -u {shell} .",
    "git ls-remote --upload-pack={shell} .",
    "git push --receive-pack={shell} . HEAD:refs/heads/x",
    "git push --exec={shell} . HEAD:refs/heads/x",
    "git clone -u {shell} . copy",
    "git clone --upload-pack={shell} . copy",
    "git clone -c core.fsmonitor={shell} . copy",
    "git clone --config=core.fsmonitor={shell} . copy",
    "git clone --template=tpl . copy",
    "git init --separate-git-dir=meta sub",
    "git rebase --exec {shell} HEAD~1",
    "git rebase --exe={shell} HEAD~1",
    "git rebase -x {shell} HEAD~1",
    "git grep -O{shell} one",
    "git grep -nO{shell} one",
    "git grep --open-files-in-pager={shell} one",
    "git grep --open={shell} one",
    "git log -1 --format=x --output=.git/config",
    "git log -1 --format=x --outp=.git/config",
    "git apply --unsafe-paths patch.diff",
    "git merge -s ../../../usr/bin/x main",
    "git merge --strategy=evil main",
    "git config alias.x !true",
    "git config --file .git/config core.fsmonitor true",
    "git submodule foreach {shell}",
    "git bisect run {shell}",
    "git difftool -x {shell} HEAD~1",
    "git mergetool",
    "git filter-branch --tree-filter {shell} HEAD",
    "git worktree add ../elsewhere",
    "git help log",
    "git x",
    "git instaweb",
    "git send-email --smtp-server={shell} a.txt",
    "git archive --remote=. --exec={shell} HEAD",
]


@pytest.mark.parametrize("template", REFUSED_COMMANDS)
async def test_a_git_command_that_could_run_a_program_is_refused(
    bash: Tool, marker: Path, template: str
) -> None:
    shell = touch(marker)
    command = template.format(shell=shlex.quote(shell), bang=shlex.quote(f"!{shell}"))

    result = await bash.execute({"command": command})

    assert not marker.exists(), result.output
    assert result.is_error, result.output
    assert "not allowed" in result.output


async def test_ordinary_git_work_still_runs(bash: Tool, repo: Path) -> None:
    (repo / "b.txt").write_text("new\n")
    steps = [
        "git status --short",
        "git add b.txt",
        "git commit -q -m third",
        "git log --oneline -3",
        "git diff HEAD~1 --stat",
        "git grep -n one HEAD~2",
        "git --no-pager show --stat HEAD",
        "git branch feature",
        "git switch -q feature",
        "git merge -q -s ort main",
    ]
    outputs: list[str] = []
    for step in steps:
        result = await bash.execute({"command": step})
        assert not result.is_error, (step, result.output)
        outputs.append(result.output)
    assert "third" in outputs[3]
    assert "a.txt:1:one" in outputs[5]


async def test_hostile_git_variables_in_the_host_environment_do_not_reach_git(
    bash: Tool, repo: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell = touch(marker)
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", shell)
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'alias.st'='!{shell}'")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", shell)
    monkeypatch.setenv("GIT_SSH_COMMAND", shell)
    monkeypatch.setenv("GIT_PAGER", shell)
    monkeypatch.setenv("GIT_EDITOR", shell)
    (repo / "a.txt").write_text("three\n")

    for step in ["git status", "git diff", "git commit -q -a", "git fetch ssh://h.invalid/r"]:
        await bash.execute({"command": step})

    assert not marker.exists()


async def test_the_users_global_git_config_is_not_read(
    bash: Tool, tmp_path: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    hostile = f"[core]\n\tfsmonitor = {touch(marker)}\n\tpager = {touch(marker)}\n"
    (home / ".gitconfig").write_text(hostile)
    (home / ".config" / "git" / "config").write_text(hostile)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))

    result = await bash.execute({"command": "git status"})

    assert not result.is_error, result.output
    assert not marker.exists()


def executable(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


async def test_hooks_fsmonitor_and_pager_in_the_repository_config_do_not_run(
    bash: Tool, repo: Path, marker: Path
) -> None:
    shell = touch(marker)
    executable(repo / ".git" / "hooks" / "pre-commit", shell)
    executable(repo / "hooks" / "pre-commit", shell)
    git(repo, "config", "core.hooksPath", str(repo / "hooks"))
    git(repo, "config", "core.fsmonitor", shell)
    git(repo, "config", "core.pager", shell)
    (repo / "a.txt").write_text("three\n")

    for step in ["git status", "git -p log", "git --no-pager diff", "git commit -q -am x"]:
        await bash.execute({"command": step})

    assert not marker.exists()


async def test_the_ext_and_file_transports_are_refused_even_when_the_repository_allows_them(
    bash: Tool, repo: Path, tmp_path: Path, marker: Path
) -> None:
    other = tmp_path / "ws" / "other"
    git(repo, "init", "-q", "--bare", str(other))
    git(repo, "config", "protocol.ext.allow", "always")
    git(repo, "config", "protocol.file.allow", "always")
    git(repo, "remote", "add", "evil", f"ext::touch {marker}")
    git(repo, "remote", "add", "local", str(other))
    git(repo, "config", "remote.local.uploadpack", touch(marker))
    git(repo, "config", "remote.local.receivepack", touch(marker))
    executable(other / "hooks" / "pre-receive", touch(marker))

    results = [
        await bash.execute({"command": step})
        for step in ["git fetch evil", "git fetch local", "git push local HEAD:refs/heads/x"]
    ]

    assert all(r.is_error for r in results), [r.output for r in results]
    assert all("not allowed" in r.output for r in results), [r.output for r in results]
    assert not marker.exists()


async def test_an_implicit_bare_repository_in_the_workspace_is_not_used(
    bash: Tool, repo: Path, marker: Path
) -> None:
    meta = repo / "meta"
    git(repo, "init", "-q", "--bare", str(meta))
    with (meta / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = {touch(marker)}\n[alias]\n\tlog = !{touch(marker)}\n")

    result = await bash.execute({"command": "git log", "workdir": "meta"})

    assert result.is_error
    assert "bare" in result.output
    assert not marker.exists()


async def test_git_does_not_climb_out_of_the_workspace_to_a_parent_repository(
    builtin: Builtin, tmp_path: Path, marker: Path
) -> None:
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "core.fsmonitor", touch(marker))
    ws = tmp_path / "plain"
    ws.mkdir()
    bash = builtin("bash", workspace=str(ws), bash={"allow": ["git"]})

    result = await bash.execute({"command": "git status"})

    assert result.is_error
    assert "not a git repository" in result.output
    assert not marker.exists()


async def test_a_program_named_git_in_a_relative_path_entry_is_not_run(
    bash: Tool, repo: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executable(repo / "git", touch(marker))
    monkeypatch.setenv("PATH", f".:{os.environ['PATH']}")

    result = await bash.execute({"command": "git status --short"})

    assert not result.is_error, result.output
    assert not marker.exists()


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("write", {"path": ".git/config", "content": "[core]\n\tfsmonitor = x\n"}),
        ("write", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
        ("write", {"path": ".GIT/config", "content": "x"}),
        ("write", {"path": "sub/.git", "content": "gitdir: /elsewhere\n"}),
        ("write", {"path": "via_link/config", "content": "x"}),
        ("edit", {"path": ".git/config", "oldString": "[core]", "newString": "[alias]"}),
        ("edit", {"path": "via_link/config", "oldString": "[core]", "newString": "[alias]"}),
        (
            "apply_patch",
            {"patchText": "*** Begin Patch\n*** Add File: .git/info/x\n+x\n*** End Patch"},
        ),
        (
            "apply_patch",
            {
                "patchText": "*** Begin Patch\n*** Update File: a.txt\n*** Move to: "
                ".git/hooks/post-checkout\n@@\n-two\n+three\n*** End Patch"
            },
        ),
    ],
)
async def test_the_file_built_ins_cannot_write_into_git(
    builtin: Builtin, repo: Path, name: str, args: dict[str, object]
) -> None:
    (repo / "via_link").symlink_to(".git")
    before = (repo / ".git" / "config").read_bytes()
    tool = builtin(name, workspace=str(repo))

    result = await tool.execute(args)

    assert result.is_error, result.output
    assert "inside .git" in result.output
    assert (repo / ".git" / "config").read_bytes() == before
    assert not (repo / "sub").exists()
    assert (repo / "a.txt").read_text() == "two\n"


async def test_reading_git_metadata_stays_allowed(builtin: Builtin, repo: Path) -> None:
    read = builtin("read", workspace=str(repo))

    result = await read.execute({"path": ".git/HEAD"})

    assert result.output == "ref: refs/heads/main\n"
