"""The executors by name (``executor = "serial" | "processes" | "dask"`` in an experiment
file, ``--executor``): `sdceval.experiments.executor` (serial, processes) and
`sdceval.experiments.dask_executor` (Dask, the ``[dask]`` extra, imported only when
asked for)."""
from __future__ import annotations

from sdceval.core.errors import SdcevalError
from sdceval.experiments.executor import Executor, ProcessExecutor


def make_executor(name: str, workers: int = 2, scheduler: str | None = None,
                  timeout: float | None = None) -> Executor:
    """The executor ``name``; ``timeout``: seconds a Dask ``scheduler`` has to answer
    (default `sdceval.experiments.dask_executor.CONNECT_TIMEOUT`)."""
    if name == "serial":
        return Executor()
    if name == "processes":
        return ProcessExecutor(workers)
    if name == "dask":  # distributed is an extra, imported only when asked for
        from sdceval.experiments.dask_executor import DaskExecutor
        return DaskExecutor(scheduler, workers, timeout=timeout)
    raise SdcevalError(f"unknown executor {name!r}; use serial, processes or dask")
