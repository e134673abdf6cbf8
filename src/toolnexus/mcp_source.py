"""``toolnexus.mcp_source``: MCP servers as a tool source, under the existing package's path.

A thin re-export: every name is the same object as ``toolnexus.<name>``.
"""

from .tools.mcp import (
    DEFAULT_TIMEOUT,
    MAX_LIST_PAGES,
    McpConfig,
    McpInventory,
    McpSource,
    ServerConfig,
    ToolInfo,
    answer_to_elicit_result,
    apply_tools_filter,
    elicitation_to_request,
    expand_env_headers,
    is_enabled,
    is_remote,
    list_mcp_tools,
    load_mcp,
    load_mcp_with_context,
    parse_mcp_config,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_LIST_PAGES",
    "McpConfig",
    "McpInventory",
    "McpSource",
    "ServerConfig",
    "ToolInfo",
    "answer_to_elicit_result",
    "apply_tools_filter",
    "elicitation_to_request",
    "expand_env_headers",
    "is_enabled",
    "is_remote",
    "list_mcp_tools",
    "load_mcp",
    "load_mcp_with_context",
    "parse_mcp_config",
]
