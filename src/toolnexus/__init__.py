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

from ._types import (
    JSONSchema,
    Message,
    RunResult,
    RunStatus,
    Tool,
    ToolCallRecord,
    ToolContext,
    ToolResult,
    ToolSource,
    Usage,
    sanitize,
)
from .client import Client, Conversation
from .errors import (
    AnswerConflict,
    AnswerMismatch,
    BadResponse,
    CallbackError,
    CheckpointError,
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
from .loop.hooks import Hooks
from .observability import MetricEvent, Metrics, OnMetric
from .stores.base import ConversationStore
from .stores.memory import InMemoryConversationStore
from .stores.postgres import PostgresStore
from .stores.runs import AnswerChannel, AnswerRecord, InMemoryRunStore, PendingEntry, RunStore
from .stores.sqlite import SqliteStore
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
from .tools.builtins import BuiltinsConfig, builtins_enabled, create_builtin_tools, select_builtins
from .tools.http import http_tool
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
from .tools.native import define_tool, tool
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
from .translate import TranslatedToolCall, TranslateResult, openai_messages_to_anthropic
from .waiting import StoreWaitFor, store_wait_for

__version__ = "0.1.0"

__all__ = [
    "BUILTIN_NAMES",
    "DEFAULT_TIMEOUT",
    "RELAY_CALLS_KEY",
    "RELAY_IS_ERROR_KEY",
    "RELAY_KIND",
    "RELAY_OUTPUT_KEY",
    "RELAY_RESULTS_KEY",
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_TOOL_DESCRIPTION",
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
    "Client",
    "Conversation",
    "ConversationStore",
    "ErrorClassifier",
    "ErrorInfo",
    "ErrorTier",
    "Hooks",
    "InMemoryConversationStore",
    "InMemoryRunStore",
    "JSONSchema",
    "LegacyTransport",
    "McpConfig",
    "McpInventory",
    "McpSource",
    "McpStatus",
    "Message",
    "MetricEvent",
    "Metrics",
    "OnError",
    "OnMetric",
    "PendingEntry",
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
    "Usage",
    "UsageError",
    "WaitFor",
    "__version__",
    "answer_declined",
    "answer_output",
    "answer_to_elicit_result",
    "apply_tools_filter",
    "auth_required",
    "builtins_enabled",
    "create_builtin_tools",
    "create_client",
    "create_in_process_client",
    "create_toolkit",
    "define_tool",
    "elicitation_to_request",
    "expand_env_headers",
    "http_tool",
    "is_enabled",
    "is_expired",
    "is_relay_request",
    "is_remote",
    "list_mcp_tools",
    "list_skills",
    "load_mcp",
    "load_mcp_with_context",
    "load_skills",
    "openai_messages_to_anthropic",
    "parse_mcp_config",
    "pending",
    "pending_of",
    "relay_answer",
    "relay_calls_of",
    "relay_tool",
    "sanitize",
    "select_builtins",
    "store_wait_for",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "tool",
]
