"""The typer application: one function per command, each a thin shell over the library.

The store commands live by concept — `toolnexus.cli.answering` (pending, answer, cancel,
purge) and `toolnexus.cli.inspecting` (show, runs, history) — and the rest here. Every command
returns an exit code (see `toolnexus.cli.codes`) instead of raising: a store URL with a typo,
conflicting flags or an unknown request is a one-line message on stderr and a meaningful code,
never a traceback. ``--json`` writes machine-readable output on stdout; what a person reads is
made visible (`toolnexus.cli.shell`).

The help is click's plain layout (``rich_markup_mode=None``): a flag reads as a flag
(``--approve``), an option shows what it takes (``--store URL``), at any terminal width — the
rich layout of typer 0.2x labels every option with its type, flags and ``--help`` included
(``--approve <bool>``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ..errors import UsageError
from . import answering, codes, inspecting
from .shell import JsonOpt, StoreOpt, fail, guarded, json_line

__all__ = ["build"]

_HOST = "The address to listen on."
_PORT = "The port (0 picks a free one)."

AppOpt = Annotated[
    str,
    typer.Option(
        "--app",
        metavar="MODULE:FACTORY",
        help="module:factory (or path/to/file.py:factory) returning (client, toolkit); may be "
        "async.",
    ),
]
AllowHostOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-host",
        metavar="HOST",
        help="Another Host name it answers to (repeatable; loopback and --public-url's are "
        "always allowed): the name behind a proxy.",
    ),
]
AllowOriginOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-origin",
        metavar="ORIGIN",
        help="Another browser origin whose pages may call it (repeatable), e.g. "
        "https://ui.example.com.",
    ),
]
TrustedProxyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--trusted-proxy",
        metavar="ADDRESS",
        help="A proxy (address or network) whose X-Forwarded-For is believed; repeatable. "
        "None by default, loopback included.",
    ),
]


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


def build() -> Callable[[list[str] | None], int]:
    """The command line as a function of its arguments."""
    app = typer.Typer(
        name="toolnexus",
        help="toolnexus: agents that ask humans for permission.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    answering.register(app)
    inspecting.register(app)

    @app.command()
    def tools(
        config: Annotated[str | None, typer.Option(metavar="FILE", help="An mcp.json.")] = None,
        skills: Annotated[
            list[str] | None, typer.Option(metavar="DIR", help="A skills folder.")
        ] = None,
        no_builtins: Annotated[
            bool, typer.Option("--no-builtins", help="Without the built-in tools.")
        ] = False,
        as_json: JsonOpt = False,
    ) -> int:
        """List a configuration's tools and MCP servers.

        The resolved tools, and each MCP server's status.
        """

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
                typer.echo(json_line({"tools": listed, "mcp": status, "mcp_errors": errors}))
            else:
                from .render import tools_table

                tools_table(listed, status, errors)
            return codes.OK

        return guarded(work)

    @app.command()
    def worker(
        app_ref: AppOpt,
        concurrency: Annotated[int, typer.Option(metavar="N", help="Runs resumed at once.")] = 4,
        grace: Annotated[
            float,
            typer.Option(
                metavar="SECONDS",
                help="After SIGINT/SIGTERM, how long the runs in flight get to finish; then "
                "they are abandoned (another worker resumes them when their lease runs out).",
            ),
        ] = 20.0,
    ) -> int:
        """Resume the answered runs of an app's store.

        Until SIGINT or SIGTERM; then the runs in flight get --grace seconds to finish.
        """
        from .worker import run_worker

        return guarded(lambda: run_worker(app_ref, concurrency, grace))

    @app.command()
    def serve(
        app_ref: AppOpt,
        a2a: Annotated[bool, typer.Option("--a2a", help="Serve A2A (the card and tasks).")] = False,
        mcp: Annotated[bool, typer.Option("--mcp", help="Serve MCP inbound at /mcp.")] = False,
        inbox: Annotated[
            bool, typer.Option("--inbox", help="Co-mount the approvals inbox at /inbox.")
        ] = False,
        users: Annotated[
            str | None, typer.Option(metavar="FILE", help="The inbox's users file (with --inbox).")
        ] = None,
        host: Annotated[str, typer.Option(metavar="ADDRESS", help=_HOST)] = "127.0.0.1",
        port: Annotated[int, typer.Option(metavar="PORT", help=_PORT)] = 8000,
        token: Annotated[
            str | None,
            typer.Option(
                metavar="TOKEN",
                envvar="TOOLNEXUS_SERVE_TOKEN",
                help="Require this bearer token on every route (or TOOLNEXUS_SERVE_TOKEN).",
            ),
        ] = None,
        callers: Annotated[
            str | None,
            typer.Option(
                metavar="FILE",
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
        """Serve an app's toolkit: A2A, MCP, the inbox.

        Until SIGINT or SIGTERM.
        """
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
        return guarded(lambda: run_serve(options))

    @app.command()
    def inbox(
        store: StoreOpt,
        users: Annotated[
            str, typer.Option(metavar="FILE", help="The users file (JSON, see docs/inbox.md).")
        ],
        host: Annotated[str, typer.Option(metavar="ADDRESS", help=_HOST)] = "127.0.0.1",
        port: Annotated[int, typer.Option(metavar="PORT", help=_PORT)] = 8700,
        webhook: Annotated[
            str | None, typer.Option(metavar="URL", help="POSTed once per new request.")
        ] = None,
        poll_interval: Annotated[
            float, typer.Option(metavar="SECONDS", help="Seconds between store polls.")
        ] = 1.0,
        secret_file: Annotated[
            str | None,
            typer.Option(metavar="FILE", help="No longer used (sessions are kept in the store)."),
        ] = None,
        public_url: Annotated[
            str | None, typer.Option(metavar="URL", help="The inbox's address, for links.")
        ] = None,
        allow_host: AllowHostOpt = None,
        allow_origin: AllowOriginOpt = None,
        max_failed_sign_ins: Annotated[
            int,
            typer.Option(
                metavar="N", help="Wrong tokens per client address per minute before 429 (0: off)."
            ),
        ] = 10,
        trusted_proxy: TrustedProxyOpt = None,
    ) -> int:
        """Serve the approvals inbox over a run store.

        A worker resumes the runs answered there.
        """
        from .inbox import read_secret, run_inbox

        try:
            secret = read_secret(secret_file)
        except UsageError as exc:
            return fail(str(exc), codes.USAGE)
        return guarded(
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
        once: Annotated[
            str | None, typer.Option(metavar="PROMPT", help="Answer one prompt and exit.")
        ] = None,
        config: Annotated[str | None, typer.Option(metavar="FILE", help="An mcp.json.")] = None,
        skills: Annotated[
            list[str] | None, typer.Option(metavar="DIR", help="A skills folder.")
        ] = None,
        base_url: Annotated[
            str | None, typer.Option(metavar="URL", help="The model endpoint.")
        ] = None,
        style: Annotated[
            str, typer.Option(metavar="STYLE", help="openai or anthropic.")
        ] = "openai",
        model: Annotated[str | None, typer.Option(metavar="NAME", help="The model name.")] = None,
        api_key: Annotated[str | None, typer.Option(metavar="KEY", help="The API key.")] = None,
        system: Annotated[
            str | None, typer.Option(metavar="TEXT", help="The system prompt.")
        ] = None,
        store: Annotated[
            str | None, typer.Option(metavar="URL", help="Where conversations live.")
        ] = None,
        no_builtins: Annotated[
            bool, typer.Option("--no-builtins", help="Without the built-in tools.")
        ] = False,
    ) -> int:
        """Chat, asked before each tool call.

        The reply streams; each tool call is shown and asked about.
        """
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
            return fail(str(exc), codes.USAGE)

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
            return fail("interrupted", codes.INTERRUPTED)
        except exits as exc:
            return int(getattr(exc, "exit_code", codes.OK) or codes.OK)
        return result if isinstance(result, int) else codes.OK

    return invoke
