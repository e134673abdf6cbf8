"""What every command shares: its common options, how it speaks to a person and to a script,
and how its coroutine's errors become exit codes.

What a person reads goes through `say` (and the tables through `toolnexus.cli.render`): text
made visible, so no control character or escape sequence from a prompt, a reply or an error
reaches the terminal (see `toolnexus._visible`). ``--json`` goes through `json_line`: exact
JSON, with those characters as ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import json
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

__all__ = ["JsonOpt", "StoreOpt", "fail", "guarded", "json_line", "say"]

StoreOpt = Annotated[
    str,
    typer.Option(
        "--store", metavar="URL", help="The run store: sqlite:///path.db or postgresql://…"
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]


def say(text: str, *, err: bool = False) -> None:
    """One message for a person, made visible (newlines and tabs kept as layout)."""
    typer.echo(visible(text, keep="\n\t"), err=err)


def json_line(value: Any) -> str:
    """``value`` as one line of JSON: exactly the data, with nothing raw a terminal obeys or a
    reader cannot see (``\\u202e``, ``\\u009b``), and other characters kept readable."""
    return escape_json(json.dumps(value, ensure_ascii=False))


def fail(message: str, code: int) -> int:
    """Say ``message`` on stderr; ``code``."""
    # Some library messages carry the prefix already (the pinned "toolnexus: the answer is
    # malformed: …"): say it once.
    say(f"toolnexus: {message.removeprefix('toolnexus: ')}", err=True)
    return code


def guarded(work: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run one command's coroutine (so that the process ends, see `toolnexus.cli.running`);
    map the library's errors to exit codes."""
    from .running import run_command  # here, not at the top: ``--help`` needs no event loop

    try:
        return run_command(work())
    except UnknownRequest as exc:
        return fail(str(exc), codes.UNKNOWN)
    except RequestExpired as exc:
        return fail(str(exc), codes.EXPIRED)
    except AnswerConflict as exc:
        return fail(str(exc), codes.CONFLICT)
    except InvalidAnswer as exc:
        return fail(str(exc), codes.INVALID)
    except UsageError as exc:
        return fail(str(exc), codes.USAGE)
    except ToolnexusError as exc:  # a StoreError, a failed run
        return fail(str(exc), codes.FAILED)
    except ImportError as exc:
        return fail(str(exc), codes.USAGE)
    except KeyboardInterrupt:
        return fail("interrupted", codes.INTERRUPTED)
