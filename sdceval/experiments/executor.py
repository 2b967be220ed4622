"""Executors: run pure, idempotent tasks serially, in local processes, or on Dask.

A task is ``fn(**kwargs)`` with picklable arguments (data sets travel as a reference —
bundled name or file path plus roles — and are opened, and cached, in the worker; the
Dask executor opens them on the client instead and sends them along, see Dask below).
`Executor.map` returns results in task order.

Threads.  The thread budget (`sdceval.core.threads`, ``--threads`` /
``SDCEVAL_THREADS``) is the number of cores sdceval may keep busy.  Executors that start
worker processes split it (`threads.per_worker`): at most ``budget`` processes, each
with ``budget // processes`` threads, so processes x threads never exceed it.  Each
worker sets its own budget and caps its native pools (BLAS, OpenMP) through the
environment before any library loads and through ``threadpoolctl`` around every task.
With the default budget of 1, ``--workers 2`` therefore runs one process.

Interrupts.  Ctrl-C or SIGTERM (which the CLI turns into an exception) in the middle of
`map` kills the worker processes before the exception propagates (loky
``shutdown(kill_workers=True)``; the Dask futures are cancelled and the local cluster
closed), so nothing keeps computing after sdceval has exited.

Dask.  `sdceval.experiments.dask_executor.DaskExecutor` runs the tasks on a local or an
external Dask cluster; `sdceval.experiments.executors.make_executor` picks one by name.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from sdceval.core import interrupts, threads
from sdceval.core.tasks import run_serially

#: variables that size the native thread pools when a library loads
_NATIVE_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                       "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def thread_env(n: int) -> dict[str, str]:
    """Environment for a worker process with a budget of ``n`` threads."""
    return {threads.ENV: str(n), **{v: str(n) for v in _NATIVE_THREAD_VARS}}


def run_task(fn: Callable, n_threads: int, kwargs: dict) -> Any:
    """Run ``fn(**kwargs)`` in a worker with a budget of ``n_threads`` threads (a
    module-level function, so that it pickles)."""
    threads.set_budget(n_threads)
    with threads.limited(n_threads):
        return fn(**kwargs)


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C in a terminal reaches the whole process group, but
    the parent decides what happens (it kills the workers); a worker raising
    KeyboardInterrupt mid-task would only add tracebacks."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Executor:
    """Tasks one after another in this process, under the whole thread budget."""

    name = "serial"

    def map(self, fn: Callable, tasks: Sequence[dict], progress=None) -> list[Any]:
        return run_serially(fn, tasks, progress)

    def describe(self) -> str:
        return "serial, in this process"

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ProcessExecutor(Executor):
    """Local worker processes (loky, the process pool joblib uses).

    ``workers`` is an upper bound: the thread budget caps it (see the module
    docstring).  A pool is started for each `map` and shut down before it returns,
    normally (workers finish and exit) or on any exception (workers are killed), so
    no worker outlives the call.
    """

    name = "processes"

    def __init__(self, workers: int = 2):
        self.requested = int(workers)
        self.workers, self.threads_each = threads.per_worker(self.requested)

    def describe(self) -> str:
        text = f"{self.workers} worker process(es) x {self.threads_each} thread(s)"
        if self.workers < self.requested:
            text += (f" ({self.requested} requested; the thread budget is "
                     f"{threads.budget()}: raise --threads / {threads.ENV} for more)")
        return text

    def map(self, fn, tasks, progress=None):
        if len(tasks) <= 1 or self.workers <= 1:
            return super().map(fn, tasks, progress)
        from concurrent.futures import FIRST_COMPLETED, wait

        from joblib.externals.loky import ProcessPoolExecutor
        with interrupts.deferred():
            pool = ProcessPoolExecutor(max_workers=min(self.workers, len(tasks)),
                                       env=thread_env(self.threads_each),
                                       initializer=_ignore_sigint)
        finished = False
        try:
            # as many tasks in flight as workers, the next submitted when one finishes:
            # loky's manager thread fails (KeyError) if a kill finds task ids still
            # queued, and the pickled arguments of every task need not wait in memory
            queued = iter(enumerate(tasks))
            futures: dict = {}

            def submit_next():
                nxt = next(queued, None)
                if nxt is not None:
                    # an interrupt inside submit (which may be starting loky's manager
                    # thread) would leave a pool that shutdown cannot stop: held until
                    # submit returns (`sdceval.core.interrupts`)
                    with interrupts.deferred():
                        fut = pool.submit(run_task, fn, self.threads_each, nxt[1])
                    futures[fut] = nxt[0]

            for _ in range(self.workers):
                submit_next()
            results: list[Any] = [None] * len(tasks)
            done = 0
            while futures:
                ready, _ = wait(list(futures), return_when=FIRST_COMPLETED)
                interrupts.check()  # one swallowed while waiting ends the map here
                for fut in ready:
                    results[futures.pop(fut)] = fut.result()  # a task's error propagates
                    done += 1
                    if progress:
                        progress(done, len(tasks))
                    submit_next()
            finished = True
            return results
        finally:
            # on an error or an interrupt the remaining tasks are abandoned: kill the
            # workers now rather than let them compute for nobody
            if finished:
                pool.shutdown(wait=True)
            else:
                try:
                    pool.shutdown(wait=True, kill_workers=True)
                except Exception:  # noqa: BLE001 - the error in flight is the one to report
                    # a pool broken by the error in flight may fail to shut down; the
                    # CLI's last step ends any child left (`cli._end_children`)
                    pass
