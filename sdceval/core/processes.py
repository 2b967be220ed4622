"""The command line's process: signals, leaving it, the processes it started.

`signal_handling` turns SIGTERM and SIGINT into exceptions raised in the main thread
(`Terminated`, ``KeyboardInterrupt``), so that the clean-up code written for Ctrl-C
runs for both; `sdceval.core.interrupts` holds what the handler records and the
sections it must not cut in half.  `hard_exit` leaves at once where unwinding is
unsafe, and `end_children` is the net under the executors: after an interrupt it ends
every descendant still running.  `silence_stdout` is for a closed output pipe.
``sdceval.cli.main`` uses them around each command.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from sdceval.core import interrupts, threads


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's ``KeyboardInterrupt`` so that
    clean-up code written for an interrupt runs for both."""


def end_children(grace: float = 2.0) -> None:
    """Terminate (then kill) every descendant still running after an interrupt: the
    executors stop their workers, this is the net under them."""
    # imported here: ~25 ms that only an interrupted command pays, not every start-up
    import psutil
    # resource trackers (multiprocessing's, loky's) ignore SIGTERM by design and end by
    # themselves when this process exits, after unlinking what workers left behind
    procs = [p for p in psutil.Process().children(recursive=True)
             if "resource_tracker" not in _cmdline(p)]
    for sig in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
        for p in procs:
            try:  # psutil checks the pid still names the same process
                p.send_signal(sig)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        deadline = time.monotonic() + grace
        while procs and time.monotonic() < deadline:
            # waiting reaps our own children; a zombie grandchild is done (its parent
            # reaps it), though it stays in the process table and wait_procs would wait
            # for it until the deadline
            _, procs = psutil.wait_procs(procs, timeout=0.05)
            procs = [p for p in procs if not _is_zombie(p)]
        if not procs:
            return


def _cmdline(proc) -> str:
    import psutil
    try:
        return " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return ""


def _is_zombie(proc) -> bool:
    """Whether ``proc`` has exited (a zombie, gone, or no longer readable)."""
    import psutil
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return True


def hard_exit(code: int) -> None:
    """Leave now: no partial files, no children, buffered output flushed."""
    from sdceval.core.fileio import remove_partial_files
    remove_partial_files()
    end_children(grace=0.5)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


@contextmanager
def signal_handling() -> Iterator[None]:
    """SIGTERM raises `Terminated`, SIGINT ``KeyboardInterrupt`` (unless the process
    was started with SIGINT ignored, e.g. in the background); a second signal while the
    first is being cleaned up exits at once.  Previous handlers are restored, so that
    calling ``sdceval.cli.main`` from Python leaves the caller's handlers as they were."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    watched = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        watched.append(signal.SIGINT)
    previous = {s: signal.getsignal(s) for s in watched}

    def again(signum, frame):
        hard_exit(128 + signum)

    def first(signum, frame):
        for s in watched:
            signal.signal(s, again)
        if threads.parallel_native():
            # native helper threads (e.g. cKDTree.query(workers=2)) would keep writing
            # into memory that unwinding frees: leave without unwinding.  Inside a
            # method or a measure no file is being written and no executor runs.
            print("sdceval: error: " + ("terminated (SIGTERM)" if signum == signal.SIGTERM
                                        else "interrupted"), file=sys.stderr)
            hard_exit(128 + signum)
        exc = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        interrupts.record(exc)  # raised again at the next safe point if swallowed
        if interrupts.deferring():
            # inside a call that must not be cut in half (loky's submit): raised as
            # soon as it returns; a second signal still leaves at once (`again`)
            interrupts.defer(exc)
            return
        raise exc

    previous_hook = sys.unraisablehook

    def unraisable(info):
        # an interrupt raised where Python cannot propagate it (distributed's gc
        # callback) is raised again at the next safe point (`interrupts.check`): its
        # "Exception ignored" traceback would only add noise to the one-line error
        if not isinstance(info.exc_value, KeyboardInterrupt):
            previous_hook(info)

    for s in watched:
        signal.signal(s, first)
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for s, h in previous.items():
            signal.signal(s, h)
        interrupts.clear()  # what this scope received ended it; the caller starts afresh


def _to_devnull(stream) -> None:
    """Point ``stream``'s file descriptor at /dev/null (it is a closed pipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def silence_stdout() -> None:
    """stdout is a closed pipe: point it at /dev/null so that the interpreter's last
    flush does not fail again."""
    _to_devnull(sys.stdout)


def silence_stderr() -> None:
    """stderr is a closed pipe: point it at /dev/null, so that progress messages and
    notes (in this process and the ones it starts) are dropped rather than failing the
    command before its result file is written (issue 22 item 8)."""
    _to_devnull(sys.__stderr__)


class StderrGuard:
    """A stand-in for ``sys.stderr`` (`guard_stderr`): a write or flush that finds a
    closed pipe is dropped, as is every later one, instead of raising
    `BrokenPipeError` in the middle of a command."""

    def __init__(self, stream):
        self._stream = stream
        self.broken = False

    def _drop(self) -> None:
        self.broken = True
        silence_stderr()

    def write(self, s):
        if not self.broken:
            try:
                return self._stream.write(s)
            except BrokenPipeError:
                self._drop()
        return len(s)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def guard_stderr():
    """``sys.stderr`` is a `StderrGuard` inside the block (restored after it)."""
    before = sys.stderr
    if before is None or isinstance(before, StderrGuard):
        yield
        return
    sys.stderr = StderrGuard(before)
    try:
        yield
    finally:
        if sys.stderr.__class__ is StderrGuard and sys.stderr._stream is before:
            sys.stderr = before
