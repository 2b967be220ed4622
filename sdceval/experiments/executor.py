"""Executors: run pure, idempotent tasks serially, in local processes, or on Dask.

A task is ``fn(**kwargs)`` with picklable arguments (data sets travel as a reference —
bundled name or file path plus roles — and are opened, and cached, in the worker).
`Executor.map` returns results in task order.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from sdceval.core.errors import SdcevalError


class Executor:
    name = "serial"

    def map(self, fn: Callable, tasks: Sequence[dict], progress=None) -> list[Any]:
        out = []
        for i, t in enumerate(tasks):
            out.append(fn(**t))
            if progress:
                progress(i + 1, len(tasks))
        return out

    def close(self) -> None:
        pass


class ProcessExecutor(Executor):
    """Local worker processes (joblib/loky); tasks are spread over ``workers``."""

    name = "processes"

    def __init__(self, workers: int = 2):
        self.workers = workers

    def map(self, fn, tasks, progress=None):
        if len(tasks) <= 1 or self.workers <= 1:
            return super().map(fn, tasks, progress)
        from joblib import Parallel, delayed
        results = []
        par = Parallel(n_jobs=self.workers, return_as="generator", batch_size=1)
        for i, r in enumerate(par(delayed(fn)(**t) for t in tasks)):
            results.append(r)
            if progress:
                progress(i + 1, len(tasks))
        return results


class DaskExecutor(Executor):
    """A Dask ``distributed`` cluster: a scheduler address, or a `LocalCluster` with
    ``workers`` processes when no address is given."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int = 2):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise SdcevalError("the dask executor needs the optional dependency: "
                               "pip install 'sdceval[dask]'") from None
        self._cluster = None
        if scheduler:
            self.client = Client(scheduler)
        else:
            self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                         processes=True, dashboard_address=None)
            self.client = Client(self._cluster)

    def map(self, fn, tasks, progress=None):
        from distributed import as_completed
        futures = [self.client.submit(fn, pure=False, **t) for t in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(tasks)
        for n, fut in enumerate(as_completed(futures)):
            results[index[fut.key]] = fut.result()
            if progress:
                progress(n + 1, len(tasks))
        return results

    def close(self):
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_executor(name: str, workers: int = 2, scheduler: str | None = None) -> Executor:
    if name == "serial":
        return Executor()
    if name == "processes":
        return ProcessExecutor(workers)
    if name == "dask":
        return DaskExecutor(scheduler, workers)
    raise SdcevalError(f"unknown executor {name!r}; use serial, processes or dask")
