"""``toolnexus.judge_batteries``: the ready-made judgments under the existing package's path.

A thin re-export of the batteries in `toolnexus.judging`: every name is the same object as
``toolnexus.<name>`` (COMPAT §10).
"""

from .errors import ContentGuardBlocked
from .judging.battery import (
    RISK_RUBRIC,
    ROLE_AGENT_ROUTER,
    ROLE_CONTENT_GUARD,
    ROLE_IS_COMPLETE,
    ROLE_MODEL_ROUTER,
    ROLE_SKILL_RELEVANCE,
    ROLE_TOOL_GUARD,
    ROLE_TOOL_RELEVANCE,
    ROLE_TOOL_RESULT_FILTER,
    Hook,
    latest_user_text,
)
from .judging.guards import (
    DEFAULT_DIMENSIONS,
    ContentGuardClassifier,
    ContentVerdict,
    ToolGuardClassifier,
    ToolGuardVerdict,
)
from .judging.relevance import (
    CompleteVerdict,
    FilterVerdict,
    IsCompleteClassifier,
    RelevanceVerdict,
    SkillRelevanceClassifier,
    ToolRelevanceClassifier,
    ToolResultFilterClassifier,
)
from .judging.routers import (
    AgentRouterClassifier,
    AgentVerdict,
    ModelRouterClassifier,
    ModelVerdict,
)

__all__ = [
    "DEFAULT_DIMENSIONS",
    "RISK_RUBRIC",
    "ROLE_AGENT_ROUTER",
    "ROLE_CONTENT_GUARD",
    "ROLE_IS_COMPLETE",
    "ROLE_MODEL_ROUTER",
    "ROLE_SKILL_RELEVANCE",
    "ROLE_TOOL_GUARD",
    "ROLE_TOOL_RELEVANCE",
    "ROLE_TOOL_RESULT_FILTER",
    "AgentRouterClassifier",
    "AgentVerdict",
    "CompleteVerdict",
    "ContentGuardBlocked",
    "ContentGuardClassifier",
    "ContentVerdict",
    "FilterVerdict",
    "Hook",
    "IsCompleteClassifier",
    "ModelRouterClassifier",
    "ModelVerdict",
    "RelevanceVerdict",
    "SkillRelevanceClassifier",
    "ToolGuardClassifier",
    "ToolGuardVerdict",
    "ToolRelevanceClassifier",
    "ToolResultFilterClassifier",
    "latest_user_text",
]
