"""Running ``bash`` commands in a bubblewrap sandbox: ``"bash": {"sandbox": ...}``.

::

    await create_toolkit(builtins={
        "workspace": "/srv/job-42",
        "bash": {"sandbox": True},            # or a dict of the settings below
    })
    "sandbox": {"network": False, "memory_mb": 2048, "processes": 512, "timeout": 120,
                "ro_paths": ["/opt/tools"]}

Each command runs under ``bwrap`` (Debian package ``bubblewrap``) in fresh user, PID, IPC, UTS
and cgroup namespaces and, unless ``network`` is true, a fresh network namespace (only its own
loopback: the host's loopback services, the LAN and the internet are unreachable). What the
command sees:

- the workspace, read-write, at its own path (the only writable host directory);
- ``/usr``, ``/bin``, ``/sbin``, ``/lib*`` and ``/etc`` read-only, plus each ``ro_paths``
  entry read-only; nothing else of the host (no ``/home``, ``/root``, ``/srv``, ``/work``…);
- a private ``/tmp`` (a tmpfs, also ``HOME``), a minimal ``/dev`` and its own ``/proc``;
- an environment of ``PATH``, ``HOME``, ``TMPDIR`` and ``LANG`` only: the host's variables,
  API keys included, do not reach it.

All capabilities are dropped (``--cap-drop ALL``): running as root, the sandboxed process is
root only in name and cannot remount the read-only tree. (Without it a root host's command
*could* ``mount -o remount,rw`` its way out; bubblewrap's ``--unshare-user`` alone does not
stop that.) Limits: the whole tree is killed at the call's timeout (capped at ``timeout``
seconds when set) — killing ``bwrap`` ends its PID namespace and everything in it, including
processes that called ``setsid``; address space is capped at ``memory_mb`` and the number of
processes at ``processes`` (through ``prlimit``; the kernel does not apply the process limit to
real root, so there only the timeout bounds a fork bomb); output is capped by
``max_output_bytes`` as for every built-in.

When the sandbox is asked for, it is checked when the toolkit is made: a missing ``bwrap`` or
``prlimit``, or a kernel that refuses the namespaces, is a `UsageError` then — never a silent
run outside the sandbox. Requirements: Linux, bubblewrap ≥ 0.5, and unprivileged user
namespaces (``kernel.unprivileged_userns_clone=1`` where that switch exists) or root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ...errors import UsageError

__all__ = ["SANDBOX_KEYS", "SandboxPolicy", "parse_sandbox", "sandbox_argv", "sandbox_env"]

SANDBOX_KEYS = ("memory_mb", "network", "processes", "ro_paths", "timeout")

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_PROBE_TIMEOUT = 20.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxPolicy:
    """How ``bash`` commands are sandboxed.

    Attributes:
        bwrap: the ``bwrap`` program found when the toolkit was made.
        prlimit: the ``prlimit`` program (applies the limits inside the sandbox).
        network: ``True`` keeps the host's network; by default there is none.
        memory_mb: address-space limit per process, in MiB (``None``: no limit).
        processes: limit on processes of the user (``None``: no limit; not applied to root).
        timeout: the longest a command may run, in seconds; caps the model's ``timeout``.
        ro_paths: more host paths shown read-only at the same place.
    """

    bwrap: str
    prlimit: str
    network: bool = False
    memory_mb: int | None = 2048
    processes: int | None = 512
    timeout: float | None = None
    ro_paths: tuple[str, ...] = ()


def parse_sandbox(value: Any, workspace: Path | None) -> SandboxPolicy | None:
    """The ``bash.sandbox`` option: ``False``/absent (none), ``True`` (defaults) or a dict.

    Raises:
        UsageError: a bad setting, no workspace, or a sandbox that cannot run here.
    """
    if value is None or value is False:
        return None
    if value is True:
        spec: Mapping[str, Any] = {}
    elif isinstance(value, Mapping):
        spec = cast(Mapping[str, Any], value)
    else:
        raise UsageError("builtins: bash.sandbox must be true, false or a dict of settings")
    unknown = sorted(str(k) for k in spec if k not in SANDBOX_KEYS)
    if unknown:
        raise UsageError(
            f"builtins: unknown bash.sandbox setting(s) {', '.join(unknown)} "
            f"(known: {', '.join(SANDBOX_KEYS)})"
        )
    if workspace is None:
        raise UsageError(
            'builtins: bash.sandbox needs a workspace (builtins={"workspace": "/some/dir", ...}):'
            " it is the only host directory the sandbox can write"
        )
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise UsageError(
            "builtins: bash.sandbox needs bubblewrap, and no bwrap program is on PATH (Debian "
            "and Ubuntu: apt-get install bubblewrap); refusing to run bash unsandboxed"
        )
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        raise UsageError("builtins: bash.sandbox needs prlimit (util-linux) to apply its limits")
    policy = SandboxPolicy(
        bwrap=bwrap,
        prlimit=prlimit,
        network=_flag(spec, "network", False),
        memory_mb=_limit(spec, "memory_mb", 2048),
        processes=_limit(spec, "processes", 512),
        timeout=_seconds(spec.get("timeout")),
        ro_paths=_ro_paths(spec.get("ro_paths", ())),
    )
    problem = _probe(bwrap, prlimit, policy.network, str(workspace))
    if problem is not None:
        raise UsageError(f"builtins: bash.sandbox cannot start here: {problem}")
    return policy


def sandbox_argv(
    policy: SandboxPolicy, workspace: Path, cwd: Path | None, argv: Sequence[str]
) -> list[str]:
    """The ``bwrap … -- prlimit … -- argv`` command line for one call."""
    limits: list[str] = []
    if policy.memory_mb is not None:
        limits.append(f"--as={policy.memory_mb * 1024 * 1024}")
    if policy.processes is not None:
        limits.append(f"--nproc={policy.processes}")
    return [
        *_frame(policy.bwrap, policy.network, str(workspace), policy.ro_paths),
        "--chdir",
        str(cwd if cwd is not None else workspace),
        "--",
        policy.prlimit,
        *limits,
        "--",
        *argv,
    ]


def sandbox_env(host: Mapping[str, str]) -> dict[str, str]:
    """The whole environment a sandboxed command starts with (nothing else of the host's)."""
    path = ":".join(p for p in host.get("PATH", "").split(":") if os.path.isabs(p))
    return {
        "PATH": path or "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": host.get("LANG", "C.UTF-8"),
    }


def _frame(bwrap: str, network: bool, workspace: str, ro_paths: Sequence[str]) -> list[str]:
    args = [
        bwrap,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
    ]
    if not network:
        args.append("--unshare-net")
    for directory in _SYSTEM_DIRS:
        if os.path.islink(directory):
            args += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            args += ["--ro-bind", directory, directory]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in ro_paths:
        args += ["--ro-bind-try", path, path]
    args += ["--bind", workspace, workspace]
    return args


_PROBED: set[tuple[str, str, bool, str]] = set()


def _probe(bwrap: str, prlimit: str, network: bool, workspace: str) -> str | None:
    """Why a sandbox cannot start here, or ``None``; a success is remembered per setup
    (a failure is not, so a host that was fixed is seen at once)."""
    key = (bwrap, prlimit, network, workspace)
    if key in _PROBED:
        return None
    problem = _probe_run(bwrap, prlimit, network, workspace)
    if problem is None:
        _PROBED.add(key)
    return problem


def _probe_run(bwrap: str, prlimit: str, network: bool, workspace: str) -> str | None:
    argv = [*_frame(bwrap, network, workspace, ()), "--", prlimit, "--", "true"]
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
            env=sandbox_env(os.environ),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} did not run ({exc})"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        return (
            f"{detail} (bubblewrap needs user namespaces: as a non-root user, enable "
            "unprivileged user namespaces, e.g. sysctl kernel.unprivileged_userns_clone=1; in "
            "a container, allow unshare/clone of namespaces)"
        )
    return None


def _flag(spec: Mapping[str, Any], key: str, default: bool) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise UsageError(f"builtins: bash.sandbox.{key} must be true or false")
    return value


def _limit(spec: Mapping[str, Any], key: str, default: int) -> int | None:
    value = spec.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"builtins: bash.sandbox.{key} must be a positive whole number or None")
    return value


def _seconds(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UsageError("builtins: bash.sandbox.timeout must be a positive number of seconds")
    return float(value)


def _ro_paths(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise UsageError("builtins: bash.sandbox.ro_paths must be a list of absolute paths")
    paths: list[str] = []
    for item in cast(Sequence[Any], value):
        if not isinstance(item, str | os.PathLike) or not os.path.isabs(os.fspath(item)):
            raise UsageError(f"builtins: bash.sandbox.ro_paths entry {item!r} is not absolute")
        paths.append(os.path.normpath(os.fspath(cast(str, item))))
    return tuple(paths)
