"""Where a built-in's path argument points, and the optional workspace around it.

Without a workspace a path is used as given: a relative one resolves from the process cwd at
call time. With a workspace (``builtins={"workspace": "/srv/job-42"}``) every path-taking
built-in is confined to that root:

- a relative path resolves from the workspace; an absolute one must start with the
  workspace's real path (compared component by component, before anything is resolved);
- symlinks inside the workspace are followed *by us*, one component at a time, and must stay
  inside: ``../x``, ``/etc/passwd`` and a symlink pointing outside are all refused;
- nothing under a ``.git`` directory (any letter case) may be written: that directory holds the
  configuration and hooks that make ``git`` run programs (see `_git`).

**No check-then-use gap.** A path is never checked as a string and then opened as a string.
It is walked from a directory descriptor of the root, component by component, with
``os.open(name, O_DIRECTORY | O_NOFOLLOW, dir_fd=parent)``; the file itself is opened with
``O_NOFOLLOW`` relative to its parent's descriptor, and missing parents are made with
``mkdir(name, dir_fd=parent)``. ``..`` pops our own stack of descriptors (it never asks the
kernel), so it cannot climb out of the root. When a directory is swapped for a symlink by
another process between two steps, the no-follow open fails and the call fails closed with a
clear error; it never lands outside. (A process that can already write outside the workspace
could move a directory out while we hold it open; confining such a process is the sandbox's
job, see `_sandbox`.)

The directory walks of ``grep`` and ``glob`` use the same descriptors, never follow symlinks
(to files or directories) and skip ``.git`` and ``node_modules``, with or without a workspace.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from types import TracebackType

from ._output import BuiltinError

__all__ = ["SKIPPED_DIRS", "Located", "Paths", "open_beneath", "walk_files"]

SKIPPED_DIRS = frozenset({".git", "node_modules"})

_MAX_LINKS = 40
_GIT_REFUSAL = (
    "{raw}: writing inside .git is not allowed in a workspace (it holds the repository's "
    "configuration and hooks)"
)
_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_DIR_FLAGS = _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


class Located:
    """One entry ``name`` in a directory held open (``dir_fd``), beneath the root.

    Close it (or use it as a context manager). ``parts`` are the entry's components under the
    root with every symlink resolved, ``path`` the same as a path (for messages and ``cwd``).
    """

    __slots__ = ("_closed", "dir_fd", "made", "name", "parts", "raw", "root", "virtual")

    def __init__(
        self, raw: str, root: Path, dir_fd: int, name: str, parts: tuple[str, ...]
    ) -> None:
        self.raw = raw
        self.root = root
        self.dir_fd = dir_fd
        self.name = name
        self.parts = parts
        self.made: list[tuple[str, ...]] = []
        self.virtual = False
        """Some parent does not exist yet (``plan=True``): nothing is there to open."""
        self._closed = False

    @property
    def path(self) -> Path:
        """The entry as a path (the root joined with ``parts``)."""
        return self.root.joinpath(*self.parts)

    @property
    def key(self) -> str:
        """`path` as a string: the same for every spelling of the entry, and itself a path
        `Paths.locate` accepts."""
        return str(self.path)

    def lstat(self) -> os.stat_result | None:
        """The entry's own status (a symlink is not followed), or ``None`` when missing."""
        if self.virtual:
            return None
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def open(self, flags: int, mode: int = 0o666) -> int:
        """``os.open`` of the entry with ``O_NOFOLLOW``; errors as `BuiltinError`."""
        if self.virtual:
            raise BuiltinError(f"file not found: {self.raw}")
        try:
            return os.open(self.name, flags | _NO_FOLLOW, mode, dir_fd=self.dir_fd)
        except OSError as exc:
            raise _error(exc, self.raw) from None

    def open_regular(self, flags: int = os.O_RDONLY) -> int:
        """Open the entry, which must be a regular file (a FIFO never blocks the open)."""
        fd = self.open(flags | os.O_NONBLOCK)
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise BuiltinError(f"{self.raw} is a directory, not a file")
            if not stat.S_ISREG(mode):
                raise BuiltinError(f"{self.raw} is not a regular file")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_dir(self) -> int:
        """A readable descriptor of the entry, which must be a directory."""
        try:
            return os.open(self.name, os.O_RDONLY | os.O_DIRECTORY | _NO_FOLLOW, dir_fd=self.dir_fd)
        except NotADirectoryError:
            raise BuiltinError(f"not a directory: {self.raw}") from None
        except OSError as exc:
            raise _error(exc, self.raw) from None

    def close(self) -> None:
        """Release the directory descriptor."""
        if not self._closed:
            self._closed = True
            os.close(self.dir_fd)

    def __enter__(self) -> Located:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Paths:
    """Resolves path arguments, confined to ``workspace`` when one is set."""

    __slots__ = ("_identity", "_prefix", "base_dir", "root")

    def __init__(self, workspace: Path | None = None, *, base_dir: Path | None = None) -> None:
        self.root = workspace
        self._identity: tuple[int, int] | None = None
        self._prefix: tuple[str, ...] = ()
        if workspace is not None:
            info = os.stat(workspace)
            self._identity = (info.st_dev, info.st_ino)
            self._prefix = _components(str(workspace))
        self.base_dir = base_dir

    @property
    def base(self) -> Path:
        """Where relative paths start: the workspace, else ``base_dir``, else the cwd (now)."""
        if self.root is not None:
            return self.root
        return self.base_dir if self.base_dir is not None else Path.cwd()

    def locate(
        self,
        raw: str,
        *,
        write: bool = False,
        make_parents: bool = False,
        follow: bool = True,
        plan: bool = False,
    ) -> Located:
        """The entry ``raw`` names, reached without ever following a symlink blindly.

        Args:
            raw: the path as the model gave it.
            write: the entry is about to be changed (refused under ``.git`` in a workspace).
            make_parents: create missing parent directories (no-follow, beneath the root).
            follow: resolve a symlink in the last component (``False``: the link itself).
            plan: a missing parent is no error: the entry comes back ``virtual`` (for
                staging a file that a later step creates, with its parents).

        Raises:
            BuiltinError: outside the workspace, a missing or non-directory parent, a
                symlink loop, or a directory swapped for a symlink while walking.
        """
        if not raw:
            raise BuiltinError("path must not be empty")
        if "\0" in raw:
            raise BuiltinError("path must not contain a NUL character")
        root = self.root if self.root is not None else Path("/")
        start = self._start(raw)
        if write and self.root is not None and any(p.lower() == ".git" for p in start):
            raise BuiltinError(_GIT_REFUSAL.format(raw=raw))  # before any parent is made
        fd = _open_root(root, raw)
        try:
            if self._identity is not None:
                info = os.fstat(fd)
                if (info.st_dev, info.st_ino) != self._identity:
                    raise BuiltinError("the workspace directory was replaced; refusing to use it")
            walk = _Walk(self, raw, root, fd, write=write, make=make_parents, plan=plan)
            return walk.run(start, follow)
        except BaseException:
            os.close(fd)
            raise

    def _start(self, raw: str) -> list[str]:
        if not os.path.isabs(raw):
            if self.root is not None:
                return raw.split("/")
            return [*_components(str(self.base)), *raw.split("/")]
        return self.under_root(raw, raw)

    def under_root(self, target: str, raw: str) -> list[str]:
        """The components of the absolute path ``target`` below the root (``raw`` is for the
        message): refused unless it starts with the workspace's path, compared component by
        component and before anything is resolved."""
        parts = _components(target)
        if self.root is None:
            return list(parts)
        if parts[: len(self._prefix)] == self._prefix:
            return list(parts[len(self._prefix) :])
        raise BuiltinError(
            f"{raw}: path is outside the workspace (resolves outside baseDir {self.root})"
        )


