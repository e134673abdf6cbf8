"""The harness's gates: completion checks that send unfinished work back, and guardrails.

::

    done = Completion(verify=all_todos_done, max_attempts=3)
    lead = agent("lead", does="ships the change", completion=done,
                 guardrails=[lambda event: "no deletes" if event["name"] == "rm" else ""])

A **completion check** runs after a run answers: when its `Verdict` is not ``ok``, the agent is
asked again with ``Your work did not verify: <reason>. Fix it and finish.``, up to
``max_attempts`` times; the verifier sees the tool calls accumulated across attempts. The
runtime gates every turn of an agent whose definition has a ``completion`` (delegated children
too), under the turn budget, and keeps the gate's progress (`GateProgress`) in the handle's
row, so a turn that suspends inside the gate resumes at the same attempt. Both go through one
gate, `gate`: `run_gated` around any ``ask``, the runtime around a handle's engine runs
(`toolnexus.agents.turns`); each words the final failure its own way.

A **guardrail** is a synchronous ``g(event) -> str | None`` over the ``before_tool`` event:
``None``, ``""`` or ``"allow"`` permit; any other string denies the call (the tool never runs).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar, cast

from .._types import ToolResult
from ..errors import CallbackError, UsageError

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "LOOP_UNSUPPORTED_FIELDS",
    "Completion",
    "GateProgress",
    "Gated",
    "Guardrail",
    "GuardrailTypeError",
    "Verdict",
    "all_todos_done",
    "gate",
    "guarded_hooks",
    "harness",
    "loop_unsupported",
    "run_gated",
]

R = TypeVar("R")

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


@dataclass(frozen=True, slots=True, kw_only=True)
class GateProgress:
    """Where a gated turn stands: the ``attempt`` in flight, why the one before it failed
    (``reason``), and the tool ``calls`` of every attempt before it.

    The runtime keeps it in the handle's row, so a turn that suspends inside the gate resumes
    at the same attempt, in any process.
    """

    attempt: int = 1
    reason: str = ""
    calls: tuple[Any, ...] = ()

    def note(self) -> str:
        """What a retry that stopped for another reason than a question adds to its text
        (nothing on the first attempt)."""
        return verifying_note(self.attempt, self.reason) if self.attempt > 1 else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Gated(Generic[R]):
    """How the gate ended.

    ``result`` is the last attempt's (its ``tool_calls``: those of every attempt), ``progress``
    the attempt it came from; ``failed`` is the last reason when every attempt ran and none
    verified, and ``attempts`` how many the completion allows. The caller words the outcome.
    """

    result: R
    progress: GateProgress
    failed: str | None = None
    attempts: int = 1


async def gate(
    ask: Callable[[str | None], Awaitable[R]],
    completion: Completion | None,
    progress: GateProgress | None = None,
    *,
    on_retry: Callable[[GateProgress, int], None] | None = None,
) -> Gated[R]:
    """The completion gate: run an attempt, verify it, send the reason back, up to the limit.

    ``ask(None)`` runs the attempt the gate starts at (the caller's prompt, or a resumed run),
    ``ask(retry_prompt(reason))`` each retry. Every result's ``tool_calls`` becomes the calls
    of all attempts so far, which the verifier sees. A result that is not ``done`` ends the
    gate at once; ``progress`` (a gate that suspended before) starts it at that attempt.
    ``on_retry(progress, attempts)`` is told before each retry where the gate now stands.
    Without a ``completion`` the gate is one ``ask``.

    Raises:
        CompletionValueError: ``completion`` has no ``verify`` or a bad ``max_attempts``
            (checked before anything runs).
    """
    at = progress or GateProgress()
    if completion is None:
        return Gated(result=await ask(None), progress=at)
    attempts = attempts_of(completion)
    text: str | None = None
    while True:
        result = await ask(text)
        run: Any = result
        calls = [*at.calls, *run.tool_calls]
        run.tool_calls = calls
        if hasattr(run, "tool_call_count"):
            run.tool_call_count = len(calls)
        if run.status != "done":
            return Gated(result=result, progress=at, attempts=attempts)
        failed = await verdict_of(completion, result)
        if failed is None:
            return Gated(result=result, progress=at, attempts=attempts)
        if at.attempt >= attempts:
            return Gated(result=result, progress=at, failed=failed, attempts=attempts)
        at = GateProgress(attempt=at.attempt + 1, reason=failed, calls=tuple(calls))
        if on_retry is not None:
            on_retry(at, attempts)
        text = retry_prompt(failed)


async def run_gated(
    ask: Callable[[str], Awaitable[Any]], prompt: str, completion: Completion | None
) -> Any:
    """``await ask(prompt)``, then, while ``completion`` does not verify, ask again.

    Each attempt's tool calls are appended to one list that every later result carries in
    ``tool_calls``. A result that is not ``done`` returns at once. After the last failed
    attempt the result is ``incomplete`` with ``limit="completion"`` and the text
    ``completion.verify failed <n>x: <reason>``.

    Raises:
        CompletionValueError: ``completion`` has no ``verify`` or a bad ``max_attempts``
            (a ``ValueError``).
    """
    if completion is None:
        return await ask(prompt)
    end = await gate(lambda text: ask(prompt if text is None else text), completion)
    result: Any = end.result
    if end.failed is not None:
        result.status = "incomplete"
        result.limit = "completion"
        result.text = failed_text(end.attempts, end.failed)
    elif result.status not in ("done", "pending"):
        result.text = result.text + end.progress.note()
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
