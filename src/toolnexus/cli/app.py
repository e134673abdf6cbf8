"""The typer application: one function per command, each a thin shell over the library.

Every command returns an exit code (see `toolnexus.cli.codes`) instead of raising: a store
URL with a typo, conflicting flags or an unknown request is a one-line message on stderr and a
meaningful code, never a traceback. ``--json`` writes machine-readable output on stdout.

What a person reads goes through `_say` (and the tables through `render.cell`): text made
visible, so no control character or escape sequence from a prompt, a reply or an error reaches
the terminal (see `toolnexus._visible`). ``--json`` goes through `_json`: exact JSON, with
those characters as ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

import typer

from .._visible import escape_json, visible
from ..errors import (
    AnswerConflict,
    InvalidAnswer,
    RequestExpired,
    ToolnexusError,
    UnknownRequest,
    UsageError,
)
from . import codes
from .stores import open_store, parse_age, record_json, reply_from_flags

__all__ = ["build"]

StoreOpt = Annotated[
    str, typer.Option("--store", help="The run store: sqlite:///path.db or postgresql://…")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]
AllowHostOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-host",
        help="Another Host name it answers to (repeatable; loopback and --public-url's are "
        "always allowed): the name behind a proxy.",
    ),
]
AllowOriginOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-origin",
        help="Another browser origin whose pages may call it (repeatable), e.g. "
        "https://ui.example.com.",
    ),
]
TrustedProxyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--trusted-proxy",
        help="A proxy (address or network) whose X-Forwarded-For is believed; repeatable. "
        "None by default, loopback included.",
    ),
]


def _say(text: str, *, err: bool = False) -> None:
    """One message for a person, made visible (newlines and tabs kept as layout)."""
    typer.echo(visible(text, keep="\n\t"), err=err)


def _json(value: Any) -> str:
    """``value`` as one line of JSON: exactly the data, with nothing raw a terminal obeys or a
    reader cannot see (``\\u202e``, ``\\u009b``), and other characters kept readable."""
    return escape_json(json.dumps(value, ensure_ascii=False))


def _fail(message: str, code: int) -> int:
    # Some library messages carry the prefix already (the pinned "toolnexus: the answer is
    # malformed: …"): say it once.
    _say(f"toolnexus: {message.removeprefix('toolnexus: ')}", err=True)
    return code


def _click_errors() -> Any:
    """The module of the click exceptions typer raises: its own copy of click (typer 0.2x
    vendors it as ``typer._click``) or click's. Catching click's classes alone lets every
    mistyped flag of a newer typer end in a traceback."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:
        return importlib.import_module("click.exceptions")


def _named(module: Any, name: str) -> tuple[type[BaseException], ...]:
    found = getattr(module, name, None)
    return (found,) if isinstance(found, type) and issubclass(found, BaseException) else ()


