"""Exact nearest released record for many original records, and the sample of records
a nearest-neighbour risk measure links on a large table (issue 21 item 7).

`NearestIndex` is the one nearest-neighbour search of `linkage_risk`,
`reidentification` and `attribute_inference`: a KD-tree (`scipy.spatial.cKDTree`) over
the *distinct* released points, queried with ``workers`` = the thread budget.  Two
choices make it 2-3x faster than a default tree queried in the records' order, with the
same answers (exact search; tested against brute force):

* **queries in space order.**  Records are queried in the leaf order of a KD-tree built
  on the queries themselves, so consecutive queries walk the same branches of the
  index and find its nodes in the CPU's caches.  On 100 000 records x 10 correlated
  attributes with additive noise (`benchmarks/bench_linkage.py`'s table), one thread:
  15.0 s in the records' order, 6.9 s in space order.
* **sliding-midpoint splits, leaves of 32 points** (``balanced_tree=False``,
  ``leafsize=32``): 6.9 s -> 5.4 s on the same table; on groups of 5 equal rows
  (microaggregation) 4.4 s -> 3.1 s.

Queries go to the tree in chunks (`sdceval.core.interrupts.chunks`), each sized from
the rate of the last to take about 0.2 s: Ctrl-C cannot stop one call into the tree,
and with a fixed 65 536 queries a call it acted only after up to 10 s on a large table.
The answers are those of one call (each query's is independent of the others').

Ties are counted with a second nearest neighbour (``k=2``: the second point is beyond the
tie radius for almost every record) instead of a ball count over every record, which
costs a second search of the tree; a ball search runs only for the records whose
second point is within the radius.

The cost of an exact search still grows like ``n^1.5-1.6`` on data of ten or more
independent dimensions (the curse of dimensionality: the ball to the nearest point
meets a growing share of the tree's leaves), so measures linking every record of a
million-record table take minutes.  Their means over records are estimated instead from
a simple random sample of records (`record_sample`), each linked exactly against the
*whole* release: the estimate is unbiased, its standard error is reported
(`sample_summary`), and the sample depends only on the table's size and the seed, so
every release of a data set is measured on the same records (the comparison between
releases is paired, as bisection needs).
"""
from __future__ import annotations

import numpy as np

from sdceval.core import interrupts, threads
from sdceval.core.errors import SdcevalError
from sdceval.core.glossary import register_term
from sdceval.core.registry import Param

LEAFSIZE = 32
#: queries of the first call to the tree; later calls are sized from the rate measured
#: so that each takes about `sdceval.core.interrupts.RESPONSE_SECONDS` (Ctrl-C acts
#: between calls: 65 536 queries at a time took up to 10 s on a million records)
FIRST_CHUNK = 1024
#: most queries per call: bounds the temporary arrays
MAX_CHUNK = 65_536
#: default ``sample`` of the nearest-neighbour risk measures: tables up to this many
#: records are linked record by record, larger ones on a sample of this many
SAMPLE = 50_000

register_term("sampled_records", "records linked",
              "the records of a large table a nearest-neighbour risk was estimated from "
              "(a random sample, each linked against the whole release)", None,
              unit="records")
register_term("standard_error", "standard error",
              "of an estimate from a sample of records: the spread of the estimate over "
              "samples (finite-population corrected)", None)

SAMPLE_PARAM = Param(
    "sample", int, SAMPLE, low=0, unit="records",
    description="tables of more records are linked on a random sample of this many, each "
                "against the whole release (the value is then an estimate, its standard "
                "error in the details; only where nearest records are searched, i.e. "
                "published numeric values); 0 = every record")
SEED_PARAM = Param("seed", int, 0, low=0,
                   description="seed of the sample of records (the same records for "
                               "every release of a data set)")


def space_order(points: np.ndarray) -> np.ndarray:
    """A permutation of ``points`` that puts near points next to each other: the leaf
    order of a KD-tree built on them (``O(n log n)``)."""
    from scipy.spatial import cKDTree   # imported here: scipy is slow to import
    if len(points) < 2 * LEAFSIZE:
        return np.arange(len(points))
    return np.asarray(cKDTree(points).indices, dtype=np.int64)


