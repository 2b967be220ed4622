"""Measures evaluated in partitions on Dask (issue 21 item 7, `sdceval.experiments.
partitioned`): every result equals ``sdceval.evaluate`` on the whole table in memory
(counts exactly, float aggregates to 1e-12), on partitions of unequal sizes (one of a
single record), with suppressed records and tied values; the original is only ever seen
one partition at a time; bad input is a one-line error naming the fix.  The fast tests
run on dask's synchronous scheduler; one (slow) runs on a local cluster of two worker
processes and counts what reached each worker."""
from __future__ import annotations

import math
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

import sdceval  # noqa: E402
from sdceval.core.errors import SdcevalError  # noqa: E402
from sdceval.core.loaders import open_dataset  # noqa: E402
from sdceval.core.release_io import read_release  # noqa: E402
from sdceval.core.release_order import write_release  # noqa: E402
from sdceval.catalog import MEASURES  # noqa: E402
from sdceval.experiments import partitioned  # noqa: E402
from sdceval.measures import linkage  # noqa: E402
from sdceval.experiments.partitioned import evaluate_partitioned  # noqa: E402

from tests.test_reidentification import mixed  # noqa: E402

#: partition sizes of the 240-record table: unequal, one of a single record
SIZES = [61, 1, 90, 7, 81]
#: the chunks the tasks get: the one-record partition joins its predecessor
MERGED = [62, 90, 7, 81]
#: the release's own partitions, cut elsewhere (partitions need not line up)
REL_SIZES = [100, 3, 137]
CLASS_MEASURES = ("k_anonymity,k_anonymity:k=6,include_suppressed=true,discernibility,"
                  "avg_class_size,avg_class_size:k=5")


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.fixture(scope="module")
def data():
    """A mixed table (QIs with hierarchies, a sensitive attribute, two numeric
    attributes with tied values) and four releases: full-domain generalization with
    suppressed records, Mondrian, correlated noise and MDAV (groups of equal rows)."""
    ds = mixed(240, 5)
    gen = sdceval.anonymize(ds, "generalization", models=["k=5"], max_suppression=0.1)
    assert gen.suppressed.sum() > 0
    return {"ds": ds, "generalization": gen,
            "mondrian": sdceval.anonymize(ds, "mondrian", k=4),
            "noise": sdceval.anonymize(ds, "noise", gamma=0.3, seed=2),
            "mdav": sdceval.anonymize(ds, "mdav", k=3)}


def parts(frame: pd.DataFrame, sizes, calls: list | None = None):
    """``frame`` as a dask DataFrame of partitions of ``sizes`` records (each read is
    appended to ``calls``)."""
    bounds = np.cumsum([0] + list(sizes))
    assert bounds[-1] == len(frame)

    def read(ab):
        if calls is not None:
            calls.append(ab)
        return frame.iloc[ab[0]:ab[1]]
    return dd.from_map(read, [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])],
                       meta=frame.iloc[:0])


def parquet_dir(folder, frame: pd.DataFrame, sizes):
    """``frame`` as a directory of Parquet files of ``sizes`` records, in name order."""
    folder.mkdir()
    start = 0
    for i, size in enumerate(sizes):
        frame.iloc[start:start + size].to_parquet(folder / f"part-{i:03d}.parquet",
                                                  index=False)
        start += size
    return folder


