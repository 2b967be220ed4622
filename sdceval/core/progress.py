"""Progress bars for long runs (tqdm on stderr), one policy for the whole package.

A bar appears only on a terminal, only when the environment variable ``SDCEVAL_QUIET``
(set by ``sdceval -q``) is unset, and only once the run has lasted `DELAY` seconds, so
short runs and scripts print nothing; ``enabled=True`` / ``False`` force it on / off.

A run may also be followed from another process (the app's run manager,
`sdceval.app.runs`): when the environment variable ``SDCEVAL_PROGRESS_FILE`` names a
file, `RunProgress` writes its current step, the fraction done and the estimated time
left to it as JSON at every event (`record`), atomically, so a reader never sees half
a file.
"""
from __future__ import annotations

import json
import os
import sys
import time

#: environment variable that silences progress bars (``sdceval -q`` sets it)
QUIET_ENV = "SDCEVAL_QUIET"
#: a bar appears only once a run has lasted this long (seconds)
DELAY = 2.0


#: environment variable naming a JSON file `record` writes the progress to
PROGRESS_FILE_ENV = "SDCEVAL_PROGRESS_FILE"


def record(step: str, fraction: float | None = None,
           eta_seconds: float | None = None) -> None:
    """Write ``{"step", "fraction", "eta_seconds", "updated"}`` to the file
    ``SDCEVAL_PROGRESS_FILE`` names (nothing when unset): a temporary file beside it,
    then renamed over it (readers see the old or the new one, never half).  A file
    that cannot be written is skipped: following a run never stops it."""
    path = os.environ.get(PROGRESS_FILE_ENV)
    if not path:
        return
    payload = {"step": str(step),
               "fraction": None if fraction is None else min(max(float(fraction), 0.0), 1.0),
               "eta_seconds": None if eta_seconds is None else round(float(eta_seconds), 1),
               "updated": time.time()}
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(payload, f)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def quiet() -> bool:
    return os.environ.get(QUIET_ENV, "").strip().lower() not in ("", "0", "false", "no")


def progress_bar(desc: str, total: int | None = None, unit: str = " nodes",
                 enabled: bool | None = None):
    """A tqdm bar on stderr (module docstring for when it shows); a bar that cannot
    show is a no-op object, so that short runs do not import tqdm (60 ms)."""
    if enabled is None:
        disable = True if quiet() or not sys.stderr.isatty() else None
        delay = DELAY
    else:
        disable, delay = not enabled, 0.0
    if disable:
        return _NoBar()
    from tqdm import tqdm  # imported here: only long runs on a terminal need it

    return tqdm(desc=desc, total=total, unit=unit, file=sys.stderr, disable=disable,
                delay=delay, leave=False, dynamic_ncols=True)


class _NoBar:
    """What the package uses of a disabled tqdm bar (``update``, ``n``, ``close``)."""

    n = 0
    disable = True

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        pass


# -- a run of candidates searched by evaluations (compare) ------------------------------
#: evaluations a candidate is assumed to take before one has finished (a bisection
#: typically brackets and converges in about this many; the estimate is "about")
TYPICAL_EVALUATIONS = 12


