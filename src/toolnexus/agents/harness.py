"""The harness's gates: completion checks that send unfinished work back, and guardrails.

::

    done = Completion(verify=all_todos_done, max_attempts=3)
    lead = agent("lead", does="ships the change", completion=done,
                 guardrails=[lambda event: "no deletes" if event["name"] == "rm" else ""])

A **completion check** runs after a run answers: when its `Verdict` is not ``ok``, the agent is
asked again with ``Your work did not verify: <reason>. Fix it and finish.``, up to
``max_attempts`` times; the verifier sees the tool calls accumulated across attempts. The
runtime gates every turn of an agent whose definition has a ``completion`` (delegated children
too), under the turn budget, and keeps the gate's progress in the handle's row, so a turn that
suspends inside the gate resumes at the same attempt (see `toolnexus.agents.runtime`).

A **guardrail** is a synchronous ``g(event) -> str | None`` over the ``before_tool`` event:
``None``, ``""`` or ``"allow"`` permit; any other string denies the call (the tool never runs).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from .._types import ToolResult
from ..errors import CallbackError, UsageError

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "LOOP_UNSUPPORTED_FIELDS",
    "Completion",
    "Guardrail",
    "GuardrailTypeError",
    "Verdict",
    "all_todos_done",
    "guarded_hooks",
    "harness",
    "loop_unsupported",
    "run_gated",
]

Guardrail: TypeAlias = Callable[[dict[str, Any]], Any]
"""``g(before_tool event) -> str | None``: ``None`` / ``""`` / ``"allow"`` permit."""

DEFAULT_MAX_ATTEMPTS = 3
"""The attempts a `Completion` with ``max_attempts=0`` (its default) gets."""

LOOP_UNSUPPORTED_FIELDS = ("tools", "team", "waitFor", "onMetric")
"""The spec fields a `toolnexus.agents.Loop` cannot honour, canonical names, in order."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A completion check's answer: ``ok``, else ``reason`` says what is still wrong."""

    ok: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Completion:
    """Gate a run on ``verify(result) -> Verdict`` (sync or async).

    ``max_attempts`` counts the runs, the first included; ``0`` (the default) means
    `DEFAULT_MAX_ATTEMPTS`.
    """

    verify: Callable[[Any], Verdict | Awaitable[Verdict]] | None
    max_attempts: int = 0


# merge: move to _compat
class GuardrailTypeError(CallbackError, TypeError):
    """A guardrail returned something other than a string (or ``None``): a library misuse,
    both a `CallbackError` (it passes the hook wrapper untouched) and a ``TypeError``."""


class CompletionValueError(UsageError, ValueError):  # merge: move to _compat
    """A `Completion` that cannot run: no ``verify``, or ``max_attempts`` not an int ≥ 1."""


def harness(**spec: Any) -> dict[str, Any]:
    """The options of a `toolnexus.agents.Loop`, unchanged (a named, checkable spot)."""
    return spec


def attempts_of(completion: Completion) -> int:
    """The attempts ``completion`` allows, validated.

    Raises:
        CompletionValueError: no ``verify``, or ``max_attempts`` is not an integer ≥ 0.
    """
    n = completion.max_attempts
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise CompletionValueError("toolnexus: Completion.max_attempts must be an integer >= 1")
    if completion.verify is None or not callable(completion.verify):
        raise CompletionValueError("toolnexus: Completion.verify is required")
    return n or DEFAULT_MAX_ATTEMPTS


def retry_prompt(reason: str) -> str:
    """What a failed attempt sends next."""
    return f"Your work did not verify: {reason}. Fix it and finish."


def verifying_note(attempt: int, reason: str) -> str:
    """Appended to a retry that stopped for another reason than a question."""
    return f" [while verifying: attempt {attempt} last failed: {reason}]"


def failed_text(attempts: int, reason: str) -> str:
    return f"completion.verify failed {attempts}x: {reason}"


async def verdict_of(completion: Completion, result: Any) -> str | None:
    """``None`` when ``result`` verifies, else the reason it does not."""
    assert completion.verify is not None
    verdict: Any = completion.verify(result)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    if isinstance(verdict, Verdict):
        return None if verdict.ok else (verdict.reason or "unspecified")
    if isinstance(verdict, bool):
        return None if verdict else "unspecified"
    raise CompletionValueError(
        f"Completion.verify must return a Verdict, got {type(verdict).__name__}"
    )


