"""The public namespace is pinned: adding or removing a name is an API decision (STYLE 1)."""

from __future__ import annotations

import json
import subprocess
import sys

import toolnexus

PUBLIC_NAMES = [
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

HEAVY = ("aiohttp", "pydantic", "jsonschema", "mcp", "yaml", "psycopg")


def isort_key(name: str) -> tuple[int, str]:
    """Ruff's RUF022 order: SCREAMING_CASE, then CamelCase, then everything else."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_the_public_names_are_exactly_the_pinned_ones() -> None:
    assert toolnexus.__all__ == PUBLIC_NAMES


def test_the_public_names_are_sorted() -> None:
    assert toolnexus.__all__ == sorted(toolnexus.__all__, key=isort_key)


def test_every_public_name_is_importable_from_the_package() -> None:
    missing = [name for name in toolnexus.__all__ if not hasattr(toolnexus, name)]
    assert missing == []


def test_the_public_names_have_no_duplicates() -> None:
    assert len(set(toolnexus.__all__)) == len(toolnexus.__all__)


def test_importing_the_package_imports_no_heavy_dependency() -> None:
    probe = (
        "import json, sys; import toolnexus; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=30
    )
    assert json.loads(completed.stdout) == []


def test_the_probe_would_see_a_heavy_import() -> None:
    # Guards the test above against passing vacuously: the same probe, after importing yaml.
    probe = (
        "import json, sys; import toolnexus, yaml; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=30
    )
    assert json.loads(completed.stdout) == ["yaml"]