def assert_same(got, want, rel=1e-12, where="value"):
    """Equal values and details: integers and text exactly, floats to ``rel``."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), (where, got, want)
        for k in want:
            assert_same(got[k], want[k], rel, f"{where}.{k}")
    elif isinstance(want, (list, tuple)):
        assert list(got) == list(want), (where, got, want)
    elif isinstance(want, (bool, str)) or want is None:
        assert got == want, (where, got, want)
    elif isinstance(want, (int, np.integer)) and not isinstance(want, bool):
        assert got == want and isinstance(got, int), (where, got, want)
    else:
        assert math.isclose(got, want, rel_tol=rel, abs_tol=1e-13), (where, got, want)


def check(got: dict, ds, release, measures: str) -> None:
    """``got`` equals `sdceval.evaluate` of every measure in ``measures`` on the whole
    in-memory table (value, details, measure name, direction)."""
    from sdceval.compare.ranking import parse_measure_list
    parsed = parse_measure_list(measures)
    assert list(got) == list(parsed)
    for label, (name, params) in parsed.items():
        if name == "linkage_risk":
            params = {**params, "sample": 0}
        want = sdceval.evaluate(ds, release, name, **params)
        m = got[label]
        assert (m.measure, m.direction, m.per_record) == (name, want.direction, None)
        assert_same(m.value, want.value, where=label)
        assert_same(m.details, want.details, where=label)


def published(release) -> pd.DataFrame:
    """The release's table in record order (what `anonymize --keep-order` writes)."""
    return release.data.reset_index(drop=True)


# -- equality with the in-memory measures --------------------------------------------------
@pytest.mark.parametrize("method", ["generalization", "mondrian"])
def test_class_counts_equal_in_memory(data, method):
    ds, rel = data["ds"], data[method]
    got = evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel), REL_SIZES),
                               CLASS_MEASURES, schema=ds.schema)
    check(got, ds, rel, CLASS_MEASURES)
    if method == "generalization":  # the suppressed records' '*' class
        assert got["k_anonymity"].details["suppressed"] == int(rel.suppressed.sum()) > 0
        assert got["k_anonymity(k=6,include_suppressed=true)"].details["satisfies"] is False


def test_query_error_equals_in_memory_on_every_kind(data):
    ds = data["ds"]
    for method in ("generalization", "noise"):
        rel = data[method]
        measures = "query_error:n_queries=300,query_error:n_queries=200,qd=2,seed=4"
        got = evaluate_partitioned(parts(ds.frame, SIZES),
                                   parts(published(rel), REL_SIZES), measures,
                                   schema=ds.schema)
        check(got, ds, rel, measures)


@pytest.mark.parametrize("method", ["noise", "mdav", "copy"])
def test_linkage_equals_in_memory(data, method):
    """Distinct released rows (noise), groups of equal rows (MDAV: ties shared), and a
    copy of tied data (every record at distance 0, ties among equal records)."""
    ds = data["ds"]
    rel = (data[method] if method != "copy"
           else sdceval.Release.external(ds, ds.frame[["income", "spend"]]))
    measures = ("linkage_risk,linkage_risk:aggregate=mean,scale=fitted_per_attribute,"
                "linkage_risk:rank_scale=fraction,ranks=released")
    got = evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel), REL_SIZES),
                               measures, schema=ds.schema)
    check(got, ds, rel, measures)
    if method == "copy":
        assert got["linkage_risk"].value == 0.0
        assert got["linkage_risk"].details["reidentification_rate_any"] == 1.0


def test_files_on_disk_equal_evaluate(data, tmp_path):
    """The original as a directory of Parquet files (one of a single record), releases
    as written by ``anonymize --keep-order`` (CSV, read in blocks of 2 kB) and Parquet;
    in memory, the same files read by `read_release`."""
    ds = data["ds"]
    orig = parquet_dir(tmp_path / "original", ds.frame, SIZES)
    for method, name in (("generalization", "gen.csv"), ("noise", "noise.parquet")):
        path = tmp_path / name
        write_release(data[method], path, dataset=ds, keep_order=True)
        rel = read_release(ds, path, key=False)
        measures = ("k_anonymity:k=5,discernibility,query_error:n_queries=200"
                    if method == "generalization" else "linkage_risk,query_error")
        got = evaluate_partitioned(orig, path, measures, schema=ds.schema, blocksize=2000)
        check(got, ds, rel, measures)