async def run_gated(
    ask: Callable[[str], Awaitable[Any]], prompt: str, completion: Completion | None
) -> Any:
    """``await ask(prompt)``, then, while ``completion`` does not verify, ask again.

    Each attempt's tool calls are appended to one list that every later result carries in
    ``tool_calls``. A result that is not ``done`` returns at once. After the last failed
    attempt the result is ``incomplete`` with ``limit="completion"``.

    Raises:
        CompletionValueError: ``completion`` has no ``verify`` or a bad ``max_attempts``
            (a ``ValueError``).
    """
    if completion is None:
        return await ask(prompt)
    attempts = attempts_of(completion)
    calls: list[Any] = []
    text, reason = prompt, ""
    result: Any = None
    for attempt in range(1, attempts + 1):
        result = await ask(text)
        calls.extend(result.tool_calls)
        result.tool_calls = list(calls)
        if hasattr(result, "tool_call_count"):
            result.tool_call_count = len(calls)
        if result.status != "done":
            if attempt > 1 and result.status != "pending":
                result.text = result.text + verifying_note(attempt, reason)
            return result
        failed = await verdict_of(completion, result)
        if failed is None:
            return result
        reason = failed
        text = retry_prompt(reason)
    result.status = "incomplete"
    result.limit = "completion"
    result.text = failed_text(attempts, reason)
    return result


def _field(item: Any, name: str) -> Any:
    if isinstance(item, Mapping):
        return cast(Mapping[str, Any], item).get(name)
    return getattr(item, name, None)


def all_todos_done(result: Any) -> Verdict:
    """A completion check: the last ``todowrite`` call's list has no open item."""
    last: Any = None
    calls: list[Any] = list(_field(result, "tool_calls") or [])
    for call in calls:
        if _field(call, "name") == "todowrite":
            last = call
    metadata = _field(last, "metadata") if last is not None else None
    todos = _field(metadata, "todos") if metadata is not None else None
    if not isinstance(todos, list):
        return Verdict(True)
    still = [
        str(_field(t, "text") or _field(t, "content") or "")
        for t in cast(list[Any], todos)
        if not _field(t, "completed") and _field(t, "status") not in ("completed", "done")
    ]
    if not still:
        return Verdict(True)
    return Verdict(False, f"{len(still)} item(s) still open: {'; '.join(still)}")


def _what(value: object) -> str:
    return "a coroutine" if inspect.iscoroutine(value) else type(value).__name__


def guarded_hooks(guardrails: Sequence[Guardrail] | None, hooks: Any) -> Any:
    """``hooks`` with ``guardrails`` run first in ``before_tool`` (first deny wins).

    No guardrails: ``hooks`` unchanged. Otherwise a dict of the hooks' entries (a mapping is
    copied, an object gives its ``__dict__``) with a new ``before_tool``: each guardrail is
    called in order; a denial short-circuits with ``{"result": ToolResult("denied: <reason>",
    True)}``; when all permit, the earlier ``before_tool`` (if any) runs and its return is used.

    Raises (from the hook):
        GuardrailTypeError: a guardrail returned neither a string nor ``None``.
    """
    rails = list(guardrails or [])
    if not rails:
        return hooks
    if hooks is None:
        merged: dict[str, Any] = {}
    elif isinstance(hooks, Mapping):
        merged = dict(cast(Mapping[str, Any], hooks))
    else:
        attrs = cast(dict[str, Any], vars(hooks))
        merged = {k: v for k, v in attrs.items() if not k.startswith("_")}
    prior = merged.get("before_tool")

    async def before_tool(event: dict[str, Any]) -> Any:
        for rail in rails:
            verdict = rail(event)
            if verdict is None or verdict in ("", "allow"):
                continue
            if not isinstance(verdict, str):
                if inspect.iscoroutine(verdict):
                    verdict.close()
                raise GuardrailTypeError(
                    f"guardrail returned {_what(verdict)}: a guardrail must return a str "
                    'synchronously ("" or "allow" to permit, any other string to deny). Do '
                    "asynchronous work in hooks.before_tool, which is awaited."
                )
            return {"result": ToolResult(f"denied: {verdict}", True)}
        if prior is None:
            return None
        value = prior(event)
        if inspect.isawaitable(value):
            value = await value
        return value

    merged["before_tool"] = before_tool
    return merged


def loop_unsupported(spec: Any) -> list[str]:
    """The fields of an agent spec a `Loop` cannot honour, canonical names, in order."""
    uses: Any = _field(spec, "uses")
    out: list[str] = []
    if isinstance(uses, Mapping) and cast(Mapping[str, Any], uses).get("tools"):
        out.append("tools")
    if _field(spec, "team"):
        out.append("team")
    if _field(spec, "wait_for") is not None:
        out.append("waitFor")
    if _field(spec, "on_metric") is not None:
        out.append("onMetric")
    return out
