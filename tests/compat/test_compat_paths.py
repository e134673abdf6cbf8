"""COMPAT §1: the existing package's module paths, as thin re-exports of the top level.

Each listed module imports, declares ``__all__``, re-exports the same objects as
``toolnexus.<name>`` and (for the thin modules) leaks nothing else. ``PATHS`` is COMPAT §1's
table whole — required and "also" names — except the serving/A2A rows (§11:
``toolnexus.serve``, ``toolnexus.a2a``, ``toolnexus.mcp_serve``), which come with their issue.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from types import ModuleType

import pytest

import toolnexus
import toolnexus.agents

HARNESS = [
    "Completion",
    "Loop",
    "Outcome",
    "Verdict",
    "RunOptions",
    "all_todos_done",
    "guarded_hooks",
    "harness",
    "loop_unsupported",
    "run_gated",
]
LIMITS_AND_STATUSES = [
    "LIMITS",
    "LIMIT_MAX_TURNS",
    "LIMIT_MAX_TOKENS",
    "LIMIT_MAX_TOOL_CALLS",
    "LIMIT_MAX_WALL_MS",
    "LIMIT_MAX_CHILDREN",
    "LIMIT_MAX_CONCURRENT",
    "LIMIT_MAX_DEPTH",
    "LIMIT_COMPLETION",
    "LIMIT_TIMEOUT",
    "TASK_STATUSES",
    "TASK_STATUS_DONE",
    "TASK_STATUS_PENDING",
    "TASK_STATUS_INCOMPLETE",
    "TASK_STATUS_INTERRUPTED",
    "TASK_STATUS_CLOSED",
    "TASK_STATUS_TIMEOUT",
    "TASK_STATUS_ERROR",
]
RUNTIME = [
    "AgentRuntime",
    "AgentDef",
    "Budget",
    "Handle",
    "HandleView",
    "InboxItem",
    "PostResult",
    "SpawnError",
    "TaskResult",
    "Clock",
    "AsyncioClock",
]
SURFACE = [
    "Agent",
    "agent",
    "agent_from_dir",
    "start_agent",
    "StartedAgent",
    "compose_soul",
    "memory_tool",
    "BOOTSTRAP_ORDER",
    "HEARTBEAT_OK",
]

# module -> every name COMPAT §1 lists for it (required and "also").
PATHS: dict[str, list[str]] = {
    "toolnexus.types": [
        "Tool",
        "ToolResult",
        "ToolContext",
        "Request",
        "Answer",
        "pending",
        "auth_required",
        "answer_output",
        "answer_declined",
        "pending_of",
        "sanitize",
        "JSONSchema",
        "ToolSource",
        "McpStatus",
        "ExecuteFn",
    ],
    "toolnexus.client": [
        "Client",
        "Conversation",
        "create_client",
        "create_in_process_client",
        "RunResult",
        "ConversationStore",
        "InMemoryConversationStore",
        "HttpTransport",
        "UrllibTransport",
        "InProcessTransport",
        "RunTimeout",
        "RunCancelled",
        "ErrorInfo",
        "ErrorTier",
        "ErrorClassifier",
        "ClientStyle",
        "Hooks",
        "MetricEvent",
        "OnMetric",
        "WaitFor",
        "ProviderError",
        "MetricsRegistry",
        "REDACTED",
        "MAX_ERROR_BODY",
        "safe_error_body",
        "capped_error_body",
        "redact_identifiers",
        "RUN_STATUSES",
        "RUN_STATUS_DONE",
        "RUN_STATUS_PENDING",
        "RUN_STATUS_INCOMPLETE",
        "LIMIT_MAX_TURNS",
        "LIMIT_COMPLETION",
        "LIMIT_TIMEOUT",
        "HTTP_DEFAULT_TIMEOUT",
    ],
    "toolnexus.content": [
        "ContentPart",
        "ContentPartError",
        "UnsupportedPartError",
        "MEDIA_TYPES",
        "text",
        "image",
        "file",
        "audio",
        "part",
        "encode_part",
        "estimate_tokens",
        "summarize",
        "set_max_part_bytes",
        "get_max_part_bytes",
        "validate",
        "to_dict",
        "from_dict",
        "is_part_dict",
        "normalize_parts",
        "decoded_len",
        "describe_part",
        "placeholder_text",
        "BinaryReadable",
        "PartSource",
    ],
    "toolnexus.translate": [
        "TranslateResult",
        "TranslatedToolCall",
        "openai_messages_to_anthropic",
        "openai_tools_to_anthropic",
        "openai_tool_choice_to_anthropic",
        "finish_reason_for",
        "args_string",
        "args_object",
        "content_text",
        "tool_calls_of",
        "has_system_message",
        "part_to_anthropic",
        "anthropic_blocks",
    ],
    "toolnexus.toolkit": ["Toolkit", "create_toolkit"],
    "toolnexus.adapters": ["to_openai", "to_anthropic", "to_gemini"],
    "toolnexus.native": ["define_tool", "tool"],
    "toolnexus.http": ["http_tool", "DEFAULT_TIMEOUT"],
    "toolnexus.mcp_source": [
        "load_mcp",
        "load_mcp_with_context",
        "list_mcp_tools",
        "McpSource",
        "McpInventory",
        "ToolInfo",
        "McpConfig",
        "ServerConfig",
        "DEFAULT_TIMEOUT",
        "parse_mcp_config",
        "is_enabled",
        "is_remote",
        "apply_tools_filter",
        "expand_env_headers",
        "elicitation_to_request",
        "answer_to_elicit_result",
        "MAX_LIST_PAGES",
    ],
    "toolnexus.skill": [
        "load_skills",
        "list_skills",
        "SkillDef",
        "SkillInfo",
        "SkillSkip",
        "SkillSource",
        "SkillInventory",
        "SKILL_TOOL_DESCRIPTION",
        "SKILLS_PROMPT_PREAMBLE",
        "SkillProvider",
        "SkillSkipReason",
    ],
    "toolnexus.acp": [
        "ACPClient",
        "ACPOptions",
        "ACPError",
        "ACPPermissionTimeoutError",
        "load_acp",
    ],
    "toolnexus.builtin": [
        "BuiltinsConfig",
        "builtins_enabled",
        "create_builtin_tools",
        "select_builtins",
        "builtin_shell",
        "MEDIA_TYPES",
        "IGNORE_DIRS",
        "KILL_GRACE_MS",
    ],
    "toolnexus.agents": [
        *HARNESS,
        *LIMITS_AND_STATUSES,
        *RUNTIME,
        *SURFACE,
        "compactor",
        "estimate_tokens",
    ],
    "toolnexus.agents.runtime": [
        *RUNTIME,
        *LIMITS_AND_STATUSES,
        "DEFAULT_MAX_TURNS",
        "DEFAULT_MAX_CONCURRENT",
        "DEFAULT_MAX_DEPTH",
        "HandleState",
    ],
    "toolnexus.agents.surface": [*SURFACE, "HEARTBEAT_PROMPT", "MAX_BOOTSTRAP_FILE_BYTES"],
    "toolnexus.agents.loop": [*HARNESS, "Guardrail", "LOOP_UNSUPPORTED_FIELDS"],
    "toolnexus.agents.compaction": ["compactor", "estimate_tokens"],
    "toolnexus.classifier": [
        "NoulQuestion",
        "NoulCriteria",
        "ChoiceQuestion",
        "ScoreQuestion",
        "choice_over",
        "question_wire",
        "questions_wire",
        "NoulAnswer",
        "ChoiceAnswer",
        "ScoreAnswer",
        "Decision",
        "ClassifierUsage",
        "DecisionAnswer",
        "Question",
        "ClassifierStyle",
        "canonical_json",
        "canonical_request",
        "near_uniform",
        "RecordedDecision",
        "ClassifierResponse",
        "ClassifierTransport",
        "ClassifierError",
        "Classifier",
        "create_classifier",
        "CLASSIFIER_BACKENDS",
        "DEFAULT_CLASSIFIER_BASE_URL",
        "DEFAULT_CLASSIFIER_MODEL",
        "DEFAULT_CLASSIFIER_API_KEY_ENV",
        "DEFAULT_CLASSIFIER_TIMEOUT",
        "METRIC_CLASSIFIER_EVALUATE",
        "METRIC_CLASSIFIER_WARNING",
        "MAX_CHOICE_OPTIONS",
        "MIN_SCORE_LEVELS",
        "MAX_SCORE_LEVELS",
        "NEAR_UNIFORM_TOLERANCE",
    ],
    "toolnexus.judge": [
        "Bands",
        "noul",
        "choice",
        "score",
        "questions",
        "state",
        "context",
        "JudgeAnswer",
        "ask",
        "Rule",
        "Policy",
        "Outcome",
        "decide",
        "gate",
        "static_classifier",
        "decision_wire",
        "question_from_wire",
        "Tape",
        "read",
        "DEFAULT_BANDS",
    ],
    "toolnexus.judge_batteries": [
        "ToolGuardClassifier",
        "ToolGuardVerdict",
        "ToolRelevanceClassifier",
        "SkillRelevanceClassifier",
        "RelevanceVerdict",
        "ToolResultFilterClassifier",
        "FilterVerdict",
        "IsCompleteClassifier",
        "CompleteVerdict",
        "AgentRouterClassifier",
        "AgentVerdict",
        "ContentGuardClassifier",
        "ContentVerdict",
        "ContentGuardBlocked",
        "ModelRouterClassifier",
        "ModelVerdict",
        "DEFAULT_DIMENSIONS",
        "RISK_RUBRIC",
        "latest_user_text",
        "ROLE_TOOL_GUARD",
        "ROLE_TOOL_RELEVANCE",
        "ROLE_SKILL_RELEVANCE",
        "ROLE_TOOL_RESULT_FILTER",
        "ROLE_IS_COMPLETE",
        "ROLE_AGENT_ROUTER",
        "ROLE_CONTENT_GUARD",
        "ROLE_MODEL_ROUTER",
    ],
}

# Modules that are nothing but re-exports: every public attribute is in ``__all__``.
THIN = {
    "toolnexus.types",
    "toolnexus.adapters",
    "toolnexus.native",
    "toolnexus.http",
    "toolnexus.mcp_source",
    "toolnexus.skill",
    "toolnexus.builtin",
    "toolnexus.agents.surface",
    "toolnexus.classifier",
    "toolnexus.judge",
    "toolnexus.judge_batteries",
}

# Names whose top-level object is deliberately another one (COMPAT §1: per-part
# ``toolnexus.estimate_tokens``; ``toolnexus.Agent`` is the A2A card descriptor).
NOT_TOP_LEVEL = {
    "ExecuteFn",
    "MAX_LIST_PAGES",
    "SkillProvider",
    "SkillSkipReason",
    "openai_tools_to_anthropic",
    "openai_tool_choice_to_anthropic",
    "finish_reason_for",
    "args_string",
    "args_object",
    "content_text",
    "tool_calls_of",
    "has_system_message",
    "part_to_anthropic",
    "anthropic_blocks",
    "validate",
    "to_dict",
    "from_dict",
    "is_part_dict",
    "normalize_parts",
    "decoded_len",
    "describe_part",
    "placeholder_text",
    "BinaryReadable",
    "PartSource",
    "builtin_shell",
    "IGNORE_DIRS",
    "KILL_GRACE_MS",
}
# ``toolnexus.DEFAULT_TIMEOUT`` is the MCP one (COMPAT §4 turns it into 30.0 seconds); the
# HTTP tool's own is ``toolnexus.http.DEFAULT_TIMEOUT``.
NOT_TOP_LEVEL_IN = {"toolnexus.http": {"DEFAULT_TIMEOUT"}}


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_module_declares_all_and_lists_every_compat_name(path: str) -> None:
    module = _module(path)
    declared = module.__all__
    assert isinstance(declared, list)
    missing = [n for n in PATHS[path] if n not in declared]
    assert missing == []
    assert [n for n in declared if not hasattr(module, n)] == []


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_name_is_the_same_object_as_the_top_level_one(path: str) -> None:
    module = _module(path)
    home = toolnexus.agents if path.startswith("toolnexus.agents") else toolnexus
    checked = 0
    for name in PATHS[path]:
        if name in NOT_TOP_LEVEL | NOT_TOP_LEVEL_IN.get(path, set()) or not hasattr(home, name):
            continue
        assert getattr(module, name) is getattr(home, name), name
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("path", sorted(THIN))
def test_a_thin_module_leaks_nothing_beyond_its_all(path: str) -> None:
    module = _module(path)
    public = {n for n in vars(module) if not n.startswith("_")}
    assert public - set(module.__all__) == set()


def test_top_level_gains_the_client_names_the_package_exports() -> None:
    for name in ("ClientStyle", "HttpTransport", "UrllibTransport", "InProcessTransport"):
        assert getattr(toolnexus, name) is getattr(
            importlib.import_module("toolnexus.client"), name
        )
    assert toolnexus.HTTP_DEFAULT_TIMEOUT == 30.0
    assert isinstance(toolnexus.HTTP_DEFAULT_TIMEOUT, float)


TOP_LEVEL_ADDED = [
    "ACPClient",
    "ACPError",
    "ACPOptions",
    "ACPPermissionTimeoutError",
    "load_acp",
    "ContentPart",
    "ContentPartError",
    "UnsupportedPartError",
    "MEDIA_TYPES",
    "text",
    "image",
    "file",
    "audio",
    "part",
    "encode_part",
    "estimate_tokens",
    "summarize",
    "set_max_part_bytes",
    "get_max_part_bytes",
]


@pytest.mark.parametrize("name", TOP_LEVEL_ADDED)
def test_top_level_gains_the_acp_and_content_part_names(name: str) -> None:
    home = "toolnexus.acp" if name.startswith(("ACP", "load_acp")) else "toolnexus.content"
    assert name in toolnexus.__all__
    assert getattr(toolnexus, name) is getattr(importlib.import_module(home), name)


def test_the_two_names_that_differ_between_the_levels() -> None:
    import toolnexus.agents.compaction as compaction
    import toolnexus.agents.loop as loop

    transcript = [{"role": "user", "content": "x" * 400}]
    assert toolnexus.agents.estimate_tokens is compaction.estimate_tokens
    assert toolnexus.agents.estimate_tokens(transcript) >= 100  # per transcript
    assert toolnexus.estimate_tokens(toolnexus.text("x" * 400)) == 100  # per part
    assert toolnexus.agents.Outcome is loop.Outcome


def test_the_units_and_constants_compat_pins() -> None:
    import toolnexus.client as client
    import toolnexus.http as http
    import toolnexus.mcp_source as mcp_source

    assert http.DEFAULT_TIMEOUT == 30.0
    assert mcp_source.MAX_LIST_PAGES == 1000
    assert client.RUN_STATUSES == ("done", "pending", "incomplete")
    assert (client.RUN_STATUS_DONE, client.RUN_STATUS_PENDING, client.RUN_STATUS_INCOMPLETE) == (
        "done",
        "pending",
        "incomplete",
    )
    assert (client.LIMIT_MAX_TURNS, client.LIMIT_COMPLETION, client.LIMIT_TIMEOUT) == (
        "maxTurns",
        "completion",
        "timeout",
    )
    assert client.REDACTED == "«redacted»"
    assert client.MAX_ERROR_BODY == 200
    import toolnexus.agents.runtime as runtime
    import toolnexus.agents.surface as surface
    import toolnexus.builtin as builtin

    assert (runtime.DEFAULT_MAX_TURNS, runtime.DEFAULT_MAX_CONCURRENT) == (6, 8)
    assert runtime.DEFAULT_MAX_DEPTH == 3
    assert builtin.KILL_GRACE_MS == 2000
    assert surface.MAX_BOOTSTRAP_FILE_BYTES == 2 * 1024 * 1024


def test_the_error_body_helpers() -> None:
    import toolnexus.client as client

    assert client.safe_error_body(401, "key sk-123 is bad") == ""
    assert client.safe_error_body(403, "nope") == ""
    body = '{"error": "x", "user_id": "u-9", "org_id": 42, "organization": "acme"}'
    assert client.redact_identifiers(body) == (
        '{"error": "x", "user_id": "«redacted»", "org_id": "«redacted»", '
        '"organization": "«redacted»"}'
    )
    assert client.capped_error_body(500, "a" * 200) == "a" * 200
    assert client.capped_error_body(500, "a" * 201) == "a" * 200 + "…"
    assert client.capped_error_body(401, "key sk-123 is bad" * 20) == ""
    long = '{"user_id": "u-9", "pad": "' + "x" * 300 + '"}'
    assert client.capped_error_body(500, long).startswith('{"user_id": "«redacted»"')


def test_the_translate_helpers_convert_openai_shapes() -> None:
    import toolnexus.translate as translate

    declared = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add.",
                "parameters": {"type": "object", "properties": {"a": {"type": "number"}}},
            },
        }
    ]
    assert translate.openai_tools_to_anthropic(declared) == [
        {
            "name": "add",
            "description": "Add.",
            "input_schema": {"type": "object", "properties": {"a": {"type": "number"}}},
        }
    ]
    assert translate.openai_tool_choice_to_anthropic("required") == {"type": "any"}
    assert translate.openai_tool_choice_to_anthropic(
        {"type": "function", "function": {"name": "add"}}
    ) == {"type": "tool", "name": "add"}


def test_the_translate_helpers_read_openai_shapes() -> None:
    import toolnexus.translate as translate

    assert [translate.finish_reason_for(r) for r in ("end_turn", "tool_use", "max_tokens")] == [
        "stop",
        "tool_calls",
        "length",
    ]
    assert translate.finish_reason_for("refusal") == "content_filter"
    assert translate.finish_reason_for("end_turn", True) == "tool_calls"
    assert translate.args_string({"a": 1}) == '{"a":1}'
    assert translate.args_string('{"a": 1}') == '{"a": 1}'
    assert translate.args_string(None) == translate.args_string("") == "{}"
    assert translate.args_object('{"a": 1}') == {"a": 1}
    for hostile in ("not json", "[1, 2]", "3", None, 7, '{"a": '):
        assert translate.args_object(hostile) == {}
    assert (
        translate.content_text([{"type": "text", "text": "a"}, {"type": "image_url"}, "b"]) == "ab"
    )
    assert translate.content_text(None) == translate.content_text(42) == ""
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    assert translate.tool_calls_of({"role": "assistant", "tool_calls": [*calls, "junk"]}) == calls
    assert translate.tool_calls_of({"role": "assistant", "toolCalls": calls}) == calls
    assert translate.tool_calls_of({"role": "assistant", "content": "hi"}) == []
    assert translate.tool_calls_of("not a message") == []
    assert translate.has_system_message([{"role": "user"}, {"role": "system", "content": "S"}])
    assert translate.has_system_message([{"role": "developer", "content": "D"}])
    assert not translate.has_system_message([{"role": "user", "content": "hi"}, "junk"])


def test_the_translate_part_helpers_render_anthropic_blocks() -> None:
    import toolnexus.translate as translate

    png = toolnexus.image(b"\x89PNG\r\n", mime_type="image/png")
    block = translate.part_to_anthropic(png)
    assert block == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"},
    }
    assert translate.part_to_anthropic(png.to_dict()) == block
    with pytest.raises(toolnexus.UnsupportedPartError):
        translate.part_to_anthropic(toolnexus.audio(b"ID3", mime_type="audio/mpeg"))
    with pytest.raises(toolnexus.ContentPartError):
        translate.part_to_anthropic({"type": "image"})
    assert translate.anthropic_blocks("hi") == [{"type": "text", "text": "hi"}]
    assert translate.anthropic_blocks("") == []
    content = ["look ", png, {"type": "text", "text": "here"}]
    blocks = translate.anthropic_blocks(content)
    assert blocks == [{"type": "text", "text": "look here"}, block]
    audio = translate.anthropic_blocks([toolnexus.audio(b"ID3", mime_type="audio/mpeg")])
    assert audio[0]["type"] == "text"
    assert audio[0]["text"].startswith("[unsupported audio part (audio/mpeg, 3 bytes)]")


def test_the_package_ships_py_typed() -> None:
    from importlib.resources import files

    marker = files("toolnexus") / "py.typed"
    assert marker.is_file()


COMPAT_MODULES = {
    "toolnexus.types",
    "toolnexus.adapters",
    "toolnexus.native",
    "toolnexus.http",
    "toolnexus.mcp_source",
    "toolnexus.skill",
    "toolnexus.builtin",
    "toolnexus.llm.urllib_transport",
    "urllib.request",
}


def test_importing_the_package_loads_none_of_the_compat_modules() -> None:
    probe = (
        "import json, sys; import toolnexus; "
        f"print(json.dumps(sorted(m for m in sys.modules if m in {COMPAT_MODULES!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=30
    )
    assert json.loads(done.stdout) == []
    # ... and the probe sees one when it is imported (so the check above can fail).
    probe_on = probe.replace("import toolnexus;", "import toolnexus, toolnexus.http;")
    done = subprocess.run(
        [sys.executable, "-c", probe_on], capture_output=True, text=True, check=True, timeout=30
    )
    assert json.loads(done.stdout) == ["toolnexus.http"]
