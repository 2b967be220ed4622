"""``python -m sdceval``: the command line (`sdceval.cli.main`)."""
from sdceval.cli import main

raise SystemExit(main())
