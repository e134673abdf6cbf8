"""One ASGI app for everything a toolkit or an agent serves, and ``serve`` to run it.

::

    app = serve_app(toolkit, client=client, a2a={"name": "helper"}, token=os.environ["A2A_TOKEN"])
    served = await serve(toolkit, "127.0.0.1:0", client=client, a2a={...})   # or toolkit.serve
    served = await serve_agent(lead, "127.0.0.1:0", llm=..., store="sqlite:///state.db")

Routes (with the A2A profile): ``GET /.well-known/agent-card.json`` → the card; every other
``GET`` → 404 ``not found``; every ``POST`` except ``/mcp`` → the JSON-RPC endpoint. ``/mcp``
(exactly, or below it) goes to the MCP inbound app when ``mcp=`` is given. Without the A2A
profile every non-``/mcp`` request is a 404. The site checks (``Host``, ``Origin``), the bearer
token (when given), JSON-only bodies and the body cap guard every route (`toolnexus.security`);
served without a token, the app listens on loopback only unless the host says ``insecure=True``
(`toolnexus.serve.server.check_exposure`). With ``callers=`` (a callers file, or ``{name:
token}``) each caller has a token of its own and sees only the A2A tasks it created
(`toolnexus.serve.callers`).

A host that mounts the app in its own server gets the same routes below its mount point; the
card's ``url`` is then derived from each request (or pinned with ``url=``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..errors import UsageError
from ..security import (
    DEFAULT_MAX_BODY,
    ASGIApp,
    JsonOnly,
    Receive,
    Scope,
    Send,
    SiteGuard,
    check_proxies,
    check_site,
    secure,
)
from ..stores.requests import DEFAULT_LEASE_S
from .card import CARD_PATH, CardSkill, build_agent_card, card_skills, check_a2a_config
from .server import (
    WILDCARDS,
    ServeHandle,
    check_exposure,
    exposure_warning,
    parse_addr,
    start,
)

if TYPE_CHECKING:
    from .._toolkit import Toolkit
    from .._types import Tool
    from ..agents.runtime import AgentRuntime
    from ..agents.spec import Agent
    from ..client import Client
    from .a2a import A2AService

__all__ = [
    "ServedApp",
    "serve",
    "serve_agent",
    "serve_agent_app",
    "serve_app",
    "start_a2a_server",
]

log = logging.getLogger("toolnexus.serve")

Names = Iterable[str] | str | None


@dataclass(slots=True)
class ServedApp:
    """The ASGI app (call it, or mount it) and what must be closed with it."""

    app: ASGIApp
    service: A2AService | None
    _closers: list[Callable[[], Any]]
    tokenless: bool = False
    """It serves A2A or MCP routes without a bearer token (`start` then listens on loopback
    only, unless ``insecure``)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    async def aclose(self) -> None:
        """Cancel runs in flight and release the task store (if the app opened it)."""
        if self.service is not None:
            await self.service.aclose()
        for closer in reversed(self._closers):
            value = closer()
            if value is not None:
                await value


def _mcp_app(
    toolkit: Any,
    config: Any,
    on_call: Any,
    client: Any,
    store: Any,
    lease_s: float = DEFAULT_LEASE_S,
) -> ASGIApp:
    """The MCP inbound mount point (CONTRACT §7C), imported when ``mcp=`` is given."""
    from .mcp import mcp_app  # the MCP SDK loads only for a server that serves MCP

    config = None if config is True else config  # ``mcp=True``: the defaults
    return mcp_app(toolkit, config, on_call=on_call, client=client, store=store, lease_s=lease_s)


def _router(a2a: ASGIApp | None, mcp: ASGIApp | None) -> ASGIApp:
    from starlette.responses import PlainTextResponse

    missing = PlainTextResponse("not found", status_code=404)

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "lifespan" and mcp is not None:
            await mcp(scope, receive, send)  # starts and stops the MCP SDK's session manager
            return
        if scope.get("type") != "http":
            return
        path = str(scope.get("path") or "")
        root = str(scope.get("root_path") or "")
        if root and path.startswith(root):
            path = path[len(root) :] or "/"
        if mcp is not None and (path == "/mcp" or path.startswith("/mcp/")):
            await mcp(scope, receive, send)
        elif a2a is not None:
            await a2a(scope, receive, send)
        else:
            await missing(scope, receive, send)

    return route


