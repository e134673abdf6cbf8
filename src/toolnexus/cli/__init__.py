"""The ``toolnexus`` command line (extra ``cli``: typer + rich).

    toolnexus pending  --store URL [--kind K] [--tool T] [--json]
    toolnexus answer   REQUEST_ID --store URL (--approve | --decline [--reason R] | --data JSON
                       | --text T) [--as NAME] [--wait [--timeout S]]
    toolnexus cancel   REQUEST_ID --store URL [--reason R] [--as NAME]
    toolnexus show     REQUEST_ID --store URL [--json]   (one request, whatever its state)
    toolnexus runs     --store URL [--json]   (answered, not finished: queued or held, by whom)
    toolnexus history  --store URL [--kind K] [--tool T] [--by NAME] [--status S] [--since AGE]
                       [--search TEXT] [--json]
    toolnexus purge    --store URL --older-than 30d
    toolnexus tools    [--config mcp.json] [--skills DIR] [--json]
    toolnexus worker   --app module:factory
    toolnexus serve    --app module:factory [--a2a] [--mcp] [--inbox [--users FILE]]
                       [--host H] [--port P] [--token T | --callers FILE]
    toolnexus inbox    --store URL --users FILE [--host H] [--port P]   (the approvals page)
    toolnexus run      [--once PROMPT] ...   (a chat REPL with terminal approvals)

``python -m toolnexus`` is the same program. The commands that touch a store need no toolkit:
an answer given here is recorded exactly once, and a worker (``toolnexus worker``, or any
process running ``client.worker``) finishes the run. A REQUEST_ID may be any unique beginning of
an id. Exit codes are in `toolnexus.cli.codes`.
"""

from __future__ import annotations

import sys

from .._extras import extra_hint

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        from .app import build
    except ImportError as exc:
        if exc.name not in ("typer", "rich", "click"):
            raise
        print(
            f"the toolnexus command line needs typer and rich: {extra_hint('cli')}",
            file=sys.stderr,
        )
        return 2
    return build()(argv)