def test_toml_schema_builds_the_hierarchies_of_the_whole_table(tmp_path):
    """A schema file with roles only: every hierarchy is built from the whole table's
    distinct values (merged over partitions of the CSV) exactly as ``sdceval evaluate
    --schema`` builds them from the whole file."""
    base = mixed(240, 8)
    frame = base.frame.assign(zip=[f"0{z:04d}" for z in
                                   np.random.default_rng(1).integers(100, 400, 240)])
    frame.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "schema.toml").write_text(
        'qi = ["age", "region", "education", "zip"]\nsensitive = "disease"\n'
        'numeric = ["income", "spend"]\n')
    ds = open_dataset(str(tmp_path / "data.csv"), schema_file=tmp_path / "schema.toml")
    assert ds.hierarchy("zip").builder == "masking" and ds.frame["zip"][0].startswith("0")
    rel = sdceval.anonymize(ds, "generalization", models=["k=4"], max_suppression=0.05)
    write_release(rel, tmp_path / "rel.csv", dataset=ds, keep_order=True)
    measures = "k_anonymity,avg_class_size,query_error:n_queries=200"
    got = evaluate_partitioned(tmp_path / "data.csv", tmp_path / "rel.csv", measures,
                               schema=tmp_path / "schema.toml", blocksize=3000)
    check(got, ds, read_release(ds, tmp_path / "rel.csv", key=False), measures)


# -- out of core -------------------------------------------------------------------------------
def test_the_original_is_seen_one_partition_at_a_time(data, monkeypatch):
    """Every function that receives original records gets one partition (the record of
    the one-record partition joins its neighbour), and each partition is read once per
    pass: nothing else computes the whole original."""
    ds, rel = data["ds"], data["generalization"]
    seen: list = []
    real_scan, real_chunk = partitioned._scan, partitioned._chunk_task

    def scan(frame, *args):
        seen.append(("scan", len(frame)))
        return real_scan(frame, *args)

    def chunk(key, offset, orig_parts, rel_pieces):
        seen.append(("chunk", sum(len(p) for p in orig_parts)))
        return real_chunk(key, offset, orig_parts, rel_pieces)
    monkeypatch.setattr(partitioned, "_scan", scan)
    monkeypatch.setattr(partitioned, "_chunk_task", chunk)
    reads: list = []
    got = evaluate_partitioned(parts(ds.frame, SIZES, reads), parts(published(rel), REL_SIZES),
                               "k_anonymity,query_error:n_queries=100", schema=ds.schema)
    assert got["k_anonymity"].value == sdceval.evaluate(ds, rel, "k_anonymity").value
    scans = [n for what, n in seen if what == "scan"]
    chunks = [n for what, n in seen if what == "chunk"]
    assert sorted(scans) == sorted(SIZES)
    assert sorted(chunks) == sorted(MERGED) and sum(chunks) == ds.n
    assert sorted(reads) == sorted(2 * [(a, b) for a, b in zip(np.cumsum([0] + SIZES[:-1]),
                                                               np.cumsum(SIZES))])
    assert partitioned._CONTEXTS == {}  # released at the end


def test_linkage_reads_the_original_in_partitions_and_builds_one_tree(data, monkeypatch):
    ds, rel = data["ds"], data["mdav"]
    built, biggest = [], []

    class Counted(linkage.NearestIndex):
        def __init__(self, points):
            built.append(len(points))
            super().__init__(points)
    spec = MEASURES["linkage_risk"]
    real = spec.partial.partial

    def sums(prep, part):
        biggest.append(len(part.rows))
        return real(prep, part)
    monkeypatch.setattr(linkage, "NearestIndex", Counted)
    monkeypatch.setitem(MEASURES, "linkage_risk",
                        replace(spec, partial=replace(spec.partial, partial=sums)))
    evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel), REL_SIZES),
                         "linkage_risk", schema=ds.schema)
    assert len(built) == 1 and built[0] == len(np.unique(rel.data, axis=0))
    assert sorted(biggest) == sorted(MERGED)


