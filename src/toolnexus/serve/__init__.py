"""Serving a toolkit or an agent on the network: A2A inbound, and MCP inbound at ``POST /mcp``
(`toolnexus.serve.mcp`), behind one set of guards (`toolnexus.security`): the ``Host`` and
``Origin`` checks, the bearer token, JSON-only bodies and the body cap. Without a token it
serves on loopback only.

`start_a2a_server` serves A2A over a host's own ``run_task`` (the reference's entry point).
See docs/serving.md and docs/serving-mcp.md. Needs the ``serve`` extra (starlette, uvicorn,
a2a-sdk; MCP inbound also the ``mcp`` extra). Names load lazily, so ``import toolnexus.serve``
pulls in neither the SDKs nor starlette until one is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from .a2a import OnTask
    from .app import ServedApp, serve, serve_agent, serve_agent_app, serve_app, start_a2a_server
    from .card import CARD_PATH, DEFAULT_VERSION, PROTOCOL_VERSION, A2AConfig, build_agent_card
    from .mcp import (
        McpApp,
        MCPServeConfig,
        OnCall,
        build_mcp_server,
        exposed_mcp_tools,
        mcp_app,
    )
    from .server import ServeHandle
    from .tasks import InMemoryTaskStore, TaskStore
    from .tasks_file import FileTaskStore
    from .tasks_url import resolve_store, resolve_task_store

_LAZY: dict[str, str] = {
    "ServedApp": ".app",
    "serve": ".app",
    "serve_agent": ".app",
    "serve_agent_app": ".app",
    "serve_app": ".app",
    "start_a2a_server": ".app",
    "OnTask": ".a2a",
    "A2AConfig": ".card",
    "CARD_PATH": ".card",
    "DEFAULT_VERSION": ".card",
    "PROTOCOL_VERSION": ".card",
    "build_agent_card": ".card",
    "resolve_store": ".tasks_url",
    "ServeHandle": ".server",
    "FileTaskStore": ".tasks_file",
    "InMemoryTaskStore": ".tasks",
    "TaskStore": ".tasks",
    "resolve_task_store": ".tasks_url",
    "MCPServeConfig": ".mcp",
    "McpApp": ".mcp",
    "OnCall": ".mcp",
    "build_mcp_server": ".mcp",
    "exposed_mcp_tools": ".mcp",
    "mcp_app": ".mcp",
}

__all__ = [
    "CARD_PATH",
    "DEFAULT_VERSION",
    "PROTOCOL_VERSION",
    "A2AConfig",
    "FileTaskStore",
    "InMemoryTaskStore",
    "MCPServeConfig",
    "McpApp",
    "OnCall",
    "OnTask",
    "ServeHandle",
    "ServedApp",
    "TaskStore",
    "build_agent_card",
    "build_mcp_server",
    "exposed_mcp_tools",
    "mcp_app",
    "resolve_store",
    "resolve_task_store",
    "serve",
    "serve_agent",
    "serve_agent_app",
    "serve_app",
    "start_a2a_server",
]


if not TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_names(globals(), _LAZY)