def _a2a_routes(
    service: A2AService, card_of: Callable[[str], dict[str, Any]], url: str | None
) -> ASGIApp:
    from starlette.requests import Request as HttpRequest
    from starlette.responses import JSONResponse, PlainTextResponse, Response

    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        request = HttpRequest(scope, receive)
        response: Response
        path = request.url.path
        root = str(scope.get("root_path") or "")
        if root and path.startswith(root):
            path = path[len(root) :] or "/"
        if request.method == "POST":
            response = await service.endpoint(request)
        elif request.method == "GET" and path == CARD_PATH:
            base = url or (str(request.base_url).rstrip("/"))
            response = JSONResponse(card_of(base))
        else:
            response = PlainTextResponse("not found", status_code=404)
        await response(scope, receive, send)

    return handle


def _build(
    fulfiller: Any,
    *,
    skills: list[Any],
    a2a: Any,
    on_task: Any,
    runs: Any,
    token: str | None,
    callers: object,
    max_body: int,
    url: str | None,
    mcp: ASGIApp | None,
    closers: list[Callable[[], Any]],
    lease_s: float = DEFAULT_LEASE_S,
    recover_every: float | None = 30.0,
    tracer: Any = None,
    inbox: object = None,
    inbox_store: object = None,
    allowed_hosts: Names = None,
    allowed_origins: Names = None,
) -> ServedApp:
    from .a2a import A2AService
    from .tasks_url import resolve_task_store

    names = _callers(token, callers)
    service: A2AService | None = None
    a2a_app: ASGIApp | None = None
    if a2a is not None and a2a is not False:
        cfg = check_a2a_config(a2a)
        tasks, owns = resolve_task_store(cfg.get("store"), runs=runs)
        if owns:
            closers.append(tasks.aclose)
        service = A2AService(
            fulfiller,
            tasks,
            on_task=on_task,
            lease_s=lease_s,
            recover_every=recover_every,
            tracer=tracer,
        )
        a2a_app = JsonOnly(
            _a2a_routes(service, lambda base: build_agent_card(cfg, skills, base), url)
        )
    site: dict[str, Any] = {
        "hosts": allowed_hosts,
        "origins": allowed_origins,
        "public_url": url,
    }
    app = secure(
        _router(a2a_app, mcp),
        token=token if names is None else None,
        callers=names,
        max_body=max_body,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        public_url=url,
    )
    if inbox is not None and inbox is not False:
        from .inbox_mount import inbox_for, mount_inbox

        inbox_app, path, close_inbox = inbox_for(inbox, inbox_store)
        closers.append(close_inbox)
        # One site check for both (the inbox's own guard then defers to it).
        app = SiteGuard(mount_inbox(app, inbox_app, path), **site)
    tokenless = token is None and names is None and (a2a_app is not None or mcp is not None)
    return ServedApp(app, service, closers, tokenless)


def _callers(token: str | None, callers: object) -> dict[str, str] | None:
    """The callers' names by token digest (``callers=``), checked before anything starts."""
    if callers is None:
        return None
    if token is not None:
        raise UsageError("serve: give token= (one caller) or callers= (several), not both")
    from .callers import load_callers

    return load_callers(callers)


