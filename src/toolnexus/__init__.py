"""toolnexus: one uniform Tool over every source, a tool-calling loop, durable suspension.

::

    import toolnexus as tn

    @tn.define_tool
    def add(a: float, b: float) -> str:
        \"\"\"Add two numbers.\"\"\"
        return str(a + b)

    toolkit = await tn.create_toolkit(extra_tools=[add])
    async with tn.create_client(base_url=url, style="openai", model="gpt-4o") as client:
        result = await client.run("What is 2 + 3?", toolkit)

Every public name lives here, in one flat namespace; the modules behind it are private.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._types import (
    JSONSchema,
    Message,
    PendingRunResult,
    RunResult,
    RunStatus,
    Tool,
    ToolCallRecord,
    ToolContext,
    ToolResult,
    ToolSource,
    Usage,
    is_pending,
    sanitize,
)
from .client import Client, Conversation
from .errors import (
    AnswerConflict,
    AnswerMismatch,
    BadResponse,
    CallbackError,
    CheckpointError,
    InvalidAnswer,
    LeaseLost,
    ProviderError,
    RequestExpired,
    ResumeError,
    RunCancelled,
    RunTimeout,
    StoreError,
    ToolnexusError,
    TransportError,
    UnknownRequest,
    UsageError,
)
from .factory import create_client, create_in_process_client
from .llm.base import Transport
from .llm.retry import ErrorClassifier, ErrorInfo, ErrorTier, OnError
from .llm.transport import AiohttpTransport, LegacyTransport
from .loop.checkpoint import Checkpoint
from .loop.edits import edited_arguments_problem
from .loop.hooks import Hooks
from .observability import MetricEvent, Metrics, OnMetric
from .stores.base import ConversationStore
from .stores.memory import InMemoryConversationStore
from .stores.runs import (
    EXPIRED_BY,
    AnswerChannel,
    AnswerRecord,
    Claim,
    InMemoryRunStore,
    InMemoryStore,
    PendingEntry,
    RunStore,
)
from .suspension import (
    RELAY_CALLS_KEY,
    RELAY_IS_ERROR_KEY,
    RELAY_KIND,
    RELAY_OUTPUT_KEY,
    RELAY_RESULTS_KEY,
    Answer,
    RelayCall,
    RelayResult,
    Request,
    WaitFor,
    answer_declined,
    answer_output,
    auth_required,
    is_expired,
    is_relay_request,
    pending,
    pending_of,
    relay_answer,
    relay_calls_of,
    relay_tool,
)
from .toolkit import BUILTIN_NAMES, Toolkit, create_toolkit, to_anthropic, to_gemini, to_openai
from .waiting import StoreWaitFor, store_wait_for

if TYPE_CHECKING:
    from .acp import ACPClient, ACPError, ACPOptions, ACPPermissionTimeoutError, load_acp
    from .client import HTTP_DEFAULT_TIMEOUT, ClientStyle
    from .llm.inprocess import InProcessTransport
    from .llm.parts_wire import encode_part
    from .llm.urllib_transport import HttpTransport, UrllibTransport
    from .parts import (
        MEDIA_TYPES,
        ContentPart,
        ContentPartError,
        UnsupportedPartError,
        audio,
        estimate_tokens,
        file,
        get_max_part_bytes,
        image,
        part,
        set_max_part_bytes,
        summarize,
        text,
    )
    from .serve import (
        A2AConfig,
        FileTaskStore,
        InMemoryTaskStore,
        MCPServeConfig,
        OnCall,
        OnTask,
        ServeHandle,
        TaskStore,
        build_agent_card,
        build_mcp_server,
        exposed_mcp_tools,
        resolve_store,
        serve_agent,
        serve_app,
        start_a2a_server,
    )
    from .stores.postgres import (
        PostgresStore,
    )
    from .stores.sqlite import (
        SqliteStore,
    )
    from .tools.a2a import (
        A2AAgent,
        Agent,
        AgentConfig,
        AgentsConfig,
        agent,
        agent_tools,
        parse_agents_config,
    )
    from .tools.builtins import (
        BuiltinsConfig,
        builtins_enabled,
        create_builtin_tools,
        select_builtins,
    )
    from .tools.http import (
        http_tool,
    )
    from .tools.mcp import (
        DEFAULT_TIMEOUT,
        McpConfig,
        McpInventory,
        McpSource,
        McpStatus,
        ServerConfig,
        ServerInventory,
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
    from .tools.native import (
        define_tool,
        tool,
    )
    from .tools.skills import (
        SKILL_TOOL_DESCRIPTION,
        SKILLS_PROMPT_PREAMBLE,
        SkillDef,
        SkillInfo,
        SkillInventory,
        SkillSkip,
        SkillSource,
        list_skills,
        load_skills,
    )
    from .translate import (
        TranslatedToolCall,
        TranslateResult,
        openai_messages_to_anthropic,
    )
    from .worker import Worker

__version__ = "0.1.0"

__all__ = [
    "BUILTIN_NAMES",
    "DEFAULT_TIMEOUT",
    "EXPIRED_BY",
    "HTTP_DEFAULT_TIMEOUT",
    "MEDIA_TYPES",
    "RELAY_CALLS_KEY",
    "RELAY_IS_ERROR_KEY",
    "RELAY_KIND",
    "RELAY_OUTPUT_KEY",
    "RELAY_RESULTS_KEY",
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_TOOL_DESCRIPTION",
    "A2AAgent",
    "A2AConfig",
    "ACPClient",
    "ACPError",
    "ACPOptions",
    "ACPPermissionTimeoutError",
    "Agent",
    "AgentConfig",
    "AgentsConfig",
    "AiohttpTransport",
    "Answer",
    "AnswerChannel",
    "AnswerConflict",
    "AnswerMismatch",
    "AnswerRecord",
    "BadResponse",
    "BuiltinsConfig",
    "CallbackError",
    "Checkpoint",
    "CheckpointError",
    "Claim",
    "Client",
    "ClientStyle",
    "ContentPart",
    "ContentPartError",
    "Conversation",
    "ConversationStore",
    "ErrorClassifier",
    "ErrorInfo",
    "ErrorTier",
    "FileTaskStore",
    "Hooks",
    "HttpTransport",
    "InMemoryConversationStore",
    "InMemoryRunStore",
    "InMemoryStore",
    "InMemoryTaskStore",
    "InProcessTransport",
    "InvalidAnswer",
    "JSONSchema",
    "LeaseLost",
    "LegacyTransport",
    "MCPServeConfig",
    "McpConfig",
    "McpInventory",
    "McpSource",
    "McpStatus",
    "Message",
    "MetricEvent",
    "Metrics",
    "OnCall",
    "OnError",
    "OnMetric",
    "OnTask",
    "PendingEntry",
    "PendingRunResult",
    "PostgresStore",
    "ProviderError",
    "RelayCall",
    "RelayResult",
    "Request",
    "RequestExpired",
    "ResumeError",
    "RunCancelled",
    "RunResult",
    "RunStatus",
    "RunStore",
    "RunTimeout",
    "ServeHandle",
    "ServerConfig",
    "ServerInventory",
    "SkillDef",
    "SkillInfo",
    "SkillInventory",
    "SkillSkip",
    "SkillSource",
    "SqliteStore",
    "StoreError",
    "StoreWaitFor",
    "TaskStore",
    "Tool",
    "ToolCallRecord",
    "ToolContext",
    "ToolInfo",
    "ToolResult",
    "ToolSource",
    "Toolkit",
    "ToolnexusError",
    "TranslateResult",
    "TranslatedToolCall",
    "Transport",
    "TransportError",
    "UnknownRequest",
    "UnsupportedPartError",
    "UrllibTransport",
    "Usage",
    "UsageError",
    "WaitFor",
    "Worker",
    "__version__",
    "agent",
    "agent_tools",
    "answer_declined",
    "answer_output",
    "answer_to_elicit_result",
    "apply_tools_filter",
    "audio",
    "auth_required",
    "build_agent_card",
    "build_mcp_server",
    "builtins_enabled",
    "create_builtin_tools",
    "create_client",
    "create_in_process_client",
    "create_toolkit",
    "define_tool",
    "edited_arguments_problem",
    "elicitation_to_request",
    "encode_part",
    "estimate_tokens",
    "expand_env_headers",
    "exposed_mcp_tools",
    "file",
    "get_max_part_bytes",
    "http_tool",
    "image",
    "is_enabled",
    "is_expired",
    "is_pending",
    "is_relay_request",
    "is_remote",
    "list_mcp_tools",
    "list_skills",
    "load_acp",
    "load_mcp",
    "load_mcp_with_context",
    "load_skills",
    "openai_messages_to_anthropic",
    "parse_agents_config",
    "parse_mcp_config",
    "part",
    "pending",
    "pending_of",
    "relay_answer",
    "relay_calls_of",
    "relay_tool",
    "resolve_store",
    "sanitize",
    "select_builtins",
    "serve_agent",
    "serve_app",
    "set_max_part_bytes",
    "start_a2a_server",
    "store_wait_for",
    "summarize",
    "text",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "tool",
]

_LAZY: dict[str, str] = {
    "A2AConfig": ".serve",
    "MCPServeConfig": ".serve",
    "OnCall": ".serve",
    "OnTask": ".serve",
    "build_agent_card": ".serve",
    "build_mcp_server": ".serve",
    "exposed_mcp_tools": ".serve",
    "resolve_store": ".serve",
    "start_a2a_server": ".serve",
    "AgentConfig": ".tools.a2a",
    "AgentsConfig": ".tools.a2a",
    "ContentPart": ".parts",
    "ContentPartError": ".parts",
    "UnsupportedPartError": ".parts",
    "MEDIA_TYPES": ".parts",
    "text": ".parts",
    "image": ".parts",
    "file": ".parts",
    "audio": ".parts",
    "part": ".parts",
    "estimate_tokens": ".parts",
    "summarize": ".parts",
    "set_max_part_bytes": ".parts",
    "get_max_part_bytes": ".parts",
    "encode_part": ".llm.parts_wire",
    "ClientStyle": ".client",
    "HTTP_DEFAULT_TIMEOUT": ".client",
    "HttpTransport": ".llm.urllib_transport",
    "InProcessTransport": ".llm.inprocess",
    "UrllibTransport": ".llm.urllib_transport",
    "A2AAgent": ".tools.a2a",
    "Agent": ".tools.a2a",
    "agent": ".tools.a2a",
    "agent_tools": ".tools.a2a",
    "parse_agents_config": ".tools.a2a",
    "ServeHandle": ".serve",
    "TaskStore": ".serve",
    "InMemoryTaskStore": ".serve",
    "FileTaskStore": ".serve",
    "serve_app": ".serve",
    "serve_agent": ".serve",
    "ACPClient": ".acp",
    "ACPError": ".acp",
    "ACPOptions": ".acp",
    "ACPPermissionTimeoutError": ".acp",
    "load_acp": ".acp",
    "Worker": ".worker",
    "BuiltinsConfig": ".tools.builtins",
    "DEFAULT_TIMEOUT": ".tools.mcp",
    "McpConfig": ".tools.mcp",
    "McpInventory": ".tools.mcp",
    "McpSource": ".tools.mcp",
    "McpStatus": ".tools.mcp",
    "PostgresStore": ".stores.postgres",
    "SKILLS_PROMPT_PREAMBLE": ".tools.skills",
    "SKILL_TOOL_DESCRIPTION": ".tools.skills",
    "ServerConfig": ".tools.mcp",
    "ServerInventory": ".tools.mcp",
    "SkillDef": ".tools.skills",
    "SkillInfo": ".tools.skills",
    "SkillInventory": ".tools.skills",
    "SkillSkip": ".tools.skills",
    "SkillSource": ".tools.skills",
    "SqliteStore": ".stores.sqlite",
    "ToolInfo": ".tools.mcp",
    "TranslateResult": ".translate",
    "TranslatedToolCall": ".translate",
    "answer_to_elicit_result": ".tools.mcp",
    "apply_tools_filter": ".tools.mcp",
    "builtins_enabled": ".tools.builtins",
    "create_builtin_tools": ".tools.builtins",
    "define_tool": ".tools.native",
    "elicitation_to_request": ".tools.mcp",
    "expand_env_headers": ".tools.mcp",
    "http_tool": ".tools.http",
    "is_enabled": ".tools.mcp",
    "is_remote": ".tools.mcp",
    "list_mcp_tools": ".tools.mcp",
    "list_skills": ".tools.skills",
    "load_mcp": ".tools.mcp",
    "load_mcp_with_context": ".tools.mcp",
    "load_skills": ".tools.skills",
    "openai_messages_to_anthropic": ".translate",
    "parse_mcp_config": ".tools.mcp",
    "select_builtins": ".tools.builtins",
    "tool": ".tools.native",
}
"""Public names whose modules load on first use (SQLite, Postgres, the tool sources, ...):
``import toolnexus`` stays cheap (DESIGN §6, §8)."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
