"""Serving a toolkit or an agent on the network: A2A inbound, and the mount point of MCP
inbound (``/mcp``), behind one bearer token and one body cap.

See docs/serving.md. Needs the ``serve`` extra (starlette, uvicorn, a2a-sdk).
"""

from .app import ServedApp, serve, serve_agent, serve_agent_app, serve_app
from .card import build_agent_card
from .server import ServeHandle
from .tasks import FileTaskStore, InMemoryTaskStore, TaskStore, resolve_task_store

__all__ = [
    "FileTaskStore",
    "InMemoryTaskStore",
    "ServeHandle",
    "ServedApp",
    "TaskStore",
    "build_agent_card",
    "resolve_task_store",
    "serve",
    "serve_agent",
    "serve_agent_app",
    "serve_app",
]
