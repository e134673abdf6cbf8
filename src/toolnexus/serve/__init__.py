"""Serving a toolkit to other programs: MCP inbound at ``POST /mcp`` (`toolnexus.serve.mcp`).

Names load lazily, so ``import toolnexus.serve`` pulls in neither the ``mcp`` SDK nor starlette
until one is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .mcp import (
        McpApp,
        MCPServeConfig,
        OnCall,
        build_mcp_server,
        exposed_mcp_tools,
        mcp_app,
    )

__all__ = [
    "MCPServeConfig",
    "McpApp",
    "OnCall",
    "build_mcp_server",
    "exposed_mcp_tools",
    "mcp_app",
]

_LAZY: dict[str, str] = {name: ".mcp" for name in __all__}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
