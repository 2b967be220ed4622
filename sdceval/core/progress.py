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
    """A tqdm bar on stderr (module docstring for when it shows); a bar that cannot
    show is a no-op object, so that short runs do not import tqdm (60 ms)."""
    if enabled is None:
        disable = True if quiet() or not sys.stderr.isatty() else None
        delay = DELAY
    else:
        disable, delay = not enabled, 0.0
    if disable:
        return _NoBar()
    from tqdm import tqdm  # imported here: only long runs on a terminal need it

    return tqdm(desc=desc, total=total, unit=unit, file=sys.stderr, disable=disable,
                delay=delay, leave=False, dynamic_ncols=True)


class _NoBar:
    """What the package uses of a disabled tqdm bar (``update``, ``n``, ``close``)."""

    n = 0
    disable = True

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        pass
