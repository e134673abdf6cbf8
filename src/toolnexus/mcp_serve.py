"""``toolnexus.mcp_serve``: the MCP serving names at the module path the reference package uses.

A thin re-export of `toolnexus.serve.mcp` (COMPAT §1); importing it loads the ``mcp`` SDK.
"""

from __future__ import annotations

from .serve.mcp import (
    DEFAULT_NAME,
    DEFAULT_VERSION,
    INVALID_PARAMS,
    MCPServeConfig,
    OnCall,
    build_mcp_server,
    exposed_mcp_tools,
    mcp_app,
    serve_mcp_http_request,
)

__all__ = [
    "DEFAULT_NAME",
    "DEFAULT_VERSION",
    "INVALID_PARAMS",
    "MCPServeConfig",
    "OnCall",
    "build_mcp_server",
    "exposed_mcp_tools",
    "mcp_app",
    "serve_mcp_http_request",
]
