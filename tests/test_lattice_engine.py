"""The lattice module and its node engine (issue 7): node ids and neighbours; class
tables (sizes, sensitive counts, per-record classes) against a brute-force pandas
groupby; roll-up equal to direct evaluation on every node; agreement with
a pandas groupby on Adult; class-label counts against hand counts;
`NodeEngine.batches` equal to the per-node tables (every node of small lattices, a
sample of Adult's) and its bad input."""
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.loaders import load_dataset
from sdceval.core.schema import Schema
from sdceval.lattice import ClassTable, Lattice, NodeEngine
from sdceval.lattice.engine import group_keys

heights_st = st.lists(st.integers(0, 4), min_size=1, max_size=5)


# -- lattice ---------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(heights_st)
def test_ids_round_trip_in_lexicographic_order(heights):
    lat = Lattice(heights)
    assert lat.size == int(np.prod([h + 1 for h in heights]))
    every = np.array(list(itertools.product(*[range(h + 1) for h in heights])))
    ids = np.arange(lat.size)
    assert np.array_equal(lat.decode(ids), every)  # id order = lexicographic order
    assert np.array_equal(lat.encode(every), ids)
    assert np.array_equal(lat.nodes(), every)
    for i in (0, lat.size - 1, lat.size // 2):
        node = lat.decode(i)
        assert isinstance(node, tuple) and lat.encode(node) == i
    assert lat.decode(0) == lat.bottom and lat.decode(lat.size - 1) == lat.top
    assert np.array_equal(lat.height_of(every), every.sum(axis=1))


@settings(max_examples=40, deadline=None)
@given(heights_st, st.data())
def test_neighbours_differ_by_one_level_on_one_qi(heights, data):
    lat = Lattice(heights)
    node = np.array([data.draw(st.integers(0, h)) for h in heights])
    up, down = lat.successors(node), lat.predecessors(node)
    assert len(up) == int((node < lat.heights).sum())
    assert len(down) == int((node > 0).sum())
    for nb, sign in [(up, 1), (down, -1)]:
        diff = nb - node
        assert ((diff == sign).sum(axis=1) == 1).all() and ((diff != 0).sum(axis=1) == 1).all()
    # the lattice edge relation (Σ|n_i - m_i| = 1), from all nodes
    every = lat.nodes()
    adj = every[np.abs(every - node).sum(axis=1) == 1]
    assert sorted(map(tuple, adj)) == sorted(map(tuple, np.r_[up, down]))
    for p in down:
        assert any((s == node).all() for s in lat.successors(p))


@settings(max_examples=40, deadline=None)
@given(heights_st)
def test_nodes_at_height_partition_the_lattice(heights):
    lat = Lattice(heights)
    every = lat.nodes()
    total = 0
    for h in range(-1, lat.max_height + 2):
        at = lat.nodes_at_height(h)
        expect = every[every.sum(axis=1) == h] if 0 <= h <= lat.max_height else every[:0]
        assert np.array_equal(at, expect)
        assert lat.count_at_height(h) == len(expect)
        total += len(at)
    assert total == lat.size


def test_lattice_bad_input_is_named():
    lat = Lattice([2, 1], names=["age", "sex"])
    with pytest.raises(SdcevalError, match=r"level 3 for quasi-identifier 'age' is outside 0\.\.2"):
        lat.encode([3, 0])
    with pytest.raises(SdcevalError, match="one level per quasi-identifier"):
        lat.encode([1, 0, 0])
    with pytest.raises(SdcevalError, match="node id 6 is outside 0..5"):
        lat.decode(6)
    with pytest.raises(SdcevalError, match="integers"):
        lat.encode([0.5, 0])


def test_too_large_lattice_says_size_and_alternatives():
    lat = Lattice([9] * 8)  # 10**8 nodes
    with pytest.raises(SdcevalError, match=r"100,000,000 nodes.*coarser hierarchies.*"
                                           r"fewer quasi-identifiers.*mondrian"):
        lat.nodes()
    assert len(lat.nodes_at_height(1)) == 8  # a thin slice still enumerates
    with pytest.raises(SdcevalError, match="height 36 has 4,816,030 nodes, more than the 1,000"):
        lat.nodes_at_height(36, limit=1000)
    huge = Lattice([99] * 10)  # 100**10 > 2**62: no 64-bit ids
    with pytest.raises(SdcevalError, match="too many to number"):
        huge.encode([0] * 10)


def test_group_keys_both_paths():
    rng = np.random.default_rng(1)
    for space in (50, 10**12):
        keys = rng.integers(0, space, 300)
        inv, first, uniq = group_keys(keys, space)
        u, i = np.unique(keys, return_inverse=True)
        assert np.array_equal(uniq, u) and np.array_equal(inv, i.ravel())
        assert np.array_equal(keys[first], uniq)


# -- engine on random small data sets ------------------------------------------------
def _tree(name, n_leaves, widths, rng):
    """A categorical hierarchy: leaves in a random order, grouped level by level into
    blocks of ``widths`` (each level nests in the next), then the root."""
    leaves = [f"{name}{i}" for i in rng.permutation(n_leaves)]
    group = np.arange(n_leaves)
    cols = [leaves]
    for j, w in enumerate(widths):
        group = group // w
        cols.append([f"{name}L{j + 1}_{g}" for g in group])
    cols.append(["*"] * n_leaves)
    rows = [list(r) for r in zip(*cols)]
    return Hierarchy(rows, name=name)


@st.composite
def small_dataset(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n_qis = draw(st.integers(2, 4))
    n = draw(st.integers(2, 60))
    frame, hier = {}, {}
    for i in range(n_qis):
        name = f"q{i}"
        kind = draw(st.sampled_from(["tree", "flat", "intervals"]))
        if kind == "intervals":
            vals = rng.integers(0, 20, n)
            frame[name] = vals
            hier[name] = Hierarchy.intervals(np.arange(20), [2, 4, 8][:draw(st.integers(1, 3))],
                                             name=name)
        else:
            m = draw(st.integers(1, 6))
            frame[name] = [f"{name}{v}" for v in rng.integers(0, m, n)]
            if kind == "flat":
                hier[name] = Hierarchy.flat([f"{name}{v}" for v in range(m)], name=name)
            else:
                widths = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
                hier[name] = _tree(name, m, widths, rng)
    frame["s"] = [f"s{v}" for v in rng.integers(0, draw(st.integers(1, 4)), n)]
    frame = pd.DataFrame(frame)
    qis = [f"q{i}" for i in range(n_qis)]
    schema = Schema.from_roles(frame, qi=qis, sensitive="s", hierarchies=hier)
    return Dataset(frame, schema, name="rand")


def brute_force(ds, levels):
    """Classes of a node by pandas groupby over the generalized records: a frame with
    one row per class (generalized node ids, size, count per sensitive code), sorted by
    the node ids, and the class of each record (groupby's group number)."""
    qis = ds.schema.qis
    gen = pd.DataFrame({q: ds.hierarchy(q).node_of[lv][ds.codes(q)] for q, lv in zip(qis, levels)})
    s_codes = ds.codes(ds.schema.sensitive)
    n_s = ds.hierarchy(ds.schema.sensitive).n_leaves
    for c in range(n_s):
        gen[f"s{c}"] = (s_codes == c).astype(np.int64)
    gen["size"] = 1
    table = gen.groupby(qis, sort=True).sum().reset_index()
    record_class = gen.groupby(qis, sort=True).ngroup().to_numpy()
    return table, record_class


def same_partition(a, b):
    pairs = pd.DataFrame({"a": a, "b": b}).drop_duplicates()
    return len(pairs) == len(np.unique(a)) == len(np.unique(b))


def assert_table_matches(ds, engine, table, levels):
    expect, record_class = brute_force(ds, levels)
    qis = ds.schema.qis
    assert table.levels == tuple(levels)
    assert np.array_equal(table.node_ids.T, expect[qis].to_numpy())
    assert np.array_equal(table.sizes, expect["size"].to_numpy())
    s_cols = [f"s{c}" for c in range(table.n_sensitive)]
    assert np.array_equal(table.sensitive_matrix(), expect[s_cols].to_numpy())
    # the CSR form: sorted by class then code, no zero entries, rows sum to the sizes
    order = np.lexsort((table.pair_value, table.pair_class))
    assert np.array_equal(order, np.arange(len(order))) and (table.pair_count > 0).all()
    off = table.pair_offsets
    assert np.array_equal(np.diff(off), (table.sensitive_matrix() > 0).sum(axis=1))
    rec = engine.record_classes(table)
    assert np.array_equal(rec, record_class)  # same ordering, hence same ids
    assert same_partition(rec, record_class)


@settings(max_examples=6, deadline=None)
@given(small_dataset(), st.booleans())
def test_class_tables_equal_brute_force_on_every_node(ds, packed):
    engine = NodeEngine(ds, packed=packed)
    for levels in engine.lattice.nodes():
        table = engine.classes(levels, rollup=False)
        assert_table_matches(ds, engine, table, tuple(int(v) for v in levels))


@settings(max_examples=25, deadline=None)
@given(small_dataset(), st.sampled_from([0, 1, 3, 4096]), st.integers(0, 2**31 - 1),
       st.booleans())
def test_rollup_equals_direct_on_every_node(ds, cache, seed, packed):
    """Whatever the order of evaluation and the cache bound (0: always from the distinct
    rows; 1 or 3: constant eviction), roll-up gives the direct table array for array,
    with packed keys and without."""
    direct = NodeEngine(ds, packed=False)
    engine = NodeEngine(ds, cache_tables=cache, packed=packed)
    nodes = engine.lattice.nodes()
    order = [nodes, nodes[np.random.default_rng(seed).permutation(len(nodes))]]
    for sweep in order:
        for levels in sweep:
            a, b = engine.classes(levels), direct.classes(levels, rollup=False)
            for f in ("levels", "node_ids", "sizes", "pair_class", "pair_value", "pair_count",
                      "row_class"):
                assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert engine.cached <= cache
    if cache >= len(nodes) > 1:
        assert engine.stats["hits"] > 0  # the second sweep finds every node cached


@settings(max_examples=25, deadline=None)
@given(small_dataset(), st.sampled_from([0, 3, 4096]), st.integers(0, 2**31 - 1))
def test_rollup_without_sensitive_counts_equals_grouping(ds, cache, seed):
    """Without sensitive or label counts the engine rolls up by one sort of keys carrying
    the class sizes (`NodeEngine._rollup_merged`, node ids read off the keys): the same
    tables as grouping the distinct rows without packed keys."""
    qis = list(ds.schema.qis)
    bare = Dataset(ds.frame, ds.schema.with_roles(qi=qis, sensitive=None))
    engine = NodeEngine(bare, cache_tables=cache)
    assert engine._count_bits > 0
    direct = NodeEngine(bare, packed=False)
    nodes = engine.lattice.nodes()
    for levels in nodes[np.random.default_rng(seed).permutation(len(nodes))]:
        a, b = engine.classes(levels), direct.classes(levels, rollup=False)
        assert a.pair_class is None
        for f in ("levels", "node_ids", "sizes", "row_class"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
        assert a.node_ids.dtype == b.node_ids.dtype


def _assert_counted_equals_sorted(engine, levels):
    a = engine._rollup_bottom_counted(levels, engine._level_space(levels))
    b = engine._rollup_merged(engine.bottom, levels)
    for f in ("levels", "keys", "node_ids", "sizes", "row_class"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), (levels, f)
    assert a.node_ids.dtype == b.node_ids.dtype and a.sizes.dtype == b.sizes.dtype


@settings(max_examples=25, deadline=None)
@given(small_dataset())
def test_counted_rollup_from_the_distinct_rows_equals_the_sorted_one(ds):
    """A roll-up from the distinct rows by counting over the node's own key space
    (`NodeEngine._rollup_bottom_counted`, the search's start nodes) is the sort-based
    one (`_rollup_merged`) array for array, on every node, the top included."""
    bare = Dataset(ds.frame, ds.schema.with_roles(qi=list(ds.schema.qis), sensitive=None))
    engine = NodeEngine(bare, cache_tables=0)
    for levels in engine.lattice.nodes():
        _assert_counted_equals_sorted(engine, tuple(int(v) for v in levels))


@pytest.mark.slow  # over 1.4 s: the whole suite runs it
def test_counted_rollup_on_arx_adult():
    """The same on ARX's Adult lattice (19 502 distinct rows), on nodes whose key
    space the dispatcher counts over and on some it sorts, and the dispatcher's
    choice: counting only below the bound."""
    from sdceval.lattice import engine as engine_mod
    ds = load_dataset("adult-arx")
    engine = NodeEngine(ds, cache_tables=0)
    nodes = engine.lattice.nodes()
    rng = np.random.default_rng(0)
    counted = sorted_ = 0
    for levels in nodes[rng.choice(len(nodes), 300, replace=False)]:
        levels = tuple(int(v) for v in levels)
        _assert_counted_equals_sorted(engine, levels)
        small = engine._level_space(levels)
        if small <= engine_mod._COUNT_SLACK * engine.n_distinct + engine_mod._COUNT_MIN:
            counted += 1
        else:
            sorted_ += 1
    assert counted > 50 and sorted_ > 50
    calls = []
    original = engine._rollup_bottom_counted
    engine._rollup_bottom_counted = lambda lv, sm: calls.append(lv) or original(lv, sm)
    engine.classes((1, 4, 1, 2, 3, 2, 2, 2, 1))  # a few classes: counted
    engine.classes((0, 0, 0, 0, 0, 0, 0, 0, 1))  # thousands of classes: sorted
    assert calls == [(1, 4, 1, 2, 3, 2, 2, 2, 1)]


def test_rollup_uses_the_cached_predecessor_with_fewest_classes():
    # bottom: 8 classes; a generalized: 2 (the values of b); b generalized: 4
    frame = pd.DataFrame({"a": list("abcdabcd") * 3, "b": list("xxxxyyyy") * 3,
                          "s": list("pq") * 12})
    ds = Dataset(frame, Schema.from_roles(frame, qi=["a", "b"], sensitive="s"))
    engine = NodeEngine(ds)
    seen = []
    original = engine._rollup
    engine._rollup = lambda src, lv: seen.append(src.levels) or original(src, lv)
    assert engine.classes((1, 0)).n_classes == 2
    assert engine.classes((0, 1)).n_classes == 4  # the most recent, but larger
    engine.classes((1, 1))
    assert seen == [(0, 0), (0, 0), (1, 0)]
    assert engine.stats["hits"] == 0
    assert engine.classes((1, 1)).n_classes == 1
    assert engine.stats["hits"] == 1 and len(seen) == 3


def test_engine_without_sensitive_and_bad_levels():
    frame = pd.DataFrame({"a": list("aabbc"), "b": [1, 1, 2, 2, 2]})
    ds = Dataset(frame, Schema.from_roles(frame, qi=["a", "b"]))
    engine = NodeEngine(ds)
    table = engine.classes((0, 0))
    assert table.pair_class is None and table.n_sensitive == 0
    assert sorted(table.sizes.tolist()) == [1, 2, 2]
    with pytest.raises(SdcevalError, match="no sensitive attribute"):
        table.sensitive_matrix()
    with pytest.raises(SdcevalError, match="quasi-identifier 'a' is outside"):
        engine.classes((5, 0))
    with pytest.raises(SdcevalError, match="one level per quasi-identifier"):
        engine.classes((0,))
    with pytest.raises(SdcevalError, match="cache_tables"):
        NodeEngine(ds, cache_tables=-1)


def test_keys_beyond_int64_are_re_ranked():
    """30 QIs of 8 leaves: the bottom key space 8**30 = 2**90 does not fit int64."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({f"x{i}": rng.integers(0, 8, 40) for i in range(30)})
    frame["s"] = rng.integers(0, 3, 40)
    hier = {f"x{i}": Hierarchy.intervals(np.arange(8), [2, 4], name=f"x{i}")
            for i in range(30)}
    ds = Dataset(frame, Schema.from_roles(frame, qi=list(hier), sensitive="s",
                                          hierarchies=hier, kinds={"s": "categorical"}))
    engine = NodeEngine(ds)
    for levels in [(0,) * 30, (1,) * 30, (0, 1, 2) * 10, (3,) * 30]:
        assert_table_matches(ds, engine, engine.classes(levels), levels)


# -- agreement with a pandas groupby on Adult ----------------------------------------------
@pytest.fixture(scope="module")
def adult_train():
    return load_dataset("adult-train")


def test_agrees_with_pandas_on_adult(adult_train):
    qis = ["age", "workclass", "education", "marital-status", "race", "sex",
           "native-country", "income"]
    ds = Dataset(adult_train.frame, adult_train.schema.with_roles(qi=qis))
    engine = NodeEngine(ds)
    assert engine.lattice.size == 17920
    for levels in [(0,) * 8, (1, 1, 1, 1, 0, 0, 1, 0), (3, 2, 1, 1, 1, 0, 2, 1),
                   (6, 3, 3, 3, 1, 1, 4, 1), (2, 0, 3, 0, 1, 0, 4, 0)]:
        table = engine.classes(levels)
        gen = pd.DataFrame({q: ds.hierarchy(q).node_of[lv][ds.codes(q)]
                            for q, lv in zip(qis, levels)})
        classes = gen.groupby(qis, sort=True).ngroup().to_numpy()
        sizes = np.bincount(classes)
        assert np.array_equal(np.sort(table.sizes), np.sort(sizes))
        rec = engine.record_classes(table)
        # both number classes by their node ids, QI by QI: the same ids
        assert np.array_equal(rec, classes)
        assert int(table.sizes.sum()) == ds.n


def test_adult_sensitive_counts_sum_to_class_sizes(adult_train):
    engine = NodeEngine(adult_train)  # occupation sensitive
    for levels in [(0,) * 6, (2, 1, 1, 1, 0, 1)]:
        t = engine.classes(levels)
        assert isinstance(t, ClassTable)
        assert np.array_equal(t.sensitive_matrix().sum(axis=1), t.sizes)
        assert t.n_sensitive == adult_train.hierarchy("occupation").n_leaves


# -- class labels and batches (issue 7: batched evaluation) ------------------------------
TABLE_FIELDS = ("node_ids", "sizes", "pair_class", "pair_value", "pair_count", "label_class",
                "label_value", "label_count")


@st.composite
def labelled_dataset(draw):
    """A small data set with QIs and, each optional, a sensitive column and a label."""
    ds = draw(small_dataset())
    frame = ds.frame.copy()
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    roles = dict(qi=list(ds.schema.qis), hierarchies={q: ds.hierarchy(q) for q in ds.schema.qis})
    if draw(st.booleans()):
        roles["sensitive"] = "s"
    if draw(st.booleans()):
        frame["y"] = [f"y{v}" for v in rng.integers(0, draw(st.integers(1, 3)), len(frame))]
        roles["label"] = "y"
    return Dataset(frame, Schema.from_roles(frame, **roles), name="rand")


def batch_rows(batch, i):
    """Node ``i`` of a batch as a dict of the `ClassTable` fields (class indices local)."""
    lo, hi = int(batch.offsets[i]), int(batch.offsets[i + 1])
    out = {"node_ids": batch.node_ids[:, lo:hi], "sizes": batch.sizes[lo:hi]}
    for pre, name in (("pair", "pair"), ("label", "label")):
        cls = getattr(batch, f"{name}_class")
        if cls is None:
            out.update({f"{pre}_class": None, f"{pre}_value": None, f"{pre}_count": None})
            continue
        sel = (cls >= lo) & (cls < hi)
        out[f"{pre}_class"] = cls[sel] - lo
        out[f"{pre}_value"] = getattr(batch, f"{name}_value")[sel]
        out[f"{pre}_count"] = getattr(batch, f"{name}_count")[sel]
    return out


def assert_batch_node_equals(batch, i, table):
    assert tuple(batch.levels[i].tolist()) == table.levels
    rows = batch_rows(batch, i)
    for f in TABLE_FIELDS:
        a, b = rows[f], getattr(table, f)
        assert (a is None) == (b is None), f
        if a is not None:
            assert np.array_equal(a, b), (f, table.levels)


def check_batches(engine, batches, nodes, max_classes):
    """Every node asked for exactly once, each equal to its direct class table, and
    no batch over ``max_classes`` classes unless it holds one node."""
    seen = []
    for b in batches:
        assert b.n_classes <= max_classes or b.n_nodes == 1
        assert b.offsets[0] == 0 and b.offsets[-1] == b.n_classes
        assert b.n_sensitive == engine.n_sensitive and b.n_labels == engine.n_labels
        if engine.n_sensitive and engine._layout is not None:  # the rolled sweep's
            assert b.given_pair_starts is not None
        if b.given_pair_starts is not None:  # the sweep's own: as the pairs say
            first = np.searchsorted(b.pair_class, np.arange(b.n_classes))
            assert np.array_equal(b.pair_starts, first)
            assert np.array_equal(b.pair_per_class,
                                  np.bincount(b.pair_class, minlength=b.n_classes))
        for i in range(b.n_nodes):
            assert_batch_node_equals(b, i, engine.classes(b.levels[i], rollup=False))
            seen.append(tuple(b.levels[i].tolist()))
    assert len(seen) == len(set(seen))
    assert sorted(seen) == sorted({tuple(v) for v in np.asarray(nodes).tolist()})


@settings(max_examples=40, deadline=None)
@given(labelled_dataset(), st.integers(1, 200), st.sampled_from([0, 64, 1 << 30]),
       st.booleans())
def test_batches_equal_class_tables_on_every_node(ds, max_classes, state_bytes, reuse):
    """All nodes of the lattice in batches: node for node the same arrays as `classes`
    (sizes, node ids, sensitive pairs, label pairs), with small batches, with no room
    to keep a height for the next (everything from the distinct rows) and with the
    batch arrays reused."""
    engine = NodeEngine(ds)
    nodes = engine.lattice.nodes()
    batches = engine.batches(max_classes=max_classes, state_bytes=state_bytes, reuse=reuse)
    check_batches(engine, batches, nodes, max_classes)


@settings(max_examples=30, deadline=None)
@given(labelled_dataset(), st.data())
def test_batches_of_some_nodes(ds, data):
    """A subset (gaps between heights, repeats, any order): nodes without an immediate
    predecessor among the ones asked for are lifted from the distinct rows on several
    QIs at once."""
    engine = NodeEngine(ds)
    every = engine.lattice.nodes()
    idx = data.draw(st.lists(st.integers(0, len(every) - 1), min_size=1, max_size=30))
    nodes = every[idx]
    check_batches(engine, engine.batches(nodes, max_classes=50), nodes, 50)


def test_label_counts_equal_brute_force():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.integers(0, 6, 200), "b": [f"b{v}" for v in rng.integers(0, 4, 200)],
                          "s": [f"s{v}" for v in rng.integers(0, 5, 200)],
                          "y": [f"y{v}" for v in rng.integers(0, 3, 200)]})
    hier = {"a": Hierarchy.intervals(np.arange(6), [2, 4], name="a")}
    for sens in ("s", None):
        ds = Dataset(frame, Schema.from_roles(frame, qi=["a", "b"], sensitive=sens, label="y",
                                              hierarchies=hier, kinds={"a": "numeric"}))
        engine = NodeEngine(ds)
        assert engine.n_labels == 3 and engine.label == "y"
        y = ds.codes("y")
        for levels in engine.lattice.nodes():
            t = engine.classes(levels)
            rec = engine.record_classes(t)
            expect = np.zeros((t.n_classes, 3), dtype=np.int64)
            np.add.at(expect, (rec, y), 1)
            assert np.array_equal(t.label_matrix(), expect)
            assert np.array_equal(t.label_matrix().sum(axis=1), t.sizes)
            if sens:
                s_expect = np.zeros((t.n_classes, t.n_sensitive), dtype=np.int64)
                np.add.at(s_expect, (rec, ds.codes("s")), 1)
                assert np.array_equal(t.sensitive_matrix(), s_expect)
        # label=False: no label counts, and the CM metric's message says why
        plain = NodeEngine(ds, label=False).classes((1, 0))
        assert plain.label_class is None and plain.n_labels == 0
        with pytest.raises(SdcevalError, match="role 'label'"):
            plain.label_matrix()


def test_batch_bad_input_is_named():
    frame = pd.DataFrame({"a": list("aabbc"), "b": [1, 1, 2, 2, 2], "y": list("xyxyx")})
    ds = Dataset(frame, Schema.from_roles(frame, qi=["a", "b"]))
    engine = NodeEngine(ds)
    with pytest.raises(SdcevalError, match="quasi-identifier 'b' is outside 0.."):
        engine.batches([[0, 0], [0, 9]])
    with pytest.raises(SdcevalError, match="one level per quasi-identifier"):
        engine.batches([[0, 0, 0]])
    with pytest.raises(SdcevalError, match="max_classes must be an integer >= 1"):
        engine.batches(max_classes=0)
    with pytest.raises(SdcevalError, match="state_bytes"):
        engine.batches(state_bytes=-1)
    with pytest.raises(SdcevalError, match="label=True but .* no column with role 'label'"):
        NodeEngine(ds, label=True)
    no_qis = Dataset(frame, Schema.from_roles(frame, sensitive="y"))
    with pytest.raises(SdcevalError, match="no quasi-identifiers"):
        NodeEngine(no_qis)
    assert list(engine.batches(np.zeros((0, 2), dtype=int))) == []


def test_batches_beyond_62_bit_keys_go_node_by_node():
    """30 QIs of 8 leaves: item keys of 90+ bits; the batches come from `classes`."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({f"x{i}": rng.integers(0, 8, 40) for i in range(30)})
    frame["s"] = rng.integers(0, 3, 40)
    hier = {f"x{i}": Hierarchy.intervals(np.arange(8), [2, 4], name=f"x{i}") for i in range(30)}
    ds = Dataset(frame, Schema.from_roles(frame, qi=list(hier), sensitive="s",
                                          hierarchies=hier, kinds={"s": "categorical"}))
    engine = NodeEngine(ds)
    assert engine._layout is None
    nodes = np.array([(0,) * 30, (1,) * 30, (0, 1, 2) * 10, (3,) * 30])
    check_batches(engine, engine.batches(nodes, max_classes=10), nodes, 10)


def test_batches_on_adult_sample(adult_train):
    """Dewri et al.'s Adult lattice: the first heights whole (every node rolled up from
    the one below) and random nodes above, against direct evaluation."""
    qis = ["age", "workclass", "education", "marital-status", "race", "sex", "native-country"]
    ds = Dataset(adult_train.frame, adult_train.schema.with_roles(
        qi=qis, sensitive="occupation", label="income"))
    engine = NodeEngine(ds)
    assert engine.label == "income"
    lat = engine.lattice
    rng = np.random.default_rng(7)
    every = lat.nodes()
    low = every[every.sum(axis=1) <= 3]
    nodes = np.concatenate([low, every[rng.choice(len(every), 40, replace=False)]])
    picked = {tuple(v) for v in low[rng.choice(len(low), 25, replace=False)].tolist()}
    picked |= {tuple(v) for v in nodes[len(low):].tolist()}
    seen = 0
    for b in engine.batches(nodes, max_classes=200_000):
        for i in range(b.n_nodes):
            if tuple(b.levels[i].tolist()) in picked:
                assert_batch_node_equals(b, i, engine.classes(b.levels[i], rollup=False))
                seen += 1
    assert seen == len(picked)


def test_batches_with_many_label_values():
    """A label of 20 codes (label pairs grouped by key rather than one sum per code)."""
    rng = np.random.default_rng(11)
    frame = pd.DataFrame({"a": rng.integers(0, 8, 300), "b": [f"b{v}" for v in rng.integers(0, 5, 300)],
                          "s": [f"s{v}" for v in rng.integers(0, 4, 300)],
                          "y": [f"y{v:02d}" for v in rng.integers(0, 20, 300)]})
    hier = {"a": Hierarchy.intervals(np.arange(8), [2, 4], name="a")}
    ds = Dataset(frame, Schema.from_roles(frame, qi=["a", "b"], sensitive="s", label="y",
                                          hierarchies=hier, kinds={"a": "numeric"}))
    engine = NodeEngine(ds)
    assert engine.n_labels == 20
    nodes = engine.lattice.nodes()
    check_batches(engine, engine.batches(max_classes=40), nodes, 40)
