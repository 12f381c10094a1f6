"""``python -m dpdbscan``: the command line (see :mod:`dpdbscan.cli`)."""

from .cli import main

raise SystemExit(main())
