"""Sections that Ctrl-C or SIGTERM must not cut in half.

The command line turns SIGINT and SIGTERM into exceptions raised in the main thread
(`sdceval.cli`), wherever it happens to be.  Inside some third-party calls that is
unsafe: an exception raised while loky's ``ProcessPoolExecutor.submit`` is starting its
manager thread leaves the pool half built, and its ``shutdown`` then fails with an
unrelated error that hides the interrupt (the process exited 1, not 143).  Such a call
runs under `deferred`: a signal that arrives inside it is held (`defer`) and raised as
soon as the section ends, so the interrupt still ends the command, promptly (a
section is one short call), and the clean-up code sees the pool whole.

An exception raised by a signal handler can also be *swallowed*: when the signal lands
while the interpreter runs a garbage-collector callback (Dask ``distributed`` installs
one), a ``__del__`` method or a weakref callback, Python prints "Exception ignored in"
and carries on, and the command ran to its end and exited 0 after a SIGTERM.  So the
handler also records every interrupt (`record`); `check` raises a recorded one again,
at safe points (between tasks, after each finished task of an executor) and when the
command returns, so a signal always ends the command with 130 / 143.

Python runs a signal handler only between bytecodes of the main thread, so a single
long call into native code (a KD-tree query over a million records) holds Ctrl-C until
it returns.  Such work is cut into `chunks` sized to take about `RESPONSE_SECONDS` each,
with a `check` between them: an interrupt then acts within a chunk.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

_depth = 0
_pending: BaseException | None = None
_received: BaseException | None = None


def record(exc: BaseException) -> None:
    """The handler's note of an interrupt it raises or defers (`check`)."""
    global _received
    if _received is None:
        _received = exc


def check() -> None:
    """Raise the recorded interrupt, if any: one that was swallowed where it was first
    raised ends the command here.  Called where work goes on normally, never in
    clean-up code (which an interrupt already propagating runs)."""
    if _received is not None:
        raise _received


def clear() -> None:
    """Forget recorded and held interrupts (the command line's signal scope, when it
    ends: an interrupt belongs to the command it ended)."""
    global _received, _pending
    _received = _pending = None


def deferring() -> bool:
    """Whether a `deferred` section is running (the signal handler asks)."""
    return _depth > 0


def defer(exc: BaseException) -> None:
    """Hold ``exc`` (the handler's ``KeyboardInterrupt``) until the section ends; the
    first signal wins, as it would have if raised at once."""
    global _pending
    if _pending is None:
        _pending = exc


@contextmanager
def deferred() -> Iterator[None]:
    """Run the block with interrupts held; raise the held one, if any, when it ends
    (after an exception of the block's own, the interrupt takes its place, with the
    block's exception as its context)."""
    global _depth, _pending
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _pending is not None:
            exc, _pending = _pending, None
            raise exc


#: how long one call into native code between two interrupt checks should take
RESPONSE_SECONDS = 0.2
_clock = time.perf_counter  # replaced by a fake clock in the tests


def chunks(n: int, first: int, most: int, size: int | None = None
           ) -> Iterator[tuple[int, int]]:
    """Slices ``(start, stop)`` of ``range(n)`` for work done a slice per native call:
    the first ``first`` long, each next one sized from the rate the caller did the last
    one at so that it takes about `RESPONSE_SECONDS` (at most 4 times the last, at least
    1, at most ``most``, which bounds temporary arrays); ``size``: every slice that long.
    A recorded interrupt (`check`) is raised between slices, so it acts within one."""
    start, step = 0, max(1, int(size or first))
    while start < n:
        stop = min(n, start + step)
        t0 = _clock()
        yield start, stop
        if stop < n:
            check()
            if size is None:
                took = _clock() - t0
                fit = (stop - start) * RESPONSE_SECONDS / took if took > 0 else most
                step = int(max(1, min(most, 4 * step, fit)))
        start = stop
