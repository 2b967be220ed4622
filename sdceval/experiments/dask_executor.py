"""The Dask executor (`DaskExecutor`), apart from the serial and process executors
(`sdceval.experiments.executor`) because it needs the ``[dask]`` extra.

Dask.  `DaskExecutor` runs on a local cluster (worker processes it starts and stops) or
on an external one (a scheduler address: ``dask scheduler``, then ``dask worker
ADDRESS`` on each machine; only sdceval's client closes at the end, the cluster stays
up).  A task's data set is opened on the client (`sdceval.core.loaders.open_ref`: a
relative path means the client's current directory, and a file that cannot be read is
reported there) and handed to the tasks as the `Dataset` itself, so workers never read
the data files.  It reaches each worker once, not once per task: sent to every worker
once per executor (``client.run``: pickled once, unpickled once in each worker, kept in
the worker process, `_keep_shared`), it travels with the tasks as a key (`_Shared`); a
worker that lacks it (one that joined or restarted since) says so (`DataNotOnWorker`)
and is sent it before the task runs again.  The copies leave the workers when the
executor closes.  (Scattering it to every worker and making it a dependency of every
task would not do: Dask's active memory manager drops, every few seconds, the replicas
no waiting task needs, and the next task on such a worker fetches the data again.)
The workers (and the scheduler, which reads the tasks) need the client's sdceval,
pandas and numpy.  Dask's own log lines (connections, heartbeats, "event loop
unresponsive", tracebacks of connections closing at the end) are silenced in the
client's process while the client lives (`_quiet_dask`); a task's error still reaches
the caller as the exception it raised.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable

from sdceval.core import interrupts, threads
from sdceval.core.errors import SdcevalError
from sdceval.experiments.executor import Executor, run_task, thread_env

#: seconds to wait for an external Dask scheduler to answer (``--connect-timeout``):
#: connecting, the handshake and its first replies all end within them
CONNECT_TIMEOUT = 10.0


def _bounded(client_class, seconds: float):
    """``client_class`` whose start ends within ``seconds`` (`DaskExecutor._connect`):
    its ``start`` hands them to distributed's ``sync`` as ``callback_timeout``, which
    cancels the start (closing its connection) when they run out."""
    class BoundedClient(client_class):
        def start(self, **kwargs):
            kwargs.setdefault("callback_timeout", seconds)
            return super().start(**kwargs)
    return BoundedClient


def _connect_failure(exc: BaseException, timeout: float) -> str:
    """What went wrong connecting to a scheduler, in a few words (no traceback, no
    frame sizes: a garbage answer says it is not a Dask scheduler)."""
    if isinstance(exc, TimeoutError):  # `_bounded`: connected, then silence
        return (f"it accepted the connection but gave no Dask answer within {timeout:g} s "
                "(--connect-timeout): not a Dask scheduler, or one too busy to answer")
    if isinstance(exc, ImportError):  # the scheduler refused this client's versions
        return _first_line(exc)
    text = _first_line(exc)
    if "refused" in f"{text} {exc.__cause__}".lower():
        return "the connection was refused (nothing listens there)"
    if isinstance(exc, OSError) and "timed out trying to connect" in text.lower():
        return f"no connection within {timeout:g} s (--connect-timeout)"
    if isinstance(exc, OSError) and not type(exc).__name__.startswith("CommClosed"):
        return text
    # MemoryError, a closed comm after a garbage frame, ValueError, TypeError, ...
    return "it answered in another protocol (a web server?), not as a Dask scheduler"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


#: the loggers of Dask's own messages in the client's process (`_quiet_dask`)
_DASK_LOGGERS = ("distributed", "tornado")
_quiet_users = 0
_quiet_saved: dict[str, int] = {}


def _quiet_dask(on: bool) -> None:
    """Silence (``on``) or restore Dask's loggers in this process.  Counted, so that
    overlapping executors restore the levels only when the last one closes; a logger
    with a level of its own (distributed's configuration gives some) is set too, not
    only the top ones."""
    import logging
    global _quiet_users
    if on:
        _quiet_users += 1
        if _quiet_users > 1:
            return
        names = [n for n, lg in logging.Logger.manager.loggerDict.items()
                 if isinstance(lg, logging.Logger) and n.split(".")[0] in _DASK_LOGGERS]
        for name in dict.fromkeys([*_DASK_LOGGERS, *names]):
            logger = logging.getLogger(name)
            _quiet_saved[name] = logger.level
            if "." not in name or logger.level != logging.NOTSET:
                logger.setLevel(logging.CRITICAL)
        return
    if _quiet_users == 0:
        return
    _quiet_users -= 1
    if _quiet_users == 0:
        for name, level in _quiet_saved.items():
            logging.getLogger(name).setLevel(level)
        _quiet_saved.clear()


def _absolute_paths(ref: dict) -> dict:
    """``ref`` with its data and schema paths made absolute where they name a file
    from this (the client's) current directory; a bundled name stays a name."""
    from pathlib import Path
    out = dict(ref)
    for key in ("data", "schema"):
        v = out.get(key)
        if isinstance(v, str) and v and Path(v).exists():
            out[key] = str(Path(v).resolve())
    return out


class _Shared:
    """A task's ``data_ref`` on its way to a Dask worker: the key under which the
    `Dataset` was sent to the workers (`DaskExecutor`); the worker puts the data set in
    its place (`run_shared_task`).  A key, not a Dask future: a future would make the
    data a dependency of the task, which Dask fetches again wherever it has dropped it
    (module docstring)."""

    __slots__ = ("key",)

    def __init__(self, key: str):
        self.key = key

    def __reduce__(self):
        return (_Shared, (self.key,))

    def __repr__(self) -> str:
        return f"_Shared({self.key!r})"


class DataNotOnWorker(Exception):
    """Raised by a task on a Dask worker that does not hold its data set (it joined
    the cluster, or restarted, after the data set was sent, or dropped it): the
    executor sends it there, unless it did since the task looked (``state``, from
    `_worker_state`), and submits the task again."""

    def __init__(self, key: str, worker: str, state: tuple):
        super().__init__(key, worker, state)
        self.key, self.worker, self.state = key, worker, tuple(state)

    def __str__(self) -> str:
        return f"data set {self.key} is not on worker {self.worker}"


#: in a Dask worker process: key -> the `Dataset` sent under it (`_keep_shared`), kept
#: between tasks; beyond `_SHARED_MAX` the least recently used goes (a task needing it
#: again gets it sent again), and an executor that closes removes its own
_shared: dict[str, Any] = {}
_SHARED_MAX = 8
_shared_lock = threading.Lock()
#: this process, and how many data sets it has dropped (`_worker_state`)
_process_id = f"{os.getpid()}-{time.time_ns()}"
_dropped = 0


def _worker_state() -> tuple[str, int]:
    """Which process, and how many data sets it had dropped: a task missing its data
    set says it, so that the client tells a miss from before its last sending (send
    nothing) from a loss since (send again)."""
    return _process_id, _dropped


def _keep_shared(key: str, dataset) -> tuple[str, int]:
    """Run on a worker (``client.run``): keep ``dataset`` under ``key``; the worker's
    state afterwards."""
    global _dropped
    with _shared_lock:
        _shared.pop(key, None)
        _shared[key] = dataset
        while len(_shared) > _SHARED_MAX:
            _shared.pop(next(iter(_shared)))
            _dropped += 1
        return _worker_state()


def _forget_shared(keys) -> int:
    """Run on a worker as an executor closes: its data sets leave the process."""
    global _dropped
    with _shared_lock:
        n = sum(_shared.pop(k, None) is not None for k in keys)
        _dropped += n
        return n


def run_shared_task(fn: Callable, n_threads: int, kwargs: dict) -> Any:
    """`run_task` on a Dask worker, with a ``data_ref`` sent as `_Shared` replaced by
    the `Dataset` this worker keeps (`DataNotOnWorker` when it has none)."""
    ref = kwargs.get("data_ref")
    if isinstance(ref, _Shared):
        with _shared_lock:
            dataset = _shared.pop(ref.key, None)
            if dataset is not None:
                _shared[ref.key] = dataset  # the most recently used, last
            state = _worker_state()
        if dataset is None:
            from distributed import get_worker
            raise DataNotOnWorker(ref.key, get_worker().address, state)
        kwargs = {**kwargs, "data_ref": dataset}
    return run_task(fn, n_threads, kwargs)


#: how many times one task may find a worker without its data set (it is sent there,
#: and the task submitted again) before the map gives up
_MAX_RESENDS = 5


class DaskExecutor(Executor):
    """A Dask ``distributed`` cluster: a scheduler address, or a `LocalCluster` with
    ``workers`` processes when no address is given (capped by the thread budget like
    `ProcessExecutor`; each task runs with the budget's share of threads).  On a remote
    cluster each task runs single-threaded: the cluster's own worker threads decide the
    parallelism there.  ``timeout``: seconds to wait for the scheduler to answer
    (default `CONNECT_TIMEOUT`).

    Data sets reach each worker once (module docstring): `map` opens every task's
    ``data_ref`` on the client, sends each data set to the workers once per executor
    and gives the tasks its key (`_Shared`); `close` removes it from the workers."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int = 2,
                 timeout: float | None = None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise SdcevalError("the dask executor needs the optional dependency: "
                               "pip install 'sdceval[dask]'") from None
        self._cluster = None
        self.client = None
        self.scheduler = scheduler
        self.requested = int(workers)
        #: id(Dataset) -> (the Dataset, kept alive so that its id stays its own; the key
        #: it was sent to the workers under)
        self._sent: dict[int, tuple[Any, str]] = {}
        #: (key, worker) -> the worker's state (`_worker_state`) after the data set was
        #: sent to it alone
        self._resent: dict[tuple[str, str], tuple] = {}
        if scheduler:
            self.workers, self.threads_each = None, 1
        else:
            self.workers, self.threads_each = threads.per_worker(self.requested)
        _quiet_dask(True)
        self._quiet = True
        try:
            if scheduler:
                self.client = self._connect(
                    Client, scheduler, CONNECT_TIMEOUT if timeout is None else timeout)
            else:
                # dashboard on a free port: 8787 may belong to another user's cluster;
                # the workers' log lines (a heartbeat failing as the cluster stops,
                # with its traceback) stay out of sdceval's stderr too
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

    @staticmethod
    def _connect(client_class, scheduler: str, timeout: float):
        """A client of the scheduler at ``scheduler``, or an `SdcevalError` naming it
        within ``timeout`` seconds.  distributed bounds the connection and the
        scheduler's replies by ``timeout`` but not the handshake's read, which waits
        forever on a server that accepts and stays silent: the whole start is bounded
        here (`_bounded`).  Whatever answers in another protocol fails somewhere in
        distributed's reading of it (a web server's ``HTTP/1.1`` read as a frame
        length is a 3.07 EiB allocation, a ``MemoryError``; a truncated frame a closed
        comm; a frame that decodes to the wrong shape a ``TypeError``): every failure
        becomes the one error, without the traceback."""
        failure = None
        try:
            # distributed's own bound a little inside ours, so that its word on a
            # refused connection (retried until its timeout) comes first
            return _bounded(client_class, timeout)(scheduler, timeout=0.9 * timeout)
        except Exception as exc:  # noqa: BLE001 - anything the address answered
            failure = _connect_failure(exc, timeout)
        # raised here, outside the except block, so that no traceback keeps the
        # half-made client alive; collected now, while its event loop runs, it closes
        # quietly (at exit it would print "Exception ignored in Client.__del__")
        import gc
        gc.collect()
        raise SdcevalError(
            f"cannot use the Dask scheduler at {scheduler!r}: {failure}; start one with "
            f"`dask scheduler` and workers with `dask worker {scheduler}`, or leave out "
            "the scheduler address to use a local cluster")

    def describe(self) -> str:
        if self.scheduler:
            address = self.scheduler
            try:
                address = self.client.scheduler.address or address
                nthreads = self.client.nthreads()  # worker address -> threads
            except Exception:  # noqa: BLE001 - closed or gone: the address alone
                return f"Dask cluster at {address}"
            n, t = len(nthreads), sum(nthreads.values())
            return (f"Dask cluster at {address} ({n} worker{'s' * (n != 1)}, "
                    f"{t} thread{'s' * (t != 1)})")
        return (f"Dask local cluster, {self.workers} worker process(es) x "
                f"{self.threads_each} thread(s)")

    def _opened(self, task: dict) -> tuple[dict, Any]:
        """``task`` with its data reference made absolute, and the `Dataset` it names
        opened on the client (None when the task has no ``data_ref``, or derives other
        references from it: a vectors job's per-release roles merge into the
        reference, ``{**data_ref, **roles[...]}``, so it stays a reference)."""
        from sdceval.core.loaders import open_ref
        ref = task.get("data_ref")
        if ref is None:
            return task, None
        if isinstance(ref, dict):
            ref = _absolute_paths(ref)
            task = {**task, "data_ref": ref}
            if task.get("roles"):
                return task, None
        return task, open_ref(ref)

    def _shared(self, dataset) -> _Shared:
        """``dataset`` as the tasks name it, sent to every worker on first use (pickled
        once; a worker that fails to take it is sent it again when a task needs it
        there, unless all fail: then the workers lack what the data set needs)."""
        hit = self._sent.get(id(dataset))
        if hit is None:
            import uuid
            key = f"sdceval-data-{uuid.uuid4().hex}"
            try:
                got = self.client.run(_keep_shared, key, dataset, on_error="return")
            except OSError as exc:  # distributed's CommClosedError too
                raise SdcevalError(f"lost {self._where()} while sending it data set "
                                   f"{dataset.name!r}: {exc}") from None
            failed = [(w, r) for w, r in got.items() if isinstance(r, BaseException)]
            if got and len(failed) == len(got):
                worker, err = failed[0]
                raise SdcevalError(
                    f"the Dask workers cannot take data set {dataset.name!r} (on {worker}: "
                    f"{type(err).__name__}: {err}); they need the same sdceval, pandas and "
                    "numpy as this client")
            hit = self._sent[id(dataset)] = (dataset, key)
        return _Shared(hit[1])

    def _send_again(self, missing: DataNotOnWorker) -> None:
        """The data set to the worker a task found without it, unless that task looked
        before the last sending there (tasks queued on the worker all miss it)."""
        where = (missing.key, missing.worker)
        process, dropped = missing.state
        last = self._resent.get(where)
        if last is not None and last[0] == process and dropped <= last[1]:
            return  # sent since the task looked, and not dropped since
        dataset = next(ds for ds, k in self._sent.values() if k == missing.key)
        try:
            got = self.client.run(_keep_shared, missing.key, dataset,
                                  workers=[missing.worker])
        except Exception:  # noqa: BLE001 - the worker left: the task goes elsewhere
            return
        if missing.worker in got:
            self._resent[where] = tuple(got[missing.worker])

    def _where(self) -> str:
        return (f"the Dask scheduler at {self.scheduler}" if self.scheduler
                else "the local Dask cluster")

    def map(self, fn, tasks, progress=None):
        from distributed import as_completed
        try:
            from distributed.client import FutureCancelledError as Cancelled
        except ImportError:  # pragma: no cover - older distributed
            from distributed import CancelledError as Cancelled
        # opened here, before anything goes to the cluster: a relative path means this
        # directory, and a file that cannot be read is reported as on the command line
        opened = [self._opened(t) for t in tasks]
        futures: list = []
        finished = False
        try:
            ready = [task if ds is None else {**task, "data_ref": self._shared(ds)}
                     for task, ds in opened]
            index: dict = {}  # future key -> task number

            def submit(i: int):
                fut = self.client.submit(run_shared_task, fn, self.threads_each, ready[i],
                                         pure=False)
                futures.append(fut)
                index[fut.key] = i
                return fut

            # on our client's event loop: by default as_completed takes the current
            # client's, and a caller's own client (``with Client(...)``) would delay
            # every completion until its loop wakes up (about 2 s)
            pending = as_completed([submit(i) for i in range(len(ready))],
                                   loop=self.client.loop)
            results: list[Any] = [None] * len(tasks)
            resent = [0] * len(tasks)
            done = 0
            for fut in pending:
                # distributed's gc callback can swallow a SIGTERM raised inside it:
                # raised again here, after each finished task
                interrupts.check()
                i = index.pop(fut.key)
                try:
                    results[i] = fut.result()  # a task's error propagates
                except Cancelled as exc:
                    # not by us (we cancel only after the map failed): the cluster
                    # dropped the task, e.g. the scheduler is gone
                    reason = getattr(exc, "reason", None) or "cancelled"
                    if reason == "scheduler-connection-lost":
                        raise SdcevalError(f"lost the connection to {self._where()} in "
                                           "the middle of the run: is it still running? "
                                           "Run again once it is") from None
                    raise SdcevalError(f"{self._where()} cancelled a task ({reason}); "
                                       "run again") from None
                except DataNotOnWorker as missing:
                    resent[i] += 1
                    if resent[i] > _MAX_RESENDS:
                        raise SdcevalError(
                            f"the Dask workers do not keep the data set sent to them "
                            f"({missing}, {resent[i]} times for one task): are they "
                            "restarting?") from None
                    self._send_again(missing)
                    pending.add(submit(i))
                    continue
                done += 1
                if progress:
                    progress(done, len(tasks))
            finished = True
            return results
        finally:
            if not finished:
                if futures and self.client is not None:
                    self.client.cancel(futures)
                self.close()  # local workers may be mid-task: stop them now

    def close(self):
        client, cluster = self.client, self._cluster
        keys = [k for _, k in self._sent.values()]
        self.client = self._cluster = None
        self._sent, self._resent = {}, {}
        try:
            if client is not None:
                try:
                    if keys and cluster is None:
                        # the data sets leave the workers of an external cluster (which
                        # stays up; a local cluster stops with them)
                        client.run(_forget_shared, keys, on_error="ignore")
                except Exception:  # noqa: BLE001 - a worker gone has nothing to drop
                    pass
                finally:
                    client.close()
        finally:
            try:
                if cluster is not None:
                    cluster.close()
            finally:
                if getattr(self, "_quiet", False):
                    self._quiet = False
                    _quiet_dask(False)