def test_tasks_run_under_the_thread_budget(data, monkeypatch):
    from sdceval.core import threads
    ds, rel = data["ds"], data["noise"]
    budgets: list = []
    real = threads.limited

    def limited(n=None):
        budgets.append(threads.budget() if n is None else n)
        return real(n)
    monkeypatch.setattr(threads, "limited", limited)
    threads.set_budget(2)
    try:
        evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel), REL_SIZES),
                             "linkage_risk", schema=ds.schema)
    finally:
        threads.set_budget(None)
    assert budgets == [2] * (len(SIZES) - 1)


# -- bad input: one line naming the problem and the fix ---------------------------------------
def one_line(exc_info) -> str:
    msg = str(exc_info.value)
    assert "\n" not in msg, msg
    return msg


def test_a_release_of_another_length_is_refused(data):
    ds, rel = data["ds"], data["noise"]
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel).iloc[:-1],
                                                             [100, 139]),
                             "query_error", schema=ds.schema)
    msg = one_line(info)
    assert "239 records but the original has 240" in msg and "--keep-order" in msg
    with pytest.raises(SdcevalError, match="239 records but the original has 240"):
        evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel).iloc[:-1],
                                                             [100, 139]),
                             "linkage_risk", schema=ds.schema)


def test_measures_not_offered_in_partitions_are_refused(data):
    ds, rel = data["ds"], data["noise"]
    args = (parts(ds.frame, SIZES), parts(published(rel), REL_SIZES))
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(*args, "linkage_risk,propensity", schema=ds.schema)
    msg = one_line(info)
    assert "'propensity' is not evaluated in partitions" in msg and "Newton" in msg
    for name in ("k_anonymity", "discernibility", "avg_class_size", "query_error",
                 "linkage_risk"):
        assert name in msg
    with pytest.raises(SdcevalError, match="'emd' is not evaluated in partitions.*k-means"):
        evaluate_partitioned(*args, "emd", schema=ds.schema)
    with pytest.raises(SdcevalError, match="unknown measure 'linkage_rsik'"):
        evaluate_partitioned(*args, "linkage_rsik", schema=ds.schema)
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(*args, "linkage_risk:sample=1000", schema=ds.schema)
    assert "links every record" in one_line(info)


def test_class_counts_of_a_perturbative_release_are_refused(data):
    ds, rel = data["ds"], data["noise"]
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel), REL_SIZES),
                             "discernibility", schema=ds.schema)
    msg = one_line(info)
    assert "'discernibility' counts the classes of a generalized release" in msg
    assert "publishes no quasi-identifier" in msg


def test_missing_columns_are_named(data):
    ds = data["ds"]
    gen, noise = published(data["generalization"]), published(data["noise"])
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(parts(ds.frame.drop(columns="spend"), SIZES),
                             parts(noise, REL_SIZES), "linkage_risk", schema=ds.schema)
    assert "original lacks schema column(s) 'spend'" in one_line(info)
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(parts(ds.frame, SIZES),
                             parts(noise.drop(columns="income"), REL_SIZES),
                             "linkage_risk", schema=ds.schema)
    assert "lacks the numeric column(s) 'income'" in one_line(info)
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(parts(ds.frame, SIZES),
                             parts(gen.drop(columns="region"), REL_SIZES),
                             "k_anonymity", schema=ds.schema)
    assert "lacks quasi-identifier column(s) 'region'" in one_line(info)


def test_a_shuffled_release_or_an_edited_cell_is_refused(data, tmp_path):
    ds = data["ds"]
    orig = parquet_dir(tmp_path / "original", ds.frame, SIZES)
    write_release(data["generalization"], tmp_path / "shuffled.csv", dataset=ds, seed=3)
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(orig, tmp_path / "shuffled.csv", "k_anonymity", schema=ds.schema)
    assert "private key beside it" in one_line(info) and "--keep-order" in str(info.value)
    # a release in the wrong order without its key: its cells do not fit the records
    gen = published(data["generalization"])
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(orig, parts(gen.iloc[::-1].reset_index(drop=True), REL_SIZES),
                             "k_anonymity", schema=ds.schema)
    assert "does not fit" in one_line(info)


