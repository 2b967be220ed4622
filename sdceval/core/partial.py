"""How a measure is computed in parts of a table (issue 27 item 21): the declaration a
measure attaches to its registry entry (``register_measure(..., partial=PartialForm(...))``,
read as `MeasureSpec.partial`).

A table too large for memory is evaluated part by part
(`sdceval.experiments.partitioned.evaluate_partitioned`): the measures it computes are
exactly the registry entries that declare a `PartialForm`, so a measure registered later
(by sdceval or in a user's module) is computed in parts with no change there.  The
evaluation runs, for every measure variant asked for::

    prep    = prepare(whole, params)                    # once, on the client
    partial = partial(prep, part)                       # once per part, on a worker
    merged  = merge(partial_1, ..., partial_m)          # any grouping of consecutive parts
    result  = finish(prep, merged, params)              # a Measurement

and the result must equal the measure on the whole table in memory (exactly for
counts, to rounding for sums of floats).  ``merge`` is associative and keeps the parts'
order (it gets consecutive parts, a few at a time: no task holds every partial).
Variants whose forms share ``prepare`` and ``partial`` and whose ``key(params)`` are
equal share one prep and one partial per part (the three class-count measures read the
same class sizes; two ``query_error`` variants with one workload, the same counts).

What a part offers (`Part`) and what the whole table offers before the parts are read
(`Whole`) are protocols; the partitioned evaluation provides them.  ``prep`` travels to
every worker once (pickled), so it holds plain data; a per-process cache (a KD-tree) is
built lazily and left out of its pickled state.

Nothing here imports the evaluation or Dask: a measure module declares its form with
plain functions over `Part` and `Whole`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Protocol

from sdceval.core.params import RegistrationError

#: what the parts of a form read: ``"records"`` (each part as a data set and its release:
#: `Part.dataset`, `Part.release`) or ``"numbers"`` (the original's numeric-role columns
#: only: `Part.numbers`; the release is read by `prepare` through `Whole`)
READS = ("records", "numbers")
#: roles whose columns a form may need summarized over the whole table before the parts
ROLES = ("qi", "sensitive", "numeric")


class Part(Protocol):
    """One part of the table, as `PartialForm.partial` sees it."""

    #: the part's records as a `Dataset` whose schema carries the *whole* table's
    #: hierarchies (codes and domains agree between parts); reads ``"records"`` only
    dataset: Any
    #: the release rows of the same records, read back as `sdceval evaluate` reads a
    #: release file (`Release`); reads ``"records"`` only
    release: Any
    #: the original's numeric-role columns as an (m, p) float64 matrix
    numbers: Any
    #: the parts' records' positions in the whole table, (m,) int64
    rows: Any
    #: records in the whole table
    n: int


class Whole(Protocol):
    """What `PartialForm.prepare` may read of the whole table (on the client)."""

    #: records in the whole table
    n: int
    #: the schema, every hierarchy of the form's ``hierarchies`` built from the whole
    #: table's distinct values
    schema: Any

    def domain(self) -> Any:
        """A `Dataset` of two records with the whole table's schema and hierarchies
        (what depends on the domains only: a query workload)."""

    def value_counts(self, column: str) -> tuple:
        """``(sorted distinct values, their counts)`` of a column of the form's
        ``counts`` roles over the whole table."""

    def release_numbers(self) -> Any:
        """The release's numeric-role columns, whole, as an (n, p) float64 matrix
        (read once, checked as a release file's numbers are)."""

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per evaluation (shared between forms)."""


def _no_prep(whole, params) -> None:
    return None


def _one_key(params) -> tuple:
    return ()


@dataclass(frozen=True)
class PartialForm:
    """A measure computed in parts (module docstring).

    Parameters
    ----------
    partial : callable ``(prep, part) -> partial``
        The partial result of one `Part` (counts, sums, class sizes): plain data.
    merge : callable ``(*partials) -> partial``
        Consecutive parts' partial results as one (associative, order kept).
    finish : callable ``(prep, merged, params) -> Measurement``
        The measure from the merged partial result of every record, with its parameters
        resolved by the registry.
    prepare : callable ``(whole, params) -> prep``, optional
        What every part needs besides its records (a workload, an index), from `Whole`.
    key : callable ``(params) -> hashable``, optional
        Variants with equal keys (and the same ``prepare`` and ``partial``) share one
        prep and one partial result per part.
    reads : ``"records"`` or ``"numbers"``
        `READS`.
    hierarchies, counts : tuples of roles
        The roles (`ROLES`) whose hierarchies must be the whole table's, and whose value
        counts `Whole.value_counts` must give.
    check : callable ``(name, schema, release_meta, where) -> None``, optional
        Refuse, before anything is read, a schema or release the measure cannot use (an
        `SdcevalError` naming the fix); ``release_meta`` is an empty frame with the
        release's columns and types.
    fixed : mapping, optional
        Parameters whose value is fixed in parts: ``{name: (value, why)}``; asking for
        another value is an error giving ``why`` (linkage links every record: ``sample``
        is 0).
    """

    partial: Callable
    merge: Callable
    finish: Callable
    prepare: Callable = _no_prep
    key: Callable = _one_key
    reads: str = "records"
    hierarchies: tuple = ("qi", "sensitive")
    counts: tuple = ()
    check: Callable | None = None
    fixed: tuple = ()

    def __post_init__(self):
        for name in ("partial", "merge", "finish", "prepare", "key"):
            if not callable(getattr(self, name)):
                raise RegistrationError(f"PartialForm: {name} must be callable")
        if self.reads not in READS:
            raise RegistrationError(f"PartialForm: reads must be one of {', '.join(READS)}, "
                                    f"got {self.reads!r}")
        object.__setattr__(self, "hierarchies", tuple(self.hierarchies))
        object.__setattr__(self, "counts", tuple(self.counts))
        bad = [r for r in self.hierarchies + self.counts if r not in ROLES]
        if bad:
            raise RegistrationError(f"PartialForm: unknown role {bad[0]!r} (roles: "
                                    f"{', '.join(ROLES)})")
        object.__setattr__(self, "fixed", tuple(dict(self.fixed).items()))

    def shared(self, params: dict) -> tuple:
        """The identity of this variant's prep and partial results (`key`)."""
        return (self.prepare, self.partial, self.key(params))
