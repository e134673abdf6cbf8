"""The inbox's JSON API (bearer tokens only): the list, one request, an answer, a cancel, and
a bulk answer.

Each route maps its JSON body onto the same `toolnexus.inbox.views.Views` moves the pages make
— the answer through the intake, recorded once with who — and the outcome back onto a status
code. Bodies are JSON objects sent as ``Content-Type: application/json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ..errors import CheckpointError, UsageError
from .auth import Session
from .bulk import answer_many, parse_ids
from .live import Watcher
from .views import QuickAction, Views
from .web import json_body, unreadable_json

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

__all__ = ["JsonApi"]


def _error(message: str, status: int = 400, **more: Any) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": message, **more}, status_code=status)


class JsonApi:
    """The ``/api/…`` routes over one inbox's views; answers poke its watcher."""

    __slots__ = ("_views", "_watcher")

    def __init__(self, views: Views, watcher: Watcher) -> None:
        self._views = views
        self._watcher = watcher

    async def pending(self, request: HttpRequest, session: Session) -> Response:
        """``GET /api/pending``: the list's page as JSON (the same filters)."""
        from starlette.responses import JSONResponse

        try:
            found = await self._views.api_pending(request)
        except UsageError as exc:
            return _error(str(exc))
        return JSONResponse(found)

    async def detail(self, request: HttpRequest, session: Session) -> Response:
        """``GET /api/requests/{id}``."""
        from starlette.responses import JSONResponse

        rid = request.path_params["rid"]
        try:
            found = await self._views.api_detail(rid)
        except CheckpointError as exc:
            return unreadable_json(rid, exc)
        if found is None:
            return _error("no such request", 404)
        return JSONResponse(found)

    async def _recorded(self, rid: str) -> Response:
        from starlette.responses import JSONResponse

        self._watcher.poke()
        found = await self._views.status(rid)
        return JSONResponse(found or {}, status_code=200)

    async def answer(self, request: HttpRequest, session: Session) -> Response:
        """``POST /api/requests/{id}/answer``: ``{"ok": bool, "data"?: {…}, "reason"?: …}``."""
        body = await json_body(request)
        if body is None:
            return _error("the body must be a JSON object")
        rid = request.path_params["rid"]
        outcome = await self._views.api_answer(rid, body, session.user)
        if outcome.status == 303:
            return await self._recorded(rid)
        return _error(outcome.message, outcome.status, errors=dict(outcome.errors))

    async def cancel(self, request: HttpRequest, session: Session) -> Response:
        """``POST /api/requests/{id}/cancel``: ``{"reason"?: "…"}``."""
        body = await json_body(request)
        if body is None:
            return _error("the body must be a JSON object")
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            return _error("reason must be a string")
        rid = request.path_params["rid"]
        outcome = await self._views.cancel(rid, reason, session.user)
        if outcome.status == 303:
            return await self._recorded(rid)
        return _error(outcome.message, outcome.status)

    async def bulk(self, request: HttpRequest, session: Session) -> Response:
        """``POST /api/bulk``: ``{"action": "approve"|"decline", "ids": [...], "reason"?}`` →
        200 with each request's result (see `toolnexus.inbox.bulk`); 400 for a body that is
        not one."""
        from starlette.responses import JSONResponse

        body = await json_body(request)
        if body is None:
            return _error("the body must be a JSON object")
        action: Any = body.get("action")
        if action not in ("approve", "decline"):
            return _error('action must be "approve" or "decline"')
        raw: Any = body.get("ids")
        ids = (
            parse_ids(cast(list[object], raw))
            if isinstance(raw, list)
            else "ids must be a list of request ids"
        )
        if isinstance(ids, str):
            return _error(ids)
        reason: Any = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            return _error("reason must be a string")
        chosen: QuickAction = action
        items = await answer_many(self._views, ids, chosen, reason, session.user)
        recorded = sum(1 for i in items if i.result == "recorded")
        if recorded:
            self._watcher.poke()
        return JSONResponse(
            {
                "action": chosen,
                "recorded": recorded,
                "already": sum(1 for i in items if i.result == "already"),
                "failed": sum(1 for i in items if i.result == "failed"),
                "results": [i.to_dict() for i in items],
            }
        )