def _guarded(work: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run one command's coroutine (so that the process ends, see `running`); map the
    library's errors to exit codes."""
    from .running import run_command  # here, not at the top: ``--help`` needs no event loop

    try:
        return run_command(work())
    except UnknownRequest as exc:
        return _fail(str(exc), codes.UNKNOWN)
    except RequestExpired as exc:
        return _fail(str(exc), codes.EXPIRED)
    except AnswerConflict as exc:
        return _fail(str(exc), codes.CONFLICT)
    except InvalidAnswer as exc:
        return _fail(str(exc), codes.INVALID)
    except UsageError as exc:
        return _fail(str(exc), codes.USAGE)
    except ToolnexusError as exc:  # a StoreError, a failed run
        return _fail(str(exc), codes.FAILED)
    except ImportError as exc:
        return _fail(str(exc), codes.USAGE)
    except KeyboardInterrupt:
        return _fail("interrupted", codes.INTERRUPTED)


def build() -> Callable[[list[str] | None], int]:
    """The command line as a function of its arguments."""
    app = typer.Typer(
        name="toolnexus",
        help="toolnexus: agents that ask humans for permission.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.command()
    def pending(
        store: StoreOpt,
        kind: Annotated[str | None, typer.Option(help="Only this kind.")] = None,
        tool: Annotated[str | None, typer.Option(help="Only requests of this tool.")] = None,
        conversation: Annotated[str | None, typer.Option(help="Only this conversation.")] = None,
        limit: Annotated[int, typer.Option(help="At most this many (oldest first).")] = 100,
        as_json: JsonOpt = False,
    ) -> int:
        """List the requests waiting for a human, oldest first."""

        async def work() -> int:
            async with open_store(store) as runs:
                entries = await runs.list_pending(
                    kind=kind, tool=tool, conversation_id=conversation, limit=limit
                )
            if as_json:
                for e in entries:
                    typer.echo(_json(_entry_json(e)))
                return codes.OK
            from .render import pending_table

            pending_table(entries)
            return codes.OK

        return _guarded(work)

    @app.command()
    def answer(
        request_id: Annotated[str, typer.Argument(help="The request to answer.")],
        store: StoreOpt,
        approve: Annotated[bool, typer.Option("--approve", help="Approve.")] = False,
        decline: Annotated[bool, typer.Option("--decline", help="Decline.")] = False,
        reason: Annotated[str | None, typer.Option(help="Why (with --decline).")] = None,
        data: Annotated[str | None, typer.Option(help="The answer's data (a JSON object).")] = None,
        text: Annotated[str | None, typer.Option(help="A text answer.")] = None,
        args: Annotated[
            str | None,
            typer.Option(
                "--args",
                help="With --approve: run the call with these arguments instead (a JSON object, "
                "checked against the tool's schema).",
            ),
        ] = None,
        who: Annotated[str | None, typer.Option("--as", help="Who answers.")] = None,
        wait: Annotated[
            bool, typer.Option("--wait", help="Follow the run until a worker has finished it.")
        ] = False,
        timeout: Annotated[
            float | None, typer.Option(help="With --wait: give up after this many seconds.")
        ] = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Record the answer to a pending request (exactly once); a worker resumes the run.

        With --wait, follow the run (queued → resuming → done) and print its final text.

        Exit code 7 when --timeout passes first.
        """
        if timeout is not None and not wait:
            return _fail("--timeout needs --wait", codes.USAGE)
        try:
            reply = reply_from_flags(
                approve=approve,
                decline=decline,
                reason=reason,
                data=data,
                text=text,
                args=args,
            )
        except UsageError as exc:
            return _fail(str(exc), codes.USAGE)

        async def work() -> int:
            async with open_store(store) as runs:
                answer = await _answer_of(runs, request_id, reply)
                record = await runs.post_answer(request_id, answer, answered_by=who)
                verdict = "approved" if answer.ok else "declined"
                if args is not None:
                    verdict = "approved with edited arguments"
                elif answer.ok and answer.data:
                    verdict = "answered"
                by = f" as {who}" if who else ""
                if not wait:
                    if as_json:
                        typer.echo(_json(record_json(record)))
                    else:
                        _say(f"{request_id}: {verdict}{by}; a worker resumes the run")
                    return codes.OK
                if not as_json:
                    _say(f"{request_id}: {verdict}{by}", err=True)
                return await _follow(runs, request_id, timeout, as_json)

        return _guarded(work)

    @app.command()
    def cancel(
        request_id: Annotated[str, typer.Argument(help="The request whose run to end.")],
        store: StoreOpt,
        reason: Annotated[str | None, typer.Option(help="Why.")] = None,
        who: Annotated[str | None, typer.Option("--as", help="Who cancels.")] = None,
        as_json: JsonOpt = False,
    ) -> int:
        """End a halted run without resuming it."""

        async def work() -> int:
            async with open_store(store) as runs:
                record = await runs.cancel(request_id, reason=reason, answered_by=who)
            if as_json:
                typer.echo(_json(record_json(record)))
            else:
                _say(f"{request_id}: cancelled")
            return codes.OK

        return _guarded(work)

    @app.command()
    def purge(
        store: StoreOpt,
        older_than: Annotated[
            str, typer.Option("--older-than", help="An age: 90s, 15m, 12h, 30d or 2w.")
        ],
        as_json: JsonOpt = False,
    ) -> int:
        """Forget settled requests (done, expired, cancelled) older than an age."""
        try:
            seconds = parse_age(older_than)
        except UsageError as exc:
            return _fail(str(exc), codes.USAGE)

        async def work() -> int:
            async with open_store(store) as runs:
                count = await runs.purge(older_than=seconds)
            typer.echo(json.dumps({"purged": count}) if as_json else f"purged {count}")
            return codes.OK

        return _guarded(work)

    @app.command()
    def tools(
        config: Annotated[str | None, typer.Option(help="An mcp.json.")] = None,
        skills: Annotated[list[str] | None, typer.Option(help="A skills folder.")] = None,
        no_builtins: Annotated[bool, typer.Option("--no-builtins")] = False,
        as_json: JsonOpt = False,
    ) -> int:
        """The resolved tools of a configuration, and the MCP servers' status."""

        async def work() -> int:
            from ..toolkit import create_toolkit
            from .progress import working

            with working("starting the tool sources", enabled=not as_json):
                toolkit = await create_toolkit(
                    mcp_config=config, skills_dir=skills or None, builtins=not no_builtins
                )
            async with toolkit:
                listed = [
                    {"name": t.name, "source": t.source, "description": t.description}
                    for t in toolkit.tools()
                ]
                status, errors = toolkit.mcp_status(), toolkit.mcp_errors()
            if as_json:
                typer.echo(_json({"tools": listed, "mcp": status, "mcp_errors": errors}))
            else:
                from .render import tools_table

                tools_table(listed, status, errors)
            return codes.OK

        return _guarded(work)

    @app.command()
    def worker(
        app_ref: Annotated[
            str,
            typer.Option("--app", help="module:factory returning (client, toolkit); may be async."),
        ],
        concurrency: Annotated[int, typer.Option(help="Runs resumed at once.")] = 4,
        grace: Annotated[
            float,
            typer.Option(
                help="Seconds a stop may take; then the worker exits at once (exit code 1) "
                "and another worker takes over its runs when their leases run out."
            ),
        ] = 20.0,
    ) -> int:
        """Resume every answered run of the app's store until interrupted (SIGINT/SIGTERM)."""
        from .worker import run_worker

        return _guarded(lambda: run_worker(app_ref, concurrency, grace))

    @app.command()
    def serve(
        app_ref: Annotated[
            str,
            typer.Option("--app", help="module:factory returning (client, toolkit); may be async."),
        ],
        a2a: Annotated[bool, typer.Option("--a2a", help="Serve A2A (the card and tasks).")] = False,
        mcp: Annotated[bool, typer.Option("--mcp", help="Serve MCP inbound at /mcp.")] = False,
        inbox: Annotated[
            bool, typer.Option("--inbox", help="Co-mount the approvals inbox at /inbox.")
        ] = False,
        users: Annotated[
            str | None, typer.Option(help="The inbox's users file (with --inbox).")
        ] = None,
        host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="The port (0 picks a free one).")] = 8000,
        token: Annotated[
            str | None,
            typer.Option(
                envvar="TOOLNEXUS_SERVE_TOKEN",
                help="Require this bearer token on every route (or TOOLNEXUS_SERVE_TOKEN).",
            ),
        ] = None,
        callers: Annotated[
            str | None,
            typer.Option(
                help='A callers file (JSON: {"callers": [{"name", "token" or '
                '"token_sha256"}]}): several callers, each with its own bearer token, each '
                "seeing only the A2A tasks it created (instead of --token; see docs/serving.md).",
            ),
        ] = None,
        trusted_proxy: TrustedProxyOpt = None,
        allow_host: AllowHostOpt = None,
        allow_origin: AllowOriginOpt = None,
        insecure: Annotated[
            bool,
            typer.Option(
                "--insecure",
                help="Serve on a non-loopback --host without a token (something in front "
                "of it must guard it).",
            ),
        ] = False,
    ) -> int:
        """Serve the app's toolkit (A2A, MCP, the inbox) until interrupted (SIGINT/SIGTERM)."""
        from .serving import ServeOptions, run_serve

        options = ServeOptions(
            app=app_ref,
            a2a=a2a,
            mcp=mcp,
            inbox=inbox,
            users=users,
            host=host,
            port=port,
            token=token,
            callers=callers,
            trusted_proxies=tuple(trusted_proxy or ()),
            allow_hosts=tuple(allow_host or ()),
            allow_origins=tuple(allow_origin or ()),
            insecure=insecure,
        )
        return _guarded(lambda: run_serve(options))

    @app.command()
    def inbox(
        store: Annotated[
            str, typer.Option(help="The run store URL (sqlite:///… or postgresql://…).")
        ],
        users: Annotated[str, typer.Option(help="The users file (JSON, see docs/inbox.md).")],
        host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="The port (0 picks a free one).")] = 8700,
        webhook: Annotated[str | None, typer.Option(help="POSTed once per new request.")] = None,
        poll_interval: Annotated[float, typer.Option(help="Seconds between store polls.")] = 1.0,
        secret_file: Annotated[
            str | None, typer.Option(help="No longer used (sessions are kept in the store).")
        ] = None,
        public_url: Annotated[
            str | None, typer.Option(help="The inbox's address, for links.")
        ] = None,
        allow_host: AllowHostOpt = None,
        allow_origin: AllowOriginOpt = None,
        max_failed_sign_ins: Annotated[
            int,
            typer.Option(help="Wrong tokens per client address per minute before 429 (0: off)."),
        ] = 10,
        trusted_proxy: TrustedProxyOpt = None,
    ) -> int:
        """Serve the approvals inbox page over a run store (a worker resumes the runs)."""
        from .inbox import read_secret, run_inbox

        try:
            secret = read_secret(secret_file)
        except UsageError as exc:
            return _fail(str(exc), codes.USAGE)
        return _guarded(
            lambda: run_inbox(
                store,
                users,
                host,
                port,
                webhook=webhook,
                poll_interval=poll_interval,
                secret=secret,
                public_url=public_url,
                allowed_hosts=allow_host or [],
                allowed_origins=allow_origin or [],
                max_failed_sign_ins=max_failed_sign_ins,
                trusted_proxies=tuple(trusted_proxy or ()),
            )
        )

    @app.command()
    def run(
        once: Annotated[str | None, typer.Option(help="Answer one prompt and exit.")] = None,
        config: Annotated[str | None, typer.Option(help="An mcp.json.")] = None,
        skills: Annotated[list[str] | None, typer.Option(help="A skills folder.")] = None,
        base_url: Annotated[str | None, typer.Option(help="The model endpoint.")] = None,
        style: Annotated[str, typer.Option(help="openai or anthropic.")] = "openai",
        model: Annotated[str | None, typer.Option(help="The model name.")] = None,
        api_key: Annotated[str | None, typer.Option(help="The API key.")] = None,
        system: Annotated[str | None, typer.Option(help="The system prompt.")] = None,
        store: Annotated[str | None, typer.Option(help="Where conversations live.")] = None,
        no_builtins: Annotated[bool, typer.Option("--no-builtins")] = False,
    ) -> int:
        """A chat REPL that streams, shows each tool call and asks you about each one."""
        from .repl import Settings, repl

        settings = Settings(
            once=once,
            config=config,
            skills=skills or [],
            base_url=base_url,
            style=style,
            model=model,
            api_key=api_key,
            system=system,
            store=store,
            builtins=not no_builtins,
        )
        try:
            return repl(settings)
        except (UsageError, ImportError) as exc:
            return _fail(str(exc), codes.USAGE)

    command = typer.main.get_command(app)
    errors = _click_errors()
    # typer 0.29's own click keeps Abort and Exit out of its exceptions module (they are
    # typer.Abort / typer.Exit); click's has both.
    aborts: tuple[type[BaseException], ...] = (typer.Abort, *_named(errors, "Abort"))
    exits: tuple[type[BaseException], ...] = (typer.Exit, *_named(errors, "Exit"))

    def invoke(argv: list[str] | None) -> int:
        try:
            result = command.main(
                args=sys.argv[1:] if argv is None else argv,
                prog_name="toolnexus",
                standalone_mode=False,
            )
        except errors.NoArgsIsHelpError as exc:
            typer.echo(exc.ctx.get_help() if exc.ctx else str(exc))
            return codes.USAGE
        except errors.ClickException as exc:
            exc.show()
            return codes.USAGE
        except aborts:
            return _fail("interrupted", codes.INTERRUPTED)
        except exits as exc:
            return int(getattr(exc, "exit_code", codes.OK) or codes.OK)
        return result if isinstance(result, int) else codes.OK

    return invoke


async def _follow(runs: Any, request_id: str, timeout: float | None, as_json: bool) -> int:
    """Wait for the worker to finish the answered run; print what it ended with."""
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
        return _fail(
            f"{request_id}: still {STATE_WORDS.get(state, state)} after {timeout:g}s",
            codes.TIMEOUT,
        )
    outcome = record.outcome or {}
    if as_json:
        typer.echo(_json({**record_json(record), "outcome": outcome}))
    else:
        status = outcome.get("status", record.status)
        _say(f"{request_id}: {record.status} ({status})", err=True)
        if outcome.get("pending"):
            _say(f"the run asks again: request {outcome['pending']}", err=True)
        if outcome.get("text"):
            _say(str(outcome["text"]))  # the model's reply
    return codes.EXPIRED if record.status == "expired" else codes.OK


async def _answer_of(runs: Any, request_id: str, reply: Any) -> Any:
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
        raise UnknownRequest(f'no halted run waits on request "{request_id}"')
    return intake(checkpoint.pending, reply, known=halted_accepts(checkpoint))


def _entry_json(e: Any) -> dict[str, Any]:
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
