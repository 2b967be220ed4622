"""Job kinds: the registry that experiment files, the runner and the commands share
(issue 18 item 6).

A job kind is one table of an experiment file (``[[comparison]]``, ``[[lattice]]``,
...) and the orchestration behind it.  Each registers once, beside its code, with
`register_job_kind`::

    @register_job_kind("lattice", description="...", section="lattices",
                       keys=("models", "rule", ...), validate=validate_lattice_options,
                       params=(Param("export", bool, default=False, ...), ...))
    def run_lattice_job(job, spec, executor, say, out) -> LatticeJobResult: ...

`sdceval.experiments.spec.load_spec` reads the registry for the tables a file may hold
and checks each table with `JobKind.check` (the keys it allows, then ``validate``);
`sdceval.experiments.runner.run_experiment` runs each job with its kind's ``run`` and
writes each result's ``to_dict()`` under the kind's ``section`` of ``results.json``.
A result has ``files`` (what it wrote), ``to_dict()`` and ``__str__`` (its part of
the run's summary, under the heading ``[<key>]``, followed by its ``headline`` when it
has one).

A command that runs one job (``sdceval compare``, ``tradeoff``, ``lattice search``,
``vectors``, ``pbg``) builds that kind's options with `command_job` and calls the same
orchestration as the experiment file; it adds only its printing and its file names.
``sdceval list jobs`` lists the registry (name, description, `params`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.loaders import ref_of
from sdceval.core.progress import progress_bar
from sdceval.core.registry import Param, RegistrationError, Registry

#: every job kind by name, in registration order (the order of a file's jobs)
JOB_KINDS: Registry = Registry("job kind")
#: the options that name the data set and its roles, allowed in every job
DATA_KEYS = ("data", "schema", "qi", "sensitive", "numeric", "label", "weight",
             "household", "household_keys")


#: suffixes of data files left out of the names built from them
_DATA_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zip", ".csv", ".tsv", ".txt", ".parquet",
                  ".pq", ".dat", ".data")


#: the longest `safe_name` (a job's key at most `KEY_MAX`): a job's files,
#: ``<key>_<what>.<ext>``, stay well inside the 255 bytes a file name may have
NAME_MAX, KEY_MAX = 48, 120


def shortened(name: str, limit: int, source=None) -> str:
    """``name`` if at most ``limit`` characters, else its start and ``-`` and 8 hex
    digits of the sha256 of ``source`` (default ``name``): short, and still unique."""
    if len(name) <= limit:
        return name
    import hashlib
    digest = hashlib.sha256(str(name if source is None else source).encode(
        "utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name[:limit - 9]}-{digest}"


def safe_name(value, default: str = "data", limit: int = NAME_MAX) -> str:
    """A file-name form of a name taken from an input (issue 22 item 7): the last part
    of a path, without data-file suffixes, only ``[A-Za-z0-9._-]`` (others become
    ``_``), no leading dots (so never ``..``); ``default`` when nothing is left; at most
    ``limit`` characters (`shortened`: a value of any length gives a name a file
    system takes, issue 27 item 8)."""
    name = re.split(r"[\\/]", str(value))[-1]
    lowered = name.lower()
    stripped = True
    while stripped:
        stripped = False
        for suffix in _DATA_SUFFIXES:
            if lowered.endswith(suffix) and len(name) > len(suffix):
                name, lowered = name[:-len(suffix)], lowered[:-len(suffix)]
                stripped = True
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".").strip("_")
    return shortened(name, limit, value) if name else default


def names_file(value) -> bool:
    """Whether an option's ``value`` names an existing file: a non-empty string that
    the file system finds as a file (a value no file may have, too long or with a NUL,
    names none rather than raising: any text option is asked, titles too)."""
    if not isinstance(value, (str, Path)) or not str(value):
        return False
    try:
        return Path(value).is_file()
    except (OSError, ValueError):
        return False


@dataclass
class Job:
    """One job: its kind, its position among the file's jobs and its options.

    ``dataset`` and ``command`` are set by `command_job` only: the data set the command
    opened (its tasks get it through `ref_of`, so it is read once) and the command's
    name (its messages then carry no job key)."""

    kind: str
    index: int
    options: dict[str, Any]
    dataset: Any = None
    command: str | None = None
    #: the values of the sweep variables this job is one combination of
    #: (`sdceval.experiments.file_schema.expand_sweeps`)
    sweep: dict[str, Any] = field(default_factory=dict)
    #: what the kind's ``validate`` returned when the job was built (`JobKind.check`):
    #: its options parsed once, which ``run`` uses instead of parsing them again
    plan: Any = None

    def seed(self, spec) -> int:
        """The job's seed: its own ``seed`` option (a sweep sets it), else the
        experiment's."""
        return int(self.options.get("seed", spec.seed))

    @property
    def key(self) -> str:
        """``<kind><index>_<data>``, the prefix of the job's output files: ``<data>`` is
        `safe_name` of the ``data`` option (a file's stem, never a path), then each
        sweep variable and its value (24 characters each at most); `KEY_MAX`
        characters at most in all."""
        key = f"{self.kind}{self.index}_{safe_name(self.options.get('data', ''))}"
        for name, value in self.sweep.items():
            key += f"_{safe_name(name, 'v', 24)}{safe_name(value, 'v', 24)}"
        return shortened(key, KEY_MAX)

    @property
    def title(self) -> str:
        title = self.options.get("title", self.key)
        if self.sweep and "title" in self.options:
            title += " (" + ", ".join(f"{k} = {v}" for k, v in self.sweep.items()) + ")"
        return title

    @property
    def tag(self) -> str:
        """The prefix of the job's progress messages."""
        return "" if self.command else f"[{self.key}] "

    def data_ref(self):
        """What the job's tasks open (`sdceval.core.loaders.open_ref`)."""
        if self.dataset is not None:
            return ref_of(self.dataset)
        return {k: self.options[k] for k in DATA_KEYS if self.options.get(k) is not None}