def test_bad_arguments_are_named(data, tmp_path):
    ds, rel = data["ds"], data["noise"]
    with pytest.raises(SdcevalError, match="does not exist"):
        evaluate_partitioned(tmp_path / "nowhere.parquet", parts(published(rel), REL_SIZES),
                             "linkage_risk", schema=ds.schema)
    with pytest.raises(SdcevalError, match="gives no roles"):
        evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel), REL_SIZES),
                             "linkage_risk", schema={"missing": "refuse"})
    holes = ds.frame.astype({"income": float})
    holes.loc[70, "income"] = np.nan
    with pytest.raises(SdcevalError) as info:
        evaluate_partitioned(parts(holes, SIZES), parts(published(rel), REL_SIZES),
                             "linkage_risk", schema=ds.schema)
    assert "missing values in 'income' (1 missing)" in one_line(info)
    with dask.config.set(scheduler="processes"):
        with pytest.raises(SdcevalError, match="not on the 'processes' scheduler"):
            evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel), REL_SIZES),
                                 "linkage_risk", schema=ds.schema)


# -- a real cluster ------------------------------------------------------------------------------
def _count_on_worker():
    """In a worker: count the contexts unpickled and the KD-trees built."""
    from sdceval.experiments import partitioned as p
    p._test_counts = {"contexts": 0, "trees": 0}

    def setstate(self, state):
        p._test_counts["contexts"] += 1
        self.__dict__.update(state)
    p._Context.__setstate__ = setstate
    real = linkage.NearestIndex

    class Counted(real):
        def __init__(self, points):
            p._test_counts["trees"] += 1
            super().__init__(points)
    linkage.NearestIndex = Counted


def _worker_report():
    import gc

    from sdceval.experiments import partitioned as p
    gc.collect()
    return {**p._test_counts, "kept": len(p._CONTEXTS), "trees_kept": len(linkage._TREES)}


@pytest.mark.slow
def test_on_a_local_cluster_each_worker_gets_the_context_once(data, tmp_path):
    """Two worker processes of one thread: the same results as in memory; the context
    (schema, workload, the linkage index) unpickled once in each worker, one KD-tree per
    worker, nothing left on the workers afterwards."""
    import logging

    import cloudpickle
    from distributed import Client, LocalCluster

    from sdceval.experiments.executor import thread_env
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ds = data["ds"]
    orig = parquet_dir(tmp_path / "original", ds.frame, SIZES)
    noise = parquet_dir(tmp_path / "noise", published(data["noise"]), REL_SIZES)
    gen = tmp_path / "gen.csv"
    write_release(data["generalization"], gen, dataset=ds, keep_order=True)
    with dask.config.set(scheduler=None), LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
            silence_logs=logging.CRITICAL, env=thread_env(1)) as cluster, \
            Client(cluster) as client:
        client.run(_count_on_worker)
        measures = "linkage_risk,query_error:n_queries=200"
        got = evaluate_partitioned(orig, noise, measures, schema=ds.schema, client=client)
        report = client.run(_worker_report)
        check(got, ds, data["noise"], measures)
        for worker, r in report.items():
            assert r["contexts"] == 1 and r["trees"] <= 1, (worker, r)
            assert r["kept"] == 0 and r["trees_kept"] == 0, (worker, r)
        assert sum(r["trees"] for r in report.values()) >= 1
        # the default client (no client= given), a generalized release from a CSV file
        client.run(_count_on_worker)
        got = evaluate_partitioned(orig, gen, CLASS_MEASURES, schema=ds.schema,
                                   blocksize=2000)
        check(got, ds, read_release(ds, gen, key=False), CLASS_MEASURES)
        assert all(r["contexts"] == 1 for r in client.run(_worker_report).values())
