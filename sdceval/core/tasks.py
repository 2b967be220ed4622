"""Tasks: pure functions of keyword arguments, run one after another in this process.

The executors of `sdceval.experiments.executor` (local processes, Dask) spread the same
tasks over workers; this serial runner is what they fall back to and what the lower
layers use when no executor is given.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from sdceval.core import interrupts


def run_serially(fn: Callable, tasks: Sequence[dict],
                 progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """``[fn(**t) for t in tasks]``, calling ``progress(done, total)`` after each."""
    out = []
    for i, t in enumerate(tasks):
        interrupts.check()  # an interrupt swallowed during the last task ends the run
        out.append(fn(**t))
        if progress:
            progress(i + 1, len(tasks))
    return out
