"""``python -m sdceval.cli``: the same as the ``sdceval`` command."""
import sys

from sdceval.cli import main

sys.exit(main())
