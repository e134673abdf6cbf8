"""The commands that look without answering: ``show`` (one request, whatever its state),
``runs`` (what is answered but not finished: queued for a worker, or held by one) and
``history`` (what was answered, with the inbox's filters)."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import UsageError
from . import codes
from .ids import index_of, resolve_id
from .shell import JsonOpt, StoreOpt, fail, guarded, json_line
from .stores import open_store, parse_age

if TYPE_CHECKING:  # the store modules load with the command that runs, not for ``--help``
    from ..stores.inbox_index import HistoryEntry, RunEntry

__all__ = ["register"]

LimitOpt = Annotated[int, typer.Option(metavar="N", help="At most this many.")]


def register(app: typer.Typer) -> None:
    """Add the commands to ``app``."""

    @app.command()
    def show(
        request_id: Annotated[
            str,
            typer.Argument(
                metavar="REQUEST_ID", help="The request's id, or enough of its start to name one."
            ),
        ],
        store: StoreOpt,
        as_json: JsonOpt = False,
    ) -> int:
        """Show one request, whatever its state.

        What it asks, the call and its arguments, who answered and when (an edit beside the
        model's arguments), where the run stands (the worker holding it and the lease left)
        and what it ended with.
        """

        async def work() -> int:
            from .detail import facts_json, print_facts

            async with open_store(store) as runs:
                rid = await resolve_id(runs, request_id)
                from ..stores.lookup import read_request

                facts = await read_request(runs, index_of(runs), rid)
            if facts is None:  # (purged between the two reads)
                return fail(f'no request "{rid}" in the store', codes.UNKNOWN)
            now = time.time()
            if as_json:
                typer.echo(json_line(facts_json(facts, now)))
            else:
                print_facts(facts, now)
            return codes.OK

        return guarded(work)

    @app.command()
    def runs(store: StoreOpt, limit: LimitOpt = 100, as_json: JsonOpt = False) -> int:
        """List the runs answered but not finished.

        Oldest first: queued for a worker, or being resumed — by which worker (host:pid) and
        how long its lease has left. A run whose worker stopped stays held until its lease
        runs out; then it is queued again, for any worker.
        """

        async def work() -> int:
            async with open_store(store) as opened:
                entries = await index_of(opened).list_runs(limit=limit)
            if as_json:
                now = time.time()
                for e in entries:
                    typer.echo(json_line(run_json(e, now)))
                return codes.OK
            from .render import runs_table

            runs_table(entries)
            return codes.OK

        return guarded(work)

    @app.command()
    def history(
        store: StoreOpt,
        kind: Annotated[str | None, typer.Option(metavar="KIND", help="Only this kind.")] = None,
        tool: Annotated[
            str | None, typer.Option(metavar="NAME", help="Only requests of this tool.")
        ] = None,
        by: Annotated[
            str | None, typer.Option("--by", metavar="NAME", help="Only those answered by NAME.")
        ] = None,
        status: Annotated[
            str | None,
            typer.Option(
                metavar="STATE",
                help="Only those now answered, claimed, done, expired or cancelled.",
            ),
        ] = None,
        since: Annotated[
            str | None,
            typer.Option(metavar="AGE", help="Only those answered within an age: 15m, 12h, 7d."),
        ] = None,
        search: Annotated[
            str | None,
            typer.Option(metavar="TEXT", help="Text in the prompt, tool, id or conversation."),
        ] = None,
        limit: LimitOpt = 50,
        as_json: JsonOpt = False,
    ) -> int:
        """List the answered requests, newest first.

        Answered, declined, cancelled or expired, filtered as in the inbox.
        """
        try:
            from ..stores.inbox_index import check_history_status

            wanted = check_history_status(status)
            within = None if since is None else parse_age(since, "--since")
        except UsageError as exc:
            return fail(str(exc), codes.USAGE)

        async def work() -> int:
            after = None if within is None else max(0.0, time.time() - within)
            async with open_store(store) as opened:
                found = await index_of(opened).list_history(
                    answered_by=by,
                    status=wanted,
                    kind=kind,
                    tool=tool,
                    text=search,
                    answered_after=after,
                    limit=limit,
                )
            if as_json:
                for h in found:
                    typer.echo(json_line(history_json(h)))
                return codes.OK
            from .render import history_table

            history_table(found)
            return codes.OK

        return guarded(work)


def _lease(lease: float | None, now: float) -> dict[str, Any]:
    forever = lease is not None and math.isinf(lease)
    return {
        "lease_until": None if forever else lease,
        "lease_forever": forever,
        "lease_left": None if lease is None or forever else max(0.0, lease - now),
    }


def run_json(e: RunEntry, now: float) -> dict[str, Any]:
    """A run in flight as JSON data (``toolnexus runs --json``)."""
    return {
        "request_id": e.request_id,
        "status": e.status,
        "kind": e.kind,
        "prompt": e.prompt,
        "tool": e.tool,
        "conversation_id": e.conversation_id,
        "created_at": e.created_at,
        "answered_by": e.answered_by,
        "answered_at": e.answered_at,
        "holder": e.holder,
        **_lease(e.lease_until, now),
        "problem": e.problem,
        "flagged_at": e.flagged_at,
    }


def history_json(h: HistoryEntry) -> dict[str, Any]:
    """A history row as JSON data (``toolnexus history --json``): the inbox's export's fields,
    with the answer, the model's call an edit replaced, and times as seconds since the epoch."""
    from ..stores.lookup import decision_of, note_of
    from ..stores.requests import AnswerRecord

    record = AnswerRecord(
        h.request_id, h.answer, h.answered_at, h.answered_by, h.digest, h.status, h.settled_at
    )
    return {
        "request_id": h.request_id,
        "kind": h.kind,
        "tool": h.tool,
        "prompt": h.prompt,
        "conversation_id": h.conversation_id,
        "created_at": h.created_at,
        "status": h.status,
        "decision": decision_of(record),
        "answered_by": h.answered_by,
        "answered_at": h.answered_at,
        "settled_at": h.settled_at,
        "reason": note_of(record) or None,
        "answer": h.answer.to_dict(),
        "digest": h.digest,
        "original": h.original,
        "problem": h.problem,
        "flagged_at": h.flagged_at,
    }
