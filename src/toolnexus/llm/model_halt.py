"""A model source that asks a question: the run halts at the model call, not at a tool.

An in-process model (``create_in_process_client(generate=...)``, an ACP agent) may need a human
before it can answer — an ACP agent's ``session/request_permission``. Its ``generate`` returns
``{"pending": Request}``; the transport raises `ModelSuspended`, and the engine treats the
Request like a tool's: asked inline through ``wait_for``, else the run halts ``pending`` with a
checkpoint whose halted turn has no tool call (`toolnexus.loop.checkpoint`, version 3). The
resume calls the model again with the Answer, which ``generate`` receives as
``request["answer"]`` (`model_answer`, set by the engine around that one call).
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar

from ..suspension import Answer, Request

__all__ = ["ModelSuspended", "answering", "model_answer"]

_ANSWER: ContextVar[Answer | None] = ContextVar("toolnexus_model_answer", default=None)


class ModelSuspended(Exception):
    """The model call stopped on ``request`` (internal: never reaches a host)."""

    def __init__(self, request: Request) -> None:
        super().__init__(request.prompt)
        self.request = request


def model_answer() -> Answer | None:
    """The Answer the model call in progress carries (``None``: a plain call)."""
    return _ANSWER.get()


@contextmanager
def answering(answer: Answer | None) -> Generator[None]:
    """Make ``answer`` the one `model_answer` returns for the call made inside."""
    token = _ANSWER.set(answer)
    try:
        yield
    finally:
        _ANSWER.reset(token)
