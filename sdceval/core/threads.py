"""The thread budget: how many CPU threads sdceval may use, set in one place.

sdceval runs on shared servers, where a library that starts one thread per core in
every process (k-means' OpenMP, BLAS, ``cKDTree.query(workers=-1)``) oversubscribes the
machine: on a 2-core server with two other busy processes, ``sdceval compare`` took
16-32 s instead of 3 s.  So every thread pool is sized from one budget:

- ``SDCEVAL_THREADS`` in the environment, or ``--threads`` on the command line, or
  `set_budget` from Python; ``0`` means every core of the machine;
- default **1**: a single thread per process, the polite choice on a shared server.

`limited` caps the native pools (BLAS, OpenMP) through ``threadpoolctl`` while a method
or a measure runs; `workers` is the number to pass to scipy's ``workers=`` arguments.
Executors that start worker processes split the budget between them
(`per_worker`), so processes x threads never exceed it.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from sdceval.core.errors import SdcevalError

ENV = "SDCEVAL_THREADS"
DEFAULT = 1
_budget: int | None = None


def cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _parse(value, where: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise SdcevalError(f"{where} must be a whole number of threads (0 = all cores), "
                           f"got {value!r}") from None
    if n < 0:
        raise SdcevalError(f"{where} must be >= 0 (0 = all cores), got {n}")
    return cores() if n == 0 else n


def set_budget(n: int | None) -> None:
    """Set the thread budget for this process (``None``: back to the environment or
    the default; ``0``: all cores)."""
    global _budget
    _budget = None if n is None else _parse(n, "threads")


def budget() -> int:
    """The number of threads sdceval may use in this process."""
    if _budget is not None:
        return _budget
    env = os.environ.get(ENV)
    if env not in (None, ""):
        return _parse(env, f"environment variable {ENV}")
    return DEFAULT


def explicit() -> bool:
    """Whether the budget was chosen (``--threads``, `set_budget`, ``SDCEVAL_THREADS``)
    rather than left at the default."""
    return _budget is not None or os.environ.get(ENV) not in (None, "")


@contextmanager
def raised_to(n: int) -> Iterator[None]:
    """Within the block, a budget of at least ``n`` threads when none was chosen
    (`explicit`): an experiment file's ``workers`` is honoured unless ``--threads``
    says otherwise (`sdceval.experiments.runner`)."""
    global _budget
    if explicit() or n <= budget():
        yield
        return
    _budget = int(n)
    try:
        yield
    finally:
        _budget = None


def workers() -> int:
    """``workers=`` for scipy calls (``cKDTree.query``): the budget, never ``-1``."""
    return budget()


def per_worker(processes: int) -> tuple[int, int]:
    """``(processes, threads_each)`` so that processes x threads <= the budget: at most
    as many worker processes as threads in the budget, the budget split between them."""
    total = budget()
    processes = max(1, min(int(processes), total))
    return processes, max(1, total // processes)


_parallel_sections = 0


def parallel_native() -> bool:
    """Whether a `limited` section with more than one thread is running.

    There, native code may run on helper threads that an exception in the main thread
    does not stop: scipy's ``workers=`` functions run Python threads in native code, and
    when Ctrl-C interrupts the main thread's join, unwinding frees memory they still
    write to (a segfault).  The CLI therefore ends the process at once on a signal
    inside such a section instead of raising (`sdceval.cli`)."""
    return _parallel_sections > 0


# threadpoolctl finds the native pools by scanning the process's shared libraries,
# about 3 ms a scan: too much for every method and measure call of a bisection (over
# a hundred per `compare`).  The scan is kept and redone only when new modules (and so
# possibly new native libraries, e.g. scikit-learn's OpenMP) have been imported.
_controller = None
_controller_modules = -1


def _pools():
    global _controller, _controller_modules
    import sys
    if _controller is None or len(sys.modules) != _controller_modules:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
        _controller_modules = len(sys.modules)
    return _controller


@contextmanager
def limited(n: int | None = None) -> Iterator[int]:
    """Cap the native thread pools (BLAS, OpenMP) at ``n`` (default: the budget)."""
    global _parallel_sections
    n = budget() if n is None else n
    with _pools().limit(limits=n):
        if n <= 1:
            yield n
            return
        _parallel_sections += 1
        try:
            yield n
        finally:
            _parallel_sections -= 1
