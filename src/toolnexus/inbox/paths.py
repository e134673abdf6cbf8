"""Request ids in the inbox's paths: written as one percent-encoded segment, read back from the
path as the client sent it.

A request id is whatever a tool or a remote server chose: ``abc/status``, ``50%``, ``a?b#c``,
``x y``, ``é``. Written with `quote_id`, it is one segment of the URL (``/`` is ``%2F``), so
``requests/abc%2Fstatus`` is the page of ``abc/status`` and ``requests/abc%2Fstatus/status``
its status. The routes read the id from the *raw* path (`request_target`): the server decodes
``%2F`` into ``/`` in the path it hands over, after which ``abc/status`` and the status of
``abc`` would be one path. So the routes cannot collide, whatever the id.

Two ids cannot be a path segment at all: a browser (and the URL standard) resolves ``.`` and
``..`` (even written ``%2E``) as "this" and "the parent" directory. They are written ``~.``
and ``~..``; `quote_id` writes a ``~`` of any other id as ``%7E``, so the ids ``~.`` and ``~..``
are ``%7E.`` and ``%7E..``. Any other percent-encoding of an id reads back as that id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import quote, unquote

__all__ = ["ACTIONS", "Action", "quote_id", "request_target", "unquote_id"]

Action = Literal["answer", "cancel", "status"]
ACTIONS: frozenset[str] = frozenset({"answer", "cancel", "status"})
"""What may follow a request's segment in a path."""

_DOTS = (".", "..")


def quote_id(request_id: str) -> str:
    """``request_id`` as one path segment (see the module docstring)."""
    if request_id in _DOTS:
        return "~" + request_id
    return quote(request_id, safe="").replace("~", "%7E")


def unquote_id(segment: str) -> str:
    """The request id one raw path segment names (the inverse of `quote_id`)."""
    if segment in ("~.", "~.."):
        return segment[1:]
    return unquote(segment, errors="strict")


def _raw_segments(scope: Mapping[str, Any]) -> list[str]:
    """The path as the client sent it, split on ``/`` (each segment still encoded)."""
    raw = scope.get("raw_path")
    if isinstance(raw, bytes):
        return raw.split(b"?", 1)[0].decode("latin-1").split("/")
    # A server that does not say: the decoded path, encoded again (an id holding "/" then
    # reads as two segments and is not found).
    return [quote(s, safe="") for s in str(scope.get("path", "")).split("/")]


def _route_path(scope: Mapping[str, Any]) -> str:
    """The path below the mount point, decoded (what the router matched)."""
    path, root = str(scope.get("path", "")), str(scope.get("root_path", "") or "")
    if root and path.startswith(root + "/"):
        return path[len(root) :]
    return path


def request_target(scope: Mapping[str, Any]) -> tuple[str, Action | None] | None:
    """The request id and the action (``None``: the request itself) a path names:
    ``requests/<id>[/<action>]`` or ``api/requests/<id>[/<action>]`` below the mount point;
    ``None`` when it names no request (a bad encoding, or more segments than that)."""
    raw = _raw_segments(scope)
    wanted = _route_path(scope).lstrip("/")
    # The route's raw segments are the last ones that decode to the routed path (the mount
    # point's own segments come before them).
    for count in range(1, len(raw) + 1):
        tail = raw[-count:]
        try:
            decoded = "/".join(unquote(s, errors="strict") for s in tail)
        except UnicodeDecodeError:
            return None
        if decoded == wanted:
            break
        if len(decoded) > len(wanted):
            return None
    else:
        return None
    if tail[:1] == ["api"]:
        tail = tail[1:]
    action: Action | None = None
    if len(tail) == 3 and tail[2] in ACTIONS:
        action = tail.pop()  # pyright: ignore[reportAssignmentType]
    if len(tail) != 2 or tail[0] != "requests" or not tail[1]:
        return None
    try:
        return unquote_id(tail[1]), action
    except UnicodeDecodeError:
        return None