@dataclass(frozen=True)
class JobKind:
    """A registered job kind.

    ``keys`` are the options of its own (every job also takes `DATA_KEYS` and
    ``title``); ``validate(options)`` raises `SdcevalError` on a bad option before
    anything runs (it may return the options completed with their defaults, which
    `check` ignores); ``run(job, spec, executor, say, out)`` runs the job, writes its
    files in ``out`` and returns its result; ``section`` is the key of its results in
    ``results.json``; ``params`` declares the typed options simple enough for a
    `Param` (bounds, defaults, ``sdceval list jobs``)."""

    name: str
    description: str
    keys: frozenset
    validate: Callable[[dict], Any]
    run: Callable[..., Any]
    section: str
    params: tuple = ()
    #: ``report(result) -> sdceval.experiments.report_html.Section``: the job's part of
    #: the HTML report (None: the result's text in a preformatted block)
    report: Callable[[Any], Any] | None = None
    #: ``write(result, out, prefix) -> [Path]``: the job's files, written from its
    #: result alone (so a result read back from the store writes the same files)
    write: Callable[..., list] | None = None
    #: ``rows(result) -> [dict]``: the job's measurements, one dict per measurement
    #: with ``measure`` and ``value`` and the fields that say what was measured
    #: (method, parameters, seed, ...): what the results store keeps and
    #: ``sdceval results`` shows
    rows: Callable[[Any], list] | None = None
    #: the options of a small job of this kind (its own keys, no data set): the
    #: contract suite (tests/contracts.py) runs it on a few hundred records with every
    #: role, writes its files and checks its rows, so a kind without one fails there
    example: dict | None = None

    @property
    def options(self) -> frozenset:
        """Every option key a job of this kind accepts."""
        return frozenset(DATA_KEYS) | {"title", "seed", "sweep"} | self.keys

    def check(self, options: dict, where: str = "") -> Any:
        """The checks of `load_spec`: known keys, a data set, then ``validate``, whose
        result it returns (the job's ``plan``); errors start with ``where`` (the file
        and the table)."""
        check_keys(where, options, self.options)
        if "data" not in options:
            raise SdcevalError(f"{where + ': ' if where else ''}'data' is required (a "
                               "bundled name or a file)")
        try:
            return self.validate(options)
        except SdcevalError as exc:
            if not where:
                raise
            raise SdcevalError(f"{where}: {exc}") from None


def check_keys(where: str, got: Iterable[str], allowed) -> None:
    """Every key of ``got`` is allowed (the closest allowed one suggested)."""
    for k in got:
        if k not in allowed:
            raise SdcevalError(f"{where + ': ' if where else ''}unknown key {k!r}."
                               f"{suggest(k, allowed)} Allowed: {', '.join(sorted(allowed))}")


def register_job_kind(name: str, *, description: str, section: str, keys: Iterable[str],
                      validate: Callable[[dict], Any], params: Iterable[Param] = (),
                      report: Callable[[Any], Any] | None = None,
                      write: Callable[..., list] | None = None,
                      rows: Callable[[Any], list] | None = None,
                      example: dict | None = None):
    """Register the decorated ``run(job, spec, executor, say)`` as job kind ``name``
    (`JobKind`: ``write`` writes its files, ``rows`` lists its measurements, ``report``
    draws its part of the HTML report, ``example`` is a small job's options); the
    function is returned unchanged."""
    def deco(run):
        kind = JobKind(name, description, frozenset(keys), validate, run, section,
                       tuple(params), report, write, rows, example)
        stray = [p.name for p in kind.params if p.name not in kind.options]
        if stray:
            raise RegistrationError(f"job kind {name!r}: parameter {stray[0]!r} is not one "
                                    "of its option keys")
        JOB_KINDS.add(name, kind)
        return run
    return deco


def command_job(kind: str, dataset, command: str, **options) -> Job:
    """The job a command runs on its own: ``options`` as the ``[[kind]]`` table of an
    experiment file would give them (``None``: not given, the default applies) on
    ``dataset``, the data set the command opened, checked as `load_spec` checks the
    table."""
    opts = {"data": dataset.name, **{k: v for k, v in options.items() if v is not None}}
    plan = JOB_KINDS.get_spec(kind).check(opts)
    return Job(kind, 0, opts, dataset=dataset, command=command, plan=plan)


def report_section(kind: str, result, title: str | None = None):
    """The HTML section of one job's ``result`` (`JobKind.report`, or its text)."""
    from sdceval.experiments.report_html import Section, esc
    spec = JOB_KINDS.get_spec(kind)
    if spec.report is not None:
        section = spec.report(result)
    else:
        section = Section(getattr(result, "title", kind),
                          blocks=[f"<pre>{esc(str(result))}</pre>"])
    if title:
        section.title = title
    section.files = [*section.files, *getattr(result, "files", [])]
    return section


def task_progress(job: Job, total: int) -> Callable[[int, int], None] | None:
    """A progress bar over a job's tasks for `Executor.map` (`sdceval.core.progress`:
    on a terminal, for runs that last, never under ``-q``)."""
    if total <= 1:
        return None
    bar = progress_bar(job.key, total=total, unit=" tasks")

    def update(done, _total):
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
    return update


__all__ = ["DATA_KEYS", "JOB_KINDS", "Job", "JobKind", "check_keys", "command_job",
           "names_file", "register_job_kind", "report_section", "task_progress"]
