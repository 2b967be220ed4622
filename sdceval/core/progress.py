"""Progress bars for long runs (tqdm on stderr), one policy for the whole package.

A bar appears only on a terminal, only when the environment variable ``SDCEVAL_QUIET``
(set by ``sdceval -q``) is unset, and only once the run has lasted `DELAY` seconds, so
short runs and scripts print nothing; ``enabled=True`` / ``False`` force it on / off.
"""
from __future__ import annotations

import os
import sys

#: environment variable that silences progress bars (``sdceval -q`` sets it)
QUIET_ENV = "SDCEVAL_QUIET"
#: a bar appears only once a run has lasted this long (seconds)
DELAY = 2.0


def quiet() -> bool:
    return os.environ.get(QUIET_ENV, "").strip().lower() not in ("", "0", "false", "no")


def progress_bar(desc: str, total: int | None = None, unit: str = " nodes",
                 enabled: bool | None = None):
    """A tqdm bar on stderr (module docstring for when it shows)."""
    from tqdm import tqdm  # imported here: only long runs need it

    if enabled is None:
        disable = True if quiet() else None  # None: tqdm turns itself off off a terminal
        delay = DELAY
    else:
        disable, delay = not enabled, 0.0
    return tqdm(desc=desc, total=total, unit=unit, file=sys.stderr, disable=disable,
                delay=delay, leave=False, dynamic_ncols=True)
