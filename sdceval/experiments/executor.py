"""Executors: run pure, idempotent tasks serially, in local processes, or on Dask.

A task is ``fn(**kwargs)`` with picklable arguments (data sets travel as a reference —
bundled name or file path plus roles — and are opened, and cached, in the worker).
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
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from sdceval.core import interrupts, threads
from sdceval.core.errors import SdcevalError
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


class DaskExecutor(Executor):
    """A Dask ``distributed`` cluster: a scheduler address, or a `LocalCluster` with
    ``workers`` processes when no address is given (capped by the thread budget like
    `ProcessExecutor`; each task runs with the budget's share of threads).  On a remote
    cluster each task runs single-threaded: the cluster's own worker threads decide the
    parallelism there."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int = 2):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise SdcevalError("the dask executor needs the optional dependency: "
                               "pip install 'sdceval[dask]'") from None
        self._cluster = None
        self.client = None
        self.scheduler = scheduler
        self.requested = int(workers)
        if scheduler:
            self.workers, self.threads_each = None, 1
        else:
            self.workers, self.threads_each = threads.per_worker(self.requested)
        try:
            if scheduler:
                self.client = Client(scheduler)
            else:
                # dashboard on a free port: 8787 may belong to another user's cluster;
                # Dask's own log lines (a worker's heartbeat failing as the cluster
                # stops, with its traceback) stay out of sdceval's stderr: task errors
                # reach the client as exceptions anyway
                import logging
                self._cluster = LocalCluster(
                    n_workers=self.workers, threads_per_worker=1, processes=True,
                    dashboard_address=":0", silence_logs=logging.CRITICAL,
                    env={**thread_env(self.threads_each),
                         "DASK_LOGGING__DISTRIBUTED": "critical"})
                self.client = Client(self._cluster)
        except BaseException:
            self.close()  # an interrupt while the cluster starts: stop what has started
            raise

    def describe(self) -> str:
        if self.scheduler:
            return f"Dask cluster at {self.scheduler}"
        return (f"Dask local cluster, {self.workers} worker process(es) x "
                f"{self.threads_each} thread(s)")

    def map(self, fn, tasks, progress=None):
        from distributed import as_completed
        futures = [self.client.submit(run_task, fn, self.threads_each, t, pure=False)
                   for t in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(tasks)
        finished = False
        try:
            for n, fut in enumerate(as_completed(futures)):
                # distributed's gc callback can swallow a SIGTERM raised inside it:
                # raised again here, after each finished task
                interrupts.check()
                results[index[fut.key]] = fut.result()
                if progress:
                    progress(n + 1, len(tasks))
            finished = True
            return results
        finally:
            if not finished:
                self.client.cancel(futures)
                self.close()  # local workers may be mid-task: stop them now

    def close(self):
        client, cluster = self.client, self._cluster
        self.client = self._cluster = None
        try:
            if client is not None:
                client.close()
        finally:
            if cluster is not None:
                cluster.close()


def make_executor(name: str, workers: int = 2, scheduler: str | None = None) -> Executor:
    if name == "serial":
        return Executor()
    if name == "processes":
        return ProcessExecutor(workers)
    if name == "dask":
        return DaskExecutor(scheduler, workers)
    raise SdcevalError(f"unknown executor {name!r}; use serial, processes or dask")
