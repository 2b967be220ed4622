"""The Dask side of a partitioned evaluation (`sdceval.experiments.partitioned`): task
graphs computed on a distributed client or on dask's local scheduler, the evaluation's
context put once in every process that runs tasks, and partial results merged in a tree.

Dask is imported only inside these functions (the package imports without it).
"""
from __future__ import annotations

import threading
import uuid
import warnings
from typing import Any

from sdceval.core.errors import SdcevalError

#: partial results merged per task (a tree of merges: no task holds them all)
FAN_IN = 8
#: times a worker found without the context (joined or restarted) before giving up
_MAX_RESENDS = 3

#: in each process that runs tasks: key -> the context sent under it (`_install`)
CONTEXTS: dict[str, Any] = {}
_LOCK = threading.Lock()


class ContextMissing(Exception):
    """A task found its process without the context (a worker that joined or restarted
    after it was sent): the client sends it there and computes again."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _install(key: str, ctx) -> bool:
    """Run on each worker (``client.run``): keep the context under ``key``."""
    with _LOCK:
        CONTEXTS[key] = ctx
    return True


def _holds(key: str) -> bool:
    return key in CONTEXTS


def _forget(key: str) -> int:
    """Run on each worker at the end: the context (and what it caches) leaves the
    process."""
    with _LOCK:
        n = CONTEXTS.pop(key, None) is not None
    return int(n)


def context(key: str):
    ctx = CONTEXTS.get(key)
    if ctx is None:
        raise ContextMissing(key)
    return ctx


class Runner:
    """Computes task graphs on a distributed client or on dask's local scheduler, and
    puts the context in every process that runs tasks: on a cluster with ``client.run``
    (pickled once, unpickled once per worker); locally, the object itself."""

    def __init__(self, client):
        self.client = _distributed_client(client)
        self.keys: list[str] = []
        self._quiet = False

    def __enter__(self):
        if self.client is not None:
            from sdceval.experiments.dask_executor import _quiet_dask
            _quiet_dask(True)
            self._quiet = True
        return self

    def __exit__(self, *exc):
        try:
            for key in self.keys:
                if self.client is None:
                    _forget(key)
                else:
                    try:
                        self.client.run(_forget, key, on_error="ignore")
                    except Exception:  # noqa: BLE001 - a worker gone has nothing to drop
                        pass
        finally:
            if self._quiet:
                from sdceval.experiments.dask_executor import _quiet_dask
                _quiet_dask(False)

    def install(self, ctx) -> str:
        key = f"sdceval-partitioned-{uuid.uuid4().hex}"
        self.keys.append(key)
        if self.client is None:
            _install(key, ctx)
        else:
            self._send(key, ctx, None)
        return key

    def _send(self, key: str, ctx, workers) -> None:
        got = self.client.run(_install, key, ctx, workers=workers, on_error="return")
        failed = [(w, r) for w, r in got.items() if isinstance(r, BaseException)]
        if failed and len(failed) == len(got):
            worker, err = failed[0]
            raise SdcevalError(f"the Dask workers cannot take the evaluation's context (on "
                               f"{worker}: {type(err).__name__}: {err}); they need the same "
                               "sdceval, pandas and numpy as this client")

    def compute(self, graphs: list, ctx=None, key: str | None = None) -> list:
        """``graphs`` (delayed objects, dask collections) computed; a worker found
        without the context gets it, and the graphs run again (at most `_MAX_RESENDS`
        times)."""
        for attempt in range(_MAX_RESENDS + 1):
            try:
                return self._compute(graphs)
            except ContextMissing:
                if self.client is None or ctx is None or attempt == _MAX_RESENDS:
                    raise SdcevalError("the Dask workers do not keep the evaluation's "
                                       "context (are they restarting?); run again") from None
                held = self.client.run(_holds, key, on_error="return")
                self._send(key, ctx, [w for w, h in held.items() if h is not True])

    def _compute(self, graphs: list) -> list:
        if self.client is None:
            import dask
            with warnings.catch_warnings():
                # dask's Parquet reader calls a pandas API that pandas 3 deprecates: the
                # user can do nothing about it
                warnings.filterwarnings("ignore", message="The inplace keyword in "
                                        "DataFrame.reset_index is deprecated")
                return list(dask.compute(*graphs))
        futures = self.client.compute(graphs)
        try:
            return self.client.gather(futures)
        except BaseException:
            self.client.cancel(futures)
            raise


def _distributed_client(client):
    """The ``distributed`` client to run on: the one given, else the default one when
    dask's scheduler is (or defaults to) it; None for a local scheduler."""
    if client is not None:
        if not hasattr(client, "run") or not hasattr(client, "compute"):
            raise SdcevalError(f"client must be a distributed.Client, not "
                               f"{type(client).__name__}")
        return client
    import dask
    chosen = dask.config.get("scheduler", None)
    if chosen in ("processes", "multiprocessing"):
        raise SdcevalError("evaluate_partitioned runs on dask's synchronous or threaded "
                           "scheduler or on a distributed client, not on the 'processes' "
                           "scheduler (its processes would not hold the evaluation's "
                           "context); use a distributed.LocalCluster")
    if chosen not in (None, "dask.distributed", "distributed"):
        return None
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def tree_merge(items: list, merge, *args) -> Any:
    """``merge(*args, *some_items)`` over ``items`` (delayed), in order, `FAN_IN` at a
    time: no task (and not the client) holds every partial result at once."""
    from dask import delayed
    while len(items) > 1:
        items = [delayed(merge, pure=True)(*args, *items[i:i + FAN_IN])
                 if len(items[i:i + FAN_IN]) > 1 else items[i]
                 for i in range(0, len(items), FAN_IN)]
    return items[0]
