"""The commands that list what waits and answer it: ``pending``, ``answer``, ``cancel``,
``purge``. Each is a thin shell over the store; a request id may be given whole or by its
first characters (`toolnexus.cli.ids`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import UsageError
from . import codes
from .ids import resolve_id
from .shell import JsonOpt, StoreOpt, fail, guarded, json_line, say
from .stores import open_store, parse_age, record_json, reply_from_flags

if TYPE_CHECKING:  # the store modules load with the command that runs, not for ``--help``
    from ..stores.requests import PendingEntry, RunStore

__all__ = ["register"]

IdArg = Annotated[
    str,
    typer.Argument(
        metavar="REQUEST_ID", help="The request's id, or enough of its start to name one."
    ),
]


def _unknown(given: str) -> str:
    return f'no halted run waits on request "{given}"'


def register(app: typer.Typer) -> None:
    """Add the commands to ``app``."""

    @app.command()
    def pending(
        store: StoreOpt,
        kind: Annotated[
            str | None, typer.Option(metavar="KIND", help="Only this kind (approval, …).")
        ] = None,
        tool: Annotated[
            str | None, typer.Option(metavar="NAME", help="Only requests of this tool.")
        ] = None,
        conversation: Annotated[
            str | None, typer.Option(metavar="ID", help="Only this conversation.")
        ] = None,
        limit: Annotated[
            int, typer.Option(metavar="N", help="At most this many (oldest first).")
        ] = 100,
        as_json: JsonOpt = False,
    ) -> int:
        """List the requests waiting for a human.

        Oldest first, with those held for an operator. Runs already answered (queued for a
        worker, or being resumed) are listed by `toolnexus runs`.
        """

        async def work() -> int:
            async with open_store(store) as runs:
                entries = await runs.list_pending(
                    kind=kind, tool=tool, conversation_id=conversation, limit=limit
                )
            if as_json:
                for e in entries:
                    typer.echo(json_line(entry_json(e)))
                return codes.OK
            from .render import pending_table

            pending_table(entries)
            return codes.OK

        return guarded(work)

    @app.command()
    def answer(
        request_id: IdArg,
        store: StoreOpt,
        approve: Annotated[bool, typer.Option("--approve", help="Approve.")] = False,
        decline: Annotated[bool, typer.Option("--decline", help="Decline.")] = False,
        reason: Annotated[
            str | None, typer.Option(metavar="TEXT", help="Why (with --decline).")
        ] = None,
        data: Annotated[
            str | None, typer.Option(metavar="JSON", help="The answer's data (a JSON object).")
        ] = None,
        text: Annotated[str | None, typer.Option(metavar="TEXT", help="A text answer.")] = None,
        args: Annotated[
            str | None,
            typer.Option(
                "--args",
                metavar="JSON",
                help="With --approve: run the call with these arguments instead (a JSON "
                "object, checked against the tool's schema).",
            ),
        ] = None,
        who: Annotated[
            str | None, typer.Option("--as", metavar="NAME", help="Who answers.")
        ] = None,
        wait: Annotated[
            bool, typer.Option("--wait", help="Follow the run until a worker has finished it.")
        ] = False,
        timeout: Annotated[
            float | None,
            typer.Option(metavar="SECONDS", help="With --wait: give up after this long."),
        ] = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Answer a pending request, exactly once.

        The answer is recorded; a worker resumes the run. With --wait, follow the run (queued
        → resuming → done) and print its final text; exit code 7 when --timeout passes first.
        """
        if timeout is not None and not wait:
            return fail("--timeout needs --wait", codes.USAGE)
        try:
            reply = reply_from_flags(
                approve=approve, decline=decline, reason=reason, data=data, text=text, args=args
            )
        except UsageError as exc:
            return fail(str(exc), codes.USAGE)

        async def work() -> int:
            async with open_store(store) as runs:
                rid = await resolve_id(runs, request_id, unknown=_unknown(request_id))
                answer = await _answer_of(runs, rid, reply)
                record = await runs.post_answer(rid, answer, answered_by=who)
                verdict = "approved" if answer.ok else "declined"
                if args is not None:
                    verdict = "approved with edited arguments"
                elif answer.ok and answer.data:
                    verdict = "answered"
                by = f" as {who}" if who else ""
                if not wait:
                    if as_json:
                        typer.echo(json_line(record_json(record)))
                    else:
                        say(f"{rid}: {verdict}{by}; a worker resumes the run")
                    return codes.OK
                if not as_json:
                    say(f"{rid}: {verdict}{by}", err=True)
                return await _follow(runs, rid, timeout, as_json)

        return guarded(work)

    @app.command()
    def cancel(
        request_id: IdArg,
        store: StoreOpt,
        reason: Annotated[str | None, typer.Option(metavar="TEXT", help="Why.")] = None,
        who: Annotated[
            str | None, typer.Option("--as", metavar="NAME", help="Who cancels.")
        ] = None,
        as_json: JsonOpt = False,
    ) -> int:
        """End a halted run without resuming it.

        A pending request, or one held for an operator whatever its state.
        """

        async def work() -> int:
            async with open_store(store) as runs:
                rid = await resolve_id(runs, request_id, unknown=_unknown(request_id))
                record = await runs.cancel(rid, reason=reason, answered_by=who)
            if as_json:
                typer.echo(json_line(record_json(record)))
            else:
                say(f"{rid}: cancelled")
            return codes.OK

        return guarded(work)

    @app.command()
    def purge(
        store: StoreOpt,
        older_than: Annotated[
            str,
            typer.Option("--older-than", metavar="AGE", help="An age: 90s, 15m, 12h, 30d or 2w."),
        ],
        as_json: JsonOpt = False,
    ) -> int:
        """Forget settled requests older than an age.

        Settled: done, expired or cancelled.
        """
        try:
            seconds = parse_age(older_than)
        except UsageError as exc:
            return fail(str(exc), codes.USAGE)

        async def work() -> int:
            async with open_store(store) as runs:
                count = await runs.purge(older_than=seconds)
            typer.echo(json.dumps({"purged": count}) if as_json else f"purged {count}")
            return codes.OK

        return guarded(work)


