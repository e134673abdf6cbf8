"""``toolnexus.judge``: simple judgments under the existing package's module path.

A thin re-export of `toolnexus.judging.judge`: every name is the same object as
``toolnexus.<name>`` (COMPAT §10).
"""

from .judging.judge import (
    DEFAULT_BANDS,
    Bands,
    JudgeAnswer,
    NamedQuestion,
    Outcome,
    Policy,
    Rule,
    Tape,
    ask,
    choice,
    context,
    decide,
    decision_wire,
    gate,
    noul,
    question_from_wire,
    questions,
    read,
    score,
    state,
    static_classifier,
)

__all__ = [
    "DEFAULT_BANDS",
    "Bands",
    "JudgeAnswer",
    "NamedQuestion",
    "Outcome",
    "Policy",
    "Rule",
    "Tape",
    "ask",
    "choice",
    "context",
    "decide",
    "decision_wire",
    "gate",
    "noul",
    "question_from_wire",
    "questions",
    "read",
    "score",
    "state",
    "static_classifier",
]