class _Walk:
    """One walk from the root: a stack of directory descriptors and the names leading there."""

    def __init__(
        self,
        paths: Paths,
        raw: str,
        root: Path,
        root_fd: int,
        *,
        write: bool,
        make: bool,
        plan: bool,
    ) -> None:
        self.paths = paths
        self.raw = raw
        self.root = root
        self.fds = [root_fd]
        self.names: list[str] = []
        self.write = write
        self.make = make
        self.plan = plan
        self.made: list[tuple[str, ...]] = []
        self.confined = paths.root is not None

    def run(self, start: list[str], follow: bool) -> Located:
        todo = [p for p in reversed(start) if p not in ("", ".")]
        links = 0
        try:
            while todo:
                part = todo.pop()
                if part == "..":
                    self._up()
                    continue
                last = not todo
                info = self._lstat(part)
                if info is not None and stat.S_ISLNK(info.st_mode) and (follow or not last):
                    links += 1
                    if links > _MAX_LINKS:
                        raise BuiltinError(f"{self.raw}: too many levels of symbolic links")
                    self._follow(part, todo)
                    continue
                if last:
                    return self._found(part)
                self._descend(part, info, climbs_later=".." in todo)
            return self._found_self()
        except BaseException:
            self._close(self.fds[1:])
            raise

    @staticmethod
    def _close(fds: list[int]) -> None:
        for fd in fds:
            if fd >= 0:
                os.close(fd)

    def _lstat(self, part: str) -> os.stat_result | None:
        if self.fds[-1] < 0:
            return None  # beneath a directory that does not exist yet
        try:
            return os.stat(part, dir_fd=self.fds[-1], follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _error(exc, self.raw) from None

    def _up(self) -> None:
        if len(self.fds) == 1:
            if self.confined:
                raise BuiltinError(
                    f"{self.raw}: path is outside the workspace "
                    f"(resolves outside baseDir {self.root})"
                )
            return  # ``/..`` is ``/``
        self._close([self.fds.pop()])
        self.names.pop()

    def _follow(self, part: str, todo: list[str]) -> None:
        try:
            target = os.readlink(part, dir_fd=self.fds[-1])
        except OSError as exc:
            raise _error(exc, self.raw) from None
        if os.path.isabs(target):
            pieces = self.paths.under_root(target, self.raw)
            self._close(self.fds[1:])
            del self.fds[1:]
            self.names.clear()
        else:
            pieces = target.split("/")
        todo.extend(p for p in reversed(pieces) if p not in ("", "."))

    def _guard(self, name: str) -> None:
        if self.write and self.confined and name.lower() == ".git":
            raise BuiltinError(_GIT_REFUSAL.format(raw=self.raw))

    def _descend(self, part: str, info: os.stat_result | None, *, climbs_later: bool) -> None:
        self._guard(part)
        parent = self.fds[-1]
        if info is None and (not self.make or climbs_later or parent < 0):
            # Missing: carry on by name alone (nothing to follow beneath it). Not made when a
            # later ``..`` may leave it: ``new/../../x`` must be refused with nothing created.
            self.fds.append(-1)
            self.names.append(part)
            return
        if info is None:
            if not self.make:
                raise BuiltinError(f"file not found: {self.raw}")
            try:
                os.mkdir(part, 0o777, dir_fd=parent)
                self.made.append((*self.names, part))
            except FileExistsError:
                pass  # made by someone else meanwhile: open it like any other
            except OSError as exc:
                raise _error(exc, self.raw) from None
        elif not stat.S_ISDIR(info.st_mode):
            if self.make or self.plan:
                raise BuiltinError(f"cannot create {self.raw}: a parent path is a file")
            raise BuiltinError(f"file not found: {self.raw}")
        try:
            fd = os.open(part, _DIR_FLAGS, dir_fd=parent)
        except OSError as exc:
            raise _error(exc, self.raw) from None
        self.fds.append(fd)
        self.names.append(part)

    def _found(self, name: str) -> Located:
        self._guard(name)
        return self._result(name, (*self.names, name))

    def _found_self(self) -> Located:
        """The path named a directory (the root, or one ending in ``..``): itself, as ``.``."""
        for name in self.names:
            self._guard(name)
        return self._result(".", tuple(self.names))

    def _result(self, name: str, parts: tuple[str, ...]) -> Located:
        if self.fds[-1] < 0 and self.make:
            raise BuiltinError(
                f"cannot create {self.raw}: it climbs out ('..') of a directory that does not "
                "exist yet; give the path without '..'"
            )
        if self.fds[-1] < 0 and not self.plan:
            raise BuiltinError(f"file not found: {self.raw}")
        real = [fd for fd in self.fds if fd >= 0]
        self._close(real[:-1])
        located = Located(self.raw, self.root, real[-1], name, parts)
        located.made = self.made
        located.virtual = self.fds[-1] < 0
        return located


def _components(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.split("/") if p not in ("", "."))


def _open_root(root: Path, raw: str) -> int:
    try:
        return os.open(root, _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise BuiltinError(f"{raw}: the workspace cannot be opened ({exc.strerror})") from None


def _error(exc: OSError, raw: str) -> BuiltinError:
    if isinstance(exc, FileNotFoundError):
        return BuiltinError(f"file not found: {raw}")
    if isinstance(exc, IsADirectoryError):
        return BuiltinError(f"{raw} is a directory, not a file")
    if isinstance(exc, PermissionError):
        return BuiltinError(f"permission denied: {raw}")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return BuiltinError(
            f"{raw}: the path changed while it was being opened (a symlink or file appeared "
            "where a directory or file was); nothing was done"
        )
    if exc.errno == errno.ENXIO:
        return BuiltinError(f"{raw} is not a regular file")
    return BuiltinError(f"{raw}: {exc.strerror or exc}")


def open_beneath(dir_fd: int, relative: str, flags: int) -> int | None:
    """Open ``relative`` (a walk result: no ``..``, no symlinks) under ``dir_fd`` without
    following any symlink; ``None`` when it is gone or is not what it was."""
    *dirs, name = relative.split("/")
    fds: list[int] = []
    try:
        current = dir_fd
        for part in dirs:
            current = os.open(part, _DIR_FLAGS, dir_fd=current)
            fds.append(current)
        return os.open(name, flags | _NO_FOLLOW, dir_fd=current)
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)


def walk_files(dir_fd: int) -> list[str]:
    """Every regular file under the directory ``dir_fd`` as a relative posix path, sorted
    (code-point order), so a capped result does not depend on the filesystem.

    Symlinks are never followed or listed; unreadable directories are skipped. Each directory
    is reopened from ``dir_fd`` with ``O_NOFOLLOW`` per component, so a directory swapped for
    a symlink mid-walk is skipped, never entered.
    """
    found: list[str] = []
    pending: list[str] = [""]
    while pending:
        relative = pending.pop()
        fd = os.dup(dir_fd) if not relative else open_beneath(dir_fd, relative, os.O_DIRECTORY)
        if fd is None:
            continue
        try:
            entries = _entries(fd)
        finally:
            os.close(fd)
        prefix = f"{relative}/" if relative else ""
        for name, mode in entries:
            if stat.S_ISDIR(mode):
                if name not in SKIPPED_DIRS:
                    pending.append(prefix + name)
            elif stat.S_ISREG(mode):
                found.append(prefix + name)
    found.sort()
    return found


def _entries(fd: int) -> list[tuple[str, int]]:
    """The names in the directory ``fd`` with their own (not followed) modes."""
    found: list[tuple[str, int]] = []
    try:
        with os.scandir(fd) as listing:
            for entry in listing:
                try:
                    found.append((entry.name, entry.stat(follow_symlinks=False).st_mode))
                except OSError:
                    continue
    except OSError:
        pass
    return found