async def _follow(runs: RunStore, request_id: str, timeout: float | None, as_json: bool) -> int:
    """Wait for the worker to finish the answered run; print what it ended with."""
    from ..stores.lookup import run_text
    from .progress import STATE_WORDS, follow, working

    with working("queued, waiting for a worker", enabled=not as_json) as show:
        record = await follow(
            runs,
            request_id,
            timeout=timeout,
            on_state=lambda state: show(STATE_WORDS.get(state, state)),
        )
    if record is None:
        now = await runs.answer_record(request_id)
        state = now.status if now is not None else "pending"
        return fail(
            f"{request_id}: still {STATE_WORDS.get(state, state)} after {timeout:g}s",
            codes.TIMEOUT,
        )
    outcome = record.outcome or {}
    if as_json:
        typer.echo(json_line({**record_json(record), "outcome": outcome}))
    else:
        say(f"{request_id}: {run_text(record)}", err=True)
        if outcome.get("text"):
            say(str(outcome["text"]))  # the model's reply
    return codes.EXPIRED if record.status == "expired" else codes.OK


async def _answer_of(runs: RunStore, request_id: str, reply: Any) -> Any:
    """The `Answer` the flags' reply means for the request waiting on ``request_id`` — through
    the answer intake, checked against the stored checkpoint (edited arguments against the
    schema it keeps) before anything is posted.

    Raises:
        UnknownRequest, AnswerConflict: nothing waits on it (the conflict names who answered).
        InvalidAnswer: the request does not take that reply (the message names what it takes).
    """
    from ..errors import UnknownRequest
    from ..intake import intake
    from ..stores.checks import check_request_id, conflict, halted_accepts

    checkpoint = await runs.load_halt(check_request_id(request_id))
    if checkpoint is None:
        record = await runs.answer_record(request_id)
        if record is not None:
            raise conflict(request_id, record.answered_by, record.status)
        raise UnknownRequest(_unknown(request_id))
    return intake(checkpoint.pending, reply, known=halted_accepts(checkpoint))


def entry_json(e: PendingEntry) -> dict[str, Any]:
    """A pending entry as JSON data (``toolnexus pending --json``)."""
    return {
        "request_id": e.request_id,
        "kind": e.kind,
        "prompt": e.prompt,
        "tool": e.tool,
        "conversation_id": e.conversation_id,
        "created_at": e.created_at,
        "expires_at": e.expires_at,
        "status": e.status,
        "problem": e.problem,
    }
