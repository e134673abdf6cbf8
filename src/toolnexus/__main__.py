"""``python -m toolnexus``: the command line (`toolnexus.cli`)."""

from toolnexus.cli import main

raise SystemExit(main())
