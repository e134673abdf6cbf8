"""``toolnexus.classifier``: the classifier under the existing package's module path.

A thin re-export of `toolnexus.judging`: every name is the same object as ``toolnexus.<name>``
(COMPAT §10). ``_decision_from_wire`` is the existing package's private name for
`decision_from_wire`, kept because its own tests import it.
"""

from .errors import ClassifierError
from .judging.answers import (
    NEAR_UNIFORM_TOLERANCE,
    ChoiceAnswer,
    ClassifierUsage,
    Decision,
    DecisionAnswer,
    NoulAnswer,
    ScoreAnswer,
    decision_from_wire,
    near_uniform,
)
from .judging.backends import RecordedDecision
from .judging.classifier import (
    CLASSIFIER_BACKENDS,
    DEFAULT_CLASSIFIER_API_KEY_ENV,
    DEFAULT_CLASSIFIER_BASE_URL,
    DEFAULT_CLASSIFIER_MODEL,
    DEFAULT_CLASSIFIER_TIMEOUT,
    METRIC_CLASSIFIER_EVALUATE,
    METRIC_CLASSIFIER_WARNING,
    Classifier,
    ClassifierBackend,
    ClassifierStyle,
    create_classifier,
)
from .judging.questions import (
    MAX_CHOICE_OPTIONS,
    MAX_SCORE_LEVELS,
    MIN_SCORE_LEVELS,
    ChoiceQuestion,
    NoulCriteria,
    NoulQuestion,
    Question,
    ScoreQuestion,
    canonical_json,
    canonical_request,
    choice_over,
    question_wire,
    questions_wire,
)
from .judging.systemone import ClassifierResponse, ClassifierTransport

_decision_from_wire = decision_from_wire

__all__ = [
    "CLASSIFIER_BACKENDS",
    "DEFAULT_CLASSIFIER_API_KEY_ENV",
    "DEFAULT_CLASSIFIER_BASE_URL",
    "DEFAULT_CLASSIFIER_MODEL",
    "DEFAULT_CLASSIFIER_TIMEOUT",
    "MAX_CHOICE_OPTIONS",
    "MAX_SCORE_LEVELS",
    "METRIC_CLASSIFIER_EVALUATE",
    "METRIC_CLASSIFIER_WARNING",
    "MIN_SCORE_LEVELS",
    "NEAR_UNIFORM_TOLERANCE",
    "ChoiceAnswer",
    "ChoiceQuestion",
    "Classifier",
    "ClassifierBackend",
    "ClassifierError",
    "ClassifierResponse",
    "ClassifierStyle",
    "ClassifierTransport",
    "ClassifierUsage",
    "Decision",
    "DecisionAnswer",
    "NoulAnswer",
    "NoulCriteria",
    "NoulQuestion",
    "Question",
    "RecordedDecision",
    "ScoreAnswer",
    "ScoreQuestion",
    "canonical_json",
    "canonical_request",
    "choice_over",
    "create_classifier",
    "decision_from_wire",
    "near_uniform",
    "question_wire",
    "questions_wire",
]
