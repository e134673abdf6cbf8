"""Co-mounting the approvals inbox on a served app: ``serve(..., inbox=...)``.

The inbox answers below its path (``/inbox`` by default) with its own users, sessions and
CSRF checks (`toolnexus.inbox`); the bearer token that guards A2A and MCP does not apply to
it, since a browser cannot send it. The served app's ``Host`` and ``Origin`` checks do
(`toolnexus.security.SiteGuard`, around both). Everything else goes to the served app as
before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from ..errors import UsageError
from ..security import ASGIApp, Receive, Scope, Send

__all__ = ["DEFAULT_INBOX_PATH", "inbox_for", "mount_inbox"]

DEFAULT_INBOX_PATH = "/inbox"


def inbox_for(inbox: object, store: object) -> tuple[ASGIApp, str, Callable[[], Any]]:
    """The inbox app for ``serve(inbox=...)``, its path, and what closes it.

    ``inbox`` is an `toolnexus.inbox.InboxApp` (mounted as it is), or the options of
    `toolnexus.inbox.inbox_app` as a mapping (plus ``path``), run over ``store`` — the served
    client's (or agent runtime's) run store.

    Raises:
        UsageError: a mapping without ``users``, a bad ``path``, or no run store to use.
    """
    from ..inbox import InboxApp, inbox_app

    if isinstance(inbox, InboxApp):
        return inbox, DEFAULT_INBOX_PATH, inbox.aclose
    if not isinstance(inbox, Mapping):
        raise UsageError(
            "serve: inbox= takes an InboxApp or the options of inbox_app (a dict with users=)"
        )
    options = dict(cast(Mapping[str, Any], inbox))
    path = options.pop("path", DEFAULT_INBOX_PATH)
    if not isinstance(path, str) or not path.startswith("/") or path == "/" or path.endswith("/"):
        raise UsageError(f'serve: the inbox path must look like "/inbox", got {path!r}')
    if "users" not in options:
        raise UsageError("serve: inbox= needs users= (a users file, a mapping or a list)")
    if store is None:
        raise UsageError("serve: inbox= needs a run store (a client= or an agent runtime)")
    app = inbox_app(options.pop("store", store), **options)
    return app, path, app.aclose


def mount_inbox(app: ASGIApp, inbox: ASGIApp, path: str) -> ASGIApp:
    """``app`` with ``inbox`` answering below ``path`` (``path`` itself redirects to
    ``path/``)."""

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            root = str(scope.get("root_path") or "")
            full = str(scope.get("path") or "")
            here = full[len(root) :] if root and full.startswith(root) else full
            if here == path:
                location = (root + path + "/").encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 307,
                        "headers": [(b"location", location), (b"content-length", b"0")],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
            if here.startswith(path + "/"):
                await inbox({**scope, "root_path": root + path}, receive, send)
                return
        await app(scope, receive, send)

    return route
