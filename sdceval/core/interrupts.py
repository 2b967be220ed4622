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
"""
from __future__ import annotations

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