class NearestIndex:
    """Exact Euclidean nearest-point queries against fixed ``points`` (m, d)."""

    def __init__(self, points: np.ndarray):
        from scipy.spatial import cKDTree
        self.points = np.asarray(points, dtype=np.float64)
        self.tree = cKDTree(self.points, leafsize=LEAFSIZE, balanced_tree=False)

    # every search runs in chunks of queries (module docstring)
    def nearest(self, q: np.ndarray, k: int = 1, chunk: int | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """Distances and indices of the ``k`` nearest points of each query, in the
        queries' order (shape (len(q),) for k = 1, else (len(q), k); missing
        neighbours have distance ``inf`` and index ``len(points)``).  ``chunk``: queries
        per call to the tree (default: sized from the measured rate)."""
        q = np.asarray(q, dtype=np.float64)
        order = space_order(q)
        shape = (len(q),) if k == 1 else (len(q), k)
        dist = np.empty(shape)
        idx = np.empty(shape, dtype=np.int64)
        for a, b in interrupts.chunks(len(q), FIRST_CHUNK, MAX_CHUNK, chunk):
            rows = order[a:b]  # chunks of the space order: neighbours stay together
            d, i = self.tree.query(q[rows], k=k, workers=threads.workers())
            dist[rows], idx[rows] = d, i
        return dist, idx

    def within(self, q: np.ndarray, radius: np.ndarray, chunk: int | None = None
               ) -> list[np.ndarray]:
        """Indices of the points at distance <= ``radius`` of each query."""
        q = np.asarray(q, dtype=np.float64)
        radius = np.broadcast_to(np.asarray(radius, dtype=np.float64), (len(q),))
        hits = []
        for a, b in interrupts.chunks(len(q), FIRST_CHUNK, MAX_CHUNK, chunk):
            hits.extend(self.tree.query_ball_point(q[a:b], radius[a:b],
                                                   workers=threads.workers()))
        return [np.asarray(h, dtype=np.int64) for h in hits]

    def count_within(self, q: np.ndarray, radius: np.ndarray, chunk: int | None = None
                     ) -> np.ndarray:
        """Number of points at distance <= ``radius`` of each query."""
        q = np.asarray(q, dtype=np.float64)
        radius = np.broadcast_to(np.asarray(radius, dtype=np.float64), (len(q),))
        out = np.empty(len(q), dtype=np.int64)
        for a, b in interrupts.chunks(len(q), FIRST_CHUNK, MAX_CHUNK, chunk):
            out[a:b] = self.tree.query_ball_point(q[a:b], radius[a:b],
                                                  workers=threads.workers(),
                                                  return_length=True)
        return out

    def nearest_ties(self, q: np.ndarray, radius_of) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray, list]:
        """The nearest point of each query and the points tied with it.

        ``radius_of(dist)`` gives each query's tie radius from its nearest distance.
        Returns ``dist`` (the nearest distance), ``nearest`` (one nearest point),
        ``tied`` (the queries with two or more points within the radius) and ``hits``
        (for those, every point within the radius)."""
        dist, idx = self.nearest(q, k=2)   # one point: the second is at inf
        radius = radius_of(dist[:, 0])
        tied = np.flatnonzero(dist[:, 1] <= radius)
        hits = self.within(q[tied], radius[tied]) if len(tied) else []
        return dist[:, 0], idx[:, 0], tied, hits


def sample_phrase(sampled: int, records: int | None = None) -> str:
    """How every output says a figure is an estimate from a sample of records."""
    of = f" of the {records:,}" if records else ""
    return (f"estimated from a random sample of {sampled:,}{of} records, each linked "
            "against the whole release")


def record_sample(n: int, sample: int, seed: int) -> np.ndarray | None:
    """The records a nearest-neighbour measure links: None (every record) when
    ``sample`` is 0 or at least ``n``, else ``sample`` records drawn without
    replacement with ``numpy.random.default_rng(seed)``, sorted."""
    if sample < 0:
        raise SdcevalError(f"sample must be 0 (every record) or a number of records, "
                           f"not {sample}")
    if sample == 0 or sample >= n:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=int(sample), replace=False))


def sample_summary(values: np.ndarray, n: int) -> dict:
    """The estimate of a mean over ``n`` records from ``values`` on a simple random
    sample of them: the sample mean, its standard error with the finite-population
    correction, ``sqrt((1 - s/n) · var / s)`` (``var`` the sample variance, ``s``
    records), and the normal 95 % interval."""
    s = len(values)
    mean = float(np.mean(values))
    var = float(np.var(values, ddof=1)) if s > 1 else 0.0
    se = float(np.sqrt(max(0.0, 1.0 - s / n) * var / s))
    return {"sampled_records": s, "records": n, "estimate": mean, "standard_error": se,
            "ci95": [mean - 1.959964 * se, mean + 1.959964 * se]}