def serve_app(
    toolkit: Toolkit,
    *,
    client: Client | None = None,
    a2a: Mapping[str, Any] | bool | None = None,
    on_task: Callable[[dict[str, Any]], Any] | None = None,
    mcp: Mapping[str, Any] | bool | None = None,
    on_call: Callable[[dict[str, Any]], Any] | None = None,
    token: str | None = None,
    auth: str | None = None,
    callers: object = None,
    max_body: int = DEFAULT_MAX_BODY,
    url: str | None = None,
    allowed_hosts: Names = None,
    allowed_origins: Names = None,
    lease_s: float = DEFAULT_LEASE_S,
    recover_every: float | None = 30.0,
    tracing: Any = None,
    inbox: object = None,
) -> ServedApp:
    """The ASGI app that serves ``toolkit`` (A2A through ``client``; MCP inbound; the
    approvals inbox).

    Args:
        toolkit: the tools (its SKILL.md skills and its tools become the card's skills:
            `toolnexus.serve.card.card_skills`).
        client: runs the A2A tasks (required with ``a2a``).
        a2a: the A2A profile (`toolnexus.serve.card.A2AConfig`, ``True`` for defaults);
            ``None`` falls back to the toolkit's top-level ``a2a`` config key.
        on_task: ``{id, task, result, state}`` at each terminal or input-required save.
        mcp: the MCP inbound profile (``None``: the toolkit's ``mcpServer`` key).
        on_call: ``{name, source, ms, is_error}`` per MCP call.
        token: require ``Authorization: Bearer <token>`` on every route (``auth`` is an
            alias): one caller.
        callers: instead of ``token``, several callers, each with a token of its own: the
            path of a callers file (``{"callers": [{"name", "token" | "token_sha256"}]}``),
            or a ``{name: token}`` mapping (`toolnexus.serve.callers.load_callers`). Each
            A2A task belongs to the caller that created it: another caller's ListTasks,
            GetTask, SubscribeToTask, CancelTask and follow-ups do not find it, and a
            follow-up's answer is recorded as ``answered_by`` the caller's name.
        max_body: the request body cap in bytes (default 1 MiB).
        url: the base URL the card names (default: each request's own); its host is one the
            app answers to, and its origin one whose pages may call it.
        allowed_hosts: the ``Host`` names the app answers to besides loopback's and
            ``url``'s (``"api.example.com"``, ``"*.example.com"``, ``"*"``): any other gets
            421, so a page cannot reach it by rebinding its own name to this machine.
        allowed_origins: browser origins whose pages may call it besides its own
            (``"https://ui.example.com"``, ``"http://localhost:*"``); any other gets 403.
        lease_s: how long a resume holds its request before another process may take it
            over (a serving process that died mid-resume is replaced after that): an A2A
            task's, and a served MCP call's retry.
        recover_every: how often (seconds) tasks left working by another process are looked
            at and finished (`toolnexus.serve.a2a.A2AService.recover`); ``None``: only at start.
        tracing: the A2A SERVER spans (`toolnexus.tracing`): ``None`` traces with the
            client's tracer (none when the client does not trace), ``True`` / a
            ``TracerProvider`` / ``False`` as for ``create_client``.
        inbox: the approvals inbox below ``/inbox``: an `toolnexus.inbox.InboxApp`, or the
            options of `toolnexus.inbox.inbox_app` (``users=`` required, ``path=`` to move
            it) over ``client``'s run store. Its users and sessions guard it, not ``token``.
    """
    from .fulfil import ClientFulfiller

    check_site(allowed_hosts, allowed_origins, url)
    profiles: Mapping[str, Any] = getattr(toolkit, "profiles", {}) or {}
    a2a = a2a if a2a is not None else profiles.get("a2a")
    mcp = mcp if mcp is not None else profiles.get("mcpServer")
    fulfiller = None
    runs = None
    if a2a:
        if client is None:
            raise UsageError("serve: the A2A profile needs a client= to run the tasks")
        fulfiller = ClientFulfiller(client, toolkit)
        runs = client.run_store
    mcp_app = _mcp_app(toolkit, mcp, on_call, client, runs, lease_s) if mcp else None
    tracer = _tracer(tracing, client)
    return _build(
        fulfiller,
        skills=_toolkit_skills(toolkit, a2a),
        a2a=a2a,
        on_task=on_task,
        runs=runs,
        token=token or auth,
        callers=callers,
        max_body=max_body,
        url=url,
        mcp=mcp_app,
        closers=[],
        lease_s=lease_s,
        recover_every=recover_every,
        tracer=tracer,
        inbox=inbox,
        inbox_store=client.run_store if client is not None else None,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )


def _tracer(option: Any, client: Any) -> Any:
    """The tracer of the A2A SERVER spans (see ``serve_app(tracing=)``)."""
    from ..tracing import tracer_for

    if option is None and client is not None:
        tracing = client.engine_config.tracing
        return tracing.tracer if tracing is not None else None
    return tracer_for(option)


async def serve(
    toolkit: Toolkit,
    addr: str,
    *,
    insecure: bool = False,
    trusted_proxies: Iterable[str] = (),
    **options: Any,
) -> ServeHandle:
    """Serve ``toolkit`` on ``addr`` (``host:port``; port 0 picks one) → `ServeHandle`.

    ``options`` are those of `serve_app`; the address served on is one of its allowed hosts.
    Tasks a stopped process left answered but unfinished are resumed at start.
    ``trusted_proxies``: the proxies (addresses or networks) whose ``X-Forwarded-For`` is
    believed; none by default (see docs/serving.md).

    Without a token (``token=`` or ``callers=``) the A2A and MCP routes run tools for whoever
    can reach them: it serves on a loopback address only, and logs a warning saying so.
    ``insecure`` serves on another address all the same — for a host whose proxy or firewall
    does the guarding.

    Raises:
        UsageError: a non-loopback ``addr`` without a token and without ``insecure``.
    """
    proxies = check_proxies(trusted_proxies)
    served = serve_app(toolkit, **_bound_host(addr, options))
    return await _started(served, addr, insecure, proxies)


