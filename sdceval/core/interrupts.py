"""Sections that Ctrl-C or SIGTERM must not cut in half.

The command line turns SIGINT and SIGTERM into exceptions raised in the main thread
(`sdceval.cli`), wherever it happens to be.  Inside some third-party calls that is
unsafe: an exception raised while loky's ``ProcessPoolExecutor.submit`` is starting its
manager thread leaves the pool half built, and its ``shutdown`` then fails with an
unrelated error that hides the interrupt (the process exited 1, not 143).  Such a call
runs under `deferred`: a signal that arrives inside it is held (`defer`) and raised as
soon as the section ends, so the interrupt still ends the command, promptly (a
section is one short call), and the clean-up code sees the pool whole.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

_depth = 0
_pending: BaseException | None = None


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