class RunProgress:
    """Progress of a run of ``total`` candidates, each searched by evaluations (issue 28
    item 7: ``compare`` is silent for minutes otherwise).

    On a terminal (and not ``-q``): one bar over the candidates (`progress_bar`), the
    latest evaluation and the time left as its text.  Otherwise: plain lines through
    ``say``, one when a candidate starts and one per evaluation, each with an estimate
    of the time left (`time_left`).  The matching code reports to the run that is
    `active` (`reporting`), so no callback crosses the layers; a task run in another
    process reports nothing (its executor's bar counts the tasks)."""

    def __init__(self, say, total: int, what: str = "candidates", clock=None, bar=None):
        import time
        self.say = say or (lambda msg: None)
        self.total, self.what = int(total), what
        self.clock = clock or time.perf_counter
        self._bar = bar  # made at the first candidate: none when tasks report elsewhere
        self.done = 0               # candidates finished
        self.done_time = 0.0        # seconds they took
        self.name: str | None = None
        self.started = self.clock()
        self.evaluations = 0        # of the current candidate

    @property
    def bar(self):
        if self._bar is None:
            self._bar = progress_bar(f"matching {self.total} {self.what}", total=self.total,
                                     unit=f" {self.what}")
        return self._bar

    @property
    def plain(self) -> bool:
        """Plain lines (no bar: not a terminal, or ``-q``)."""
        return bool(getattr(self.bar, "disable", True))

    def candidate(self, name: str) -> None:
        """A candidate starts (the previous one, if any, is finished)."""
        self._finish()
        self.name, self.started, self.evaluations = name, self.clock(), 0
        self._record()
        if self.plain:
            self.say(f"[{self.done + 1}/{self.total}] {name}: searching "
                     f"({self.left_words()})")

    def evaluation(self, text: str) -> None:
        """One evaluation of the current candidate is done; ``text`` says what it gave."""
        self.evaluations += 1
        self._record()
        line = f"{self.name}: evaluation {self.evaluations}: {text}; {self.left_words()}"
        if self.plain:
            self.say("  " + line)
        else:
            self.bar.set_postfix_str(line, refresh=True)

    def time_left(self) -> float | None:
        """Seconds left, estimated: the mean time of the finished candidates for each
        one left (less the current one's time so far); before any has finished, the
        current candidate's time per evaluation times `TYPICAL_EVALUATIONS` per
        candidate; None before the first evaluation."""
        now = self.clock() - self.started if self.name is not None else 0.0
        running = 1 if self.name is not None else 0
        if self.done:
            each = self.done_time / self.done
            return max(each - now, 0.0) * running + each * (self.total - self.done - running)
        if not self.evaluations:
            return None
        per = now / self.evaluations
        return per * (max(TYPICAL_EVALUATIONS - self.evaluations, 1)
                      + TYPICAL_EVALUATIONS * (self.total - 1))

    def fraction(self) -> float:
        """The share of the run done: the finished candidates, and the current one's
        evaluations out of about `TYPICAL_EVALUATIONS` (never all of it)."""
        part = 0.0
        if self.name is not None and self.evaluations:
            part = self.evaluations / (self.evaluations
                                       + max(TYPICAL_EVALUATIONS - self.evaluations, 1))
        return (self.done + part) / self.total if self.total else 1.0

    def _record(self) -> None:
        """The progress file (`record`), when one is asked for."""
        if not os.environ.get(PROGRESS_FILE_ENV):
            return
        if self.name is None:
            step = f"matched {self.done} of {self.total} {self.what}"
        else:
            step = (f"matching {self.name} ({self.done + 1} of {self.total} {self.what}"
                    + (f", evaluation {self.evaluations}" if self.evaluations else "") + ")")
        record(step, self.fraction(), self.time_left())

    def left_words(self) -> str:
        left = self.time_left()
        if left is None:
            return "time left: estimated after the first evaluation"
        return f"about {duration_words(left)} left"

    def _finish(self) -> None:
        if self.name is None:
            return
        self.done += 1
        self.done_time += self.clock() - self.started
        self.name = None
        self.bar.update(1)

    def close(self) -> None:
        self._finish()
        if self.done:  # candidates matched in other processes report nothing here
            self._record()
        if self._bar is not None:
            self._bar.close()


class _NoRun:
    """The run reported to when none is `active`: drops everything."""

    def candidate(self, name: str) -> None:
        pass

    def evaluation(self, text: str) -> None:
        pass


_ACTIVE: list = []


def active():
    """The `RunProgress` being reported to (`reporting`), or a no-op."""
    return _ACTIVE[-1] if _ACTIVE else _NoRun()


class reporting:
    """``with reporting(run): ...``: make ``run`` the `active` one, closed on exit."""

    def __init__(self, run: RunProgress):
        self.run = run

    def __enter__(self) -> RunProgress:
        _ACTIVE.append(self.run)
        return self.run

    def __exit__(self, *exc) -> None:
        _ACTIVE.remove(self.run)
        self.run.close()


def duration_words(seconds: float) -> str:
    """``"40 s"``, ``"3 min 5 s"``, ``"1 h 20 min"``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"