def _bound_host(addr: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the host of ``addr`` among the allowed hosts (a client that names
    the server by the address it listens on is naming it rightly)."""
    host, _ = parse_addr(addr)
    if host in WILDCARDS:
        return options
    given = options.get("allowed_hosts")
    names = [given] if isinstance(given, str) else list(given or ())
    return {**options, "allowed_hosts": [*names, host]}


async def _started(
    served: ServedApp, addr: str, insecure: bool, proxies: tuple[str, ...] = ()
) -> ServeHandle:
    try:
        warn = check_exposure(addr, tokenless=served.tokenless, insecure=insecure)
        handle = await start(served, addr, on_stop=served.aclose, trusted_proxies=proxies)
    except BaseException:
        await served.aclose()
        raise
    if warn:
        log.warning(exposure_warning(addr, handle.url))
    if served.service is not None:
        served.service.start_recovering()
    return handle


async def serve_agent_app(
    target: Agent | AgentRuntime,
    *,
    entry: str | None = None,
    a2a: Mapping[str, Any] | bool | None = True,
    on_task: Callable[[dict[str, Any]], Any] | None = None,
    token: str | None = None,
    auth: str | None = None,
    callers: object = None,
    max_body: int = DEFAULT_MAX_BODY,
    url: str | None = None,
    allowed_hosts: Names = None,
    allowed_origins: Names = None,
    runtime_id: str = "a2a",
    lease_s: float = DEFAULT_LEASE_S,
    recover_every: float | None = 30.0,
    tracing: Any = None,
    inbox: object = None,
    **runtime_options: Any,
) -> ServedApp:
    """The ASGI app that serves an agent tree over A2A: each task runs the entry agent in a
    handle of its own under the runtime's root; its questions reach the caller as
    ``input-required``.

    Args:
        target: an `Agent` (a runtime is built for its team — restored from ``store`` when it
            holds one, so a restarted server finishes the tasks it left waiting), or an
            `AgentRuntime` (with ``entry``, the agent each task runs).
        entry: the agent to run (default: the `Agent` itself).
        token: require this bearer token on every route (one caller).
        callers: several callers, each with a token of its own (see `serve_app`).
        max_body, url, allowed_hosts, allowed_origins: as for `serve_app`.
        tracing: the A2A SERVER spans: ``None`` (the ``llm`` option's ``tracing``, else the
            global provider's when the API is installed), ``True``, ``False`` or a
            ``TracerProvider``.
        inbox: the approvals inbox over the runtime's run store (see `serve_app`).
        runtime_options: ``llm``, ``store``, … for the runtime built from an `Agent`.
    """
    from ..agents.runtime import AgentRuntime
    from ..agents.spec import Agent
    from .fulfil import AgentFulfiller

    check_site(allowed_hosts, allowed_origins, url)
    _callers(token or auth, callers)  # a bad callers file stops the start before the runtime
    closers: list[Callable[[], Any]] = []
    if tracing is None:
        llm: Any = runtime_options.get("llm")
        if isinstance(llm, Mapping):
            tracing = cast(Mapping[str, Any], llm).get("tracing")
        else:
            tracing = getattr(llm, "tracing", None)
    if isinstance(target, Agent):
        runtime_options.setdefault("store", None)  # None: in memory, for this process
        runtime = await AgentRuntime.restore(
            registry=target.registry(), runtime_id=runtime_id, **runtime_options
        )
        closers.append(runtime.aclose)
        name = entry or target.name
        description = target.definition.description
    else:
        if runtime_options:
            raise UsageError("serve_agent: runtime options apply only when serving an Agent")
        runtime = target
        if entry is None:
            raise UsageError("serve_agent: name the entry agent of the runtime (entry=)")
        name = entry
        description = runtime.registry[name].description if name in runtime.registry else ""
    profile: Any = {"name": name, "description": description} if a2a is True else a2a
    return _build(
        AgentFulfiller(runtime, name),
        skills=_team_skills(runtime.registry, name, description),
        a2a=profile,
        on_task=on_task,
        runs=runtime.run_store,
        token=token or auth,
        callers=callers,
        max_body=max_body,
        url=url,
        mcp=None,
        closers=closers,
        lease_s=lease_s,
        recover_every=recover_every,
        tracer=_tracer(tracing, None),
        inbox=inbox,
        inbox_store=runtime.run_store,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )


async def serve_agent(
    target: Agent | AgentRuntime,
    addr: str,
    *,
    insecure: bool = False,
    trusted_proxies: Iterable[str] = (),
    **options: Any,
) -> ServeHandle:
    """Serve an agent tree on ``addr`` → `ServeHandle` (options of `serve_agent_app`;
    ``trusted_proxies``, ``insecure`` and the loopback rule as for `serve`).

    Raises:
        UsageError: a non-loopback ``addr`` without a token and without ``insecure``.
    """
    proxies = check_proxies(trusted_proxies)
    token = options.get("token") or options.get("auth") or options.get("callers")
    check_exposure(addr, tokenless=not token, insecure=insecure)
    served = await serve_agent_app(target, **_bound_host(addr, options))
    return await _started(served, addr, insecure, proxies)


def _toolkit_skills(toolkit: Any, a2a: Any) -> list[Any]:
    infos = list(toolkit.skill_infos()) if hasattr(toolkit, "skill_infos") else []
    tools = list(toolkit.tools()) if hasattr(toolkit, "tools") else []
    return card_skills(check_a2a_config(a2a) if a2a else {}, infos, tools)


def _team_skills(registry: Mapping[str, Any], name: str, description: str) -> list[CardSkill]:
    """A served agent's card: the agent itself (``agent``), then each agent of its team
    (``team``, with what it does) — the agents its ``task`` tool may delegate to."""
    skills = [CardSkill(name, description, ("agent",))]
    entry = registry.get(name)
    for member in getattr(entry, "task_targets", None) or ():
        found = registry.get(member)
        does = str(getattr(found, "description", "") or "") if found is not None else ""
        skills.append(CardSkill(str(member), does, ("team",)))
    return skills


async def start_a2a_server(
    addr: str,
    a2a: Mapping[str, Any] | bool | None,
    skills: Sequence[Any],
    run_task: Callable[[str, str], Any],
    on_task: Callable[[dict[str, Any]], Any] | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
    mcp: Mapping[str, Any] | bool | None = None,
    mcp_tools: Sequence[Tool] | None = None,
    on_call: Callable[[dict[str, Any]], Any] | None = None,
    *,
    token: str | None = None,
    insecure: bool = False,
    allowed_hosts: Names = None,
    allowed_origins: Names = None,
) -> ServeHandle:
    """Serve A2A over a host's own ``run_task`` (the reference's low-level entry point, COMPAT
    §11) → `ServeHandle`. `serve` / `serve_agent` are the usual way; this one is for a host
    that runs its tasks itself.

    Args:
        addr: ``host:port`` (port 0 picks one).
        a2a: the A2A profile (``True``: defaults; ``None``/``False``: no A2A routes).
        skills: the card's skills (`toolnexus.SkillInfo`-like: ``name``, ``description``).
        run_task: ``run_task(text, context_id)`` → an object with ``.status``, ``.pending``
            and ``.text`` (a `RunResult`), or an awaitable of one; sync or async.
            ``context_id`` is the caller's ``contextId`` or the one the server made for the
            task. A run that ends ``pending`` makes its task ``input-required``; the
            follow-up's text is the next ``run_task`` call of that context, on the same task
            (it cannot resume: there is no run store; `serve` resumes).
        on_task: ``{id, task, result, state}`` at each terminal or input-required save.
        loop: the event loop ``run_task`` runs on (``None``: the serving one); another
            loop must be running in its own thread — each call is handed to it.
        mcp: the MCP inbound profile (`toolnexus.serve.MCPServeConfig`) for ``mcp_tools``.
        mcp_tools: the tools served at ``POST /mcp`` (with ``mcp``).
        on_call: ``{name, source, ms, is_error}`` per MCP call.
        token, allowed_hosts, allowed_origins: as for `serve_app`.
        insecure: serve on a non-loopback address without a token (as for `serve`).

    Raises:
        UsageError: ``loop`` is not running, a bad profile, or a non-loopback ``addr``
            without a token and without ``insecure``.
    """
    from .fulfil import CallbackFulfiller

    if loop is not None and loop is not asyncio.get_running_loop() and not loop.is_running():
        raise UsageError("start_a2a_server: loop must be a running event loop (or None)")
    check_site(allowed_hosts, allowed_origins)
    mcp_app = None
    if mcp is not None and mcp is not False:
        mcp_app = _mcp_app(list(mcp_tools or []), mcp, on_call, None, None)
    profile = a2a if a2a is not None and a2a is not False else None
    served = _build(
        CallbackFulfiller(run_task, loop=loop) if profile is not None else None,
        skills=list(skills),
        a2a=profile,
        on_task=on_task,
        runs=None,
        token=token,
        callers=None,
        max_body=DEFAULT_MAX_BODY,
        url=None,
        mcp=mcp_app,
        closers=[],
        **_bound_host(addr, {"allowed_hosts": allowed_hosts, "allowed_origins": allowed_origins}),
    )
    return await _started(served, addr, insecure)
