"""`Loop`: one agent's soul, gates and budget on a plain client, without a runtime.

::

    coder = agent("coder", does="fixes the bug", soul="You fix bugs.",
                  completion=Completion(verify=all_todos_done, max_attempts=3))
    loop = coder.loop({"base_url": url, "model": "gpt-4o", "api_key": key}, toolkit)
    outcome = await loop.run("Fix issue 12.")
    print(outcome.status, outcome.attempts, outcome.text)

A `Loop` keeps the conversation between its runs (``loop.history``) and counts the turns of all
of them. It has no tree: a spec's own tools, team, ``wait_for`` and ``on_metric`` are not used
(`loop_unsupported` names them); pass tools in the toolkit, and ``wait_for`` / ``on_metric`` in
the client options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._types import Message, RunResult
from ..errors import UsageError
from .harness import (
    LOOP_UNSUPPORTED_FIELDS,
    Completion,
    Guardrail,
    Verdict,
    all_todos_done,
    guarded_hooks,
    harness,
    loop_unsupported,
    run_gated,
)

if TYPE_CHECKING:
    from ..client import Client
    from .spec import Agent

__all__ = [
    "LOOP_UNSUPPORTED_FIELDS",
    "Completion",
    "Guardrail",
    "Loop",
    "Outcome",
    "RunOptions",
    "Verdict",
    "all_todos_done",
    "guarded_hooks",
    "harness",
    "loop_unsupported",
    "run_gated",
]

LoopStatus = Literal["idle", "running", "pending", "incomplete", "error"]


@dataclass(slots=True)
class Outcome:
    """What one `Loop.run` came to.

    ``stopped_by`` is empty for ``done``; for a completion stop, the failure text; otherwise
    ``run reported <status>``. ``attempts`` counts the runs the completion gate made,
    ``turns`` their model calls; ``result`` is the last `RunResult`.
    """

    text: str = ""
    status: str = "done"
    stopped_by: str = ""
    attempts: int = 0
    turns: int = 0
    result: RunResult | None = None


@dataclass(slots=True)
class RunOptions:
    """Per-call options of `Loop.run`: ``model`` overrides the client's for this run."""

    model: str = ""


class Loop:
    """Run ``agent`` on a client built from ``options`` (see the module docstring)."""

    def __init__(self, agent: Agent, options: Mapping[str, Any], toolkit: Any = None) -> None:
        if not isinstance(options, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError("Loop options must be a mapping of create_client options")
        self.agent = agent
        self.options: dict[str, Any] = dict(options)
        self.toolkit = toolkit
        self.status: LoopStatus = "idle"
        self.turns = 0
        self.history: list[Message] = []

    def _client(self, model: str) -> Client:
        from ..client import create_client, create_in_process_client

        opts = dict(self.options)
        spec = self.agent
        opts.setdefault("system_prompt", spec.definition.system_prompt or None)
        chosen = model or opts.get("model") or ""
        if (not chosen or chosen == "inherit") and spec.model and spec.model != "inherit":
            chosen = spec.model
        opts["model"] = chosen
        if spec.budget is not None and spec.budget.max_turns is not None:
            opts.setdefault("max_turns", spec.budget.max_turns)
        opts["hooks"] = guarded_hooks(spec.guardrails, spec.hooks or opts.get("hooks"))
        generate = opts.pop("in_process", None) or opts.pop("generate", None)
        if generate is not None:  # merge: `create_client(in_process=)` on the compat branch
            for wire_only in ("base_url", "style", "api_key", "headers", "retries"):
                opts.pop(wire_only, None)
            opts.pop("retry_base_ms", None)
            opts.pop("http_transport", None)
            opts.pop("on_error", None)
            return create_in_process_client(generate=generate, **opts)
        return create_client(**opts)

    async def run(self, prompt: str, model: str = "") -> Outcome:
        """Run the agent on ``prompt`` through its completion gate; the history carries on.

        Raises:
            whatever the client raises (a provider failure after retries, a bad option); the
            loop's ``status`` is then ``"error"``.
        """
        self.status = "running"
        attempts = 0
        turns_before = self.turns
        try:
            async with self._client(model) as client:

                async def ask(text: str) -> RunResult:
                    nonlocal attempts
                    attempts += 1
                    result = await client.run(text, self.toolkit, history=self.history)
                    self.history = list(result.messages)
                    self.turns += result.turns
                    return result

                completion: Completion | None = self.agent.completion
                result: RunResult = await run_gated(ask, prompt, completion)
        except BaseException:
            self.status = "error"
            raise
        if result.status == "done":
            self.status = "idle"
            return Outcome(result.text, "done", "", attempts, self.turns - turns_before, result)
        self.status = result.status
        stopped = result.text if result.limit == "completion" else f"run reported {result.status}"
        turns = self.turns - turns_before
        return Outcome(result.text, result.status, stopped, attempts, turns, result)
