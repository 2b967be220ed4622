"""What each release did to each column (issue 28 item 1): `column_treatment` per method,
the comparison's column × method table, its note in the console and results.json, and
the report's "What each method publishes" table."""
from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.catalog import get_method
from sdceval.core.frames import as_dataset
from sdceval.core.release import Release
from sdceval.core.treatment import TREATMENTS, column_treatment

ROLES = dict(qi=["zip", "age", "sex"], numeric=["income", "visits"], sensitive="diagnosis",
             passthrough=["region"], identifier=["id"])


def frame(n: int = 200, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n), "zip": rng.choice(["101", "102", "201"], n),
                         "age": rng.integers(18, 90, n), "sex": rng.choice(["F", "M"], n),
                         "income": rng.lognormal(10, 0.5, n).round(-2),
                         "visits": rng.poisson(3, n),
                         "diagnosis": rng.choice(["flu", "asthma", "copd"], n),
                         "region": rng.choice(["N", "S"], n)})


@pytest.fixture(scope="module")
def ds():
    return as_dataset(frame(), **ROLES)


def treat(ds, method, **params):
    spec = get_method(method)
    return column_treatment(ds, spec.apply(ds, spec.resolve(params), seed=0))


@pytest.mark.parametrize("method", ["mdav", "noise"])
def test_perturbative_masks_numeric_and_drops_the_keys(ds, method):
    t = treat(ds, method)
    assert list(t) == list(frame().columns)  # every schema column, in schema order
    assert t["income"] == t["visits"] == "masked"
    assert t["zip"] == t["age"] == t["sex"] == t["diagnosis"] == "dropped"
    assert t["region"] == "as is" and t["id"] == "dropped (identifier)"


@pytest.mark.parametrize("method,params", [("mondrian", {"models": ["k=20"]}),
                                           ("generalization", {"models": ["k=20"]})])
def test_generalization_generalizes_the_qis_and_drops_numeric(ds, method, params):
    t = treat(ds, method, **params)
    assert t["income"] == t["visits"] == "dropped"
    assert t["diagnosis"] == "as is" and t["region"] == "as is"
    assert any(t[q].startswith("generalized") for q in ("zip", "age", "sex"))
    assert all(t[q].startswith("generalized") or t[q] == "as is"
               for q in ("zip", "age", "sex"))


def test_bucketization_keeps_qis_and_permutes_the_sensitive(ds):
    t = treat(ds, "bucketization")
    assert t["zip"] == t["age"] == t["sex"] == "as is"
    assert t["diagnosis"] == "permuted within buckets"
    assert t["income"] == "dropped"


def test_every_treatment_is_in_the_vocabulary(ds):
    for method in ("mdav", "mondrian", "bucketization"):
        assert all(v.split(",")[0] in TREATMENTS for v in treat(ds, method).values())


def test_suppressed_records_are_counted_and_unchanged_numbers_are_as_is(ds):
    spec = get_method("mondrian")
    rel = spec.apply(ds, spec.resolve({"models": ["k=20"]}), seed=0)
    flags = np.zeros(ds.n, dtype=bool)
    flags[:7] = True
    hand = Release(rel.data, rel.method, kind="generalized", classes=rel.classes,
                   cells=dict(rel.cells), suppressed=flags,
                   sensitive_codes=rel.sensitive_codes)
    assert column_treatment(ds, hand)["age"] == "generalized, 7 suppressed cells"
    same = Release.perturbative(ds, ds.frame[["income", "visits"]], method="copy")
    assert column_treatment(ds, same)["income"] == "as is"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("treatment")
    df = frame()
    df.drop(columns=["id"]).to_csv(out / "p.csv", index=False)
    (out / "schema.toml").write_text(
        'qi = ["zip", "age", "sex"]\nnumeric = ["income", "visits"]\n'
        'sensitive = "diagnosis"\npassthrough = ["region"]\n')
    from sdceval.cli import main
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(["compare", "--data", str(out / "p.csv"), "--schema",
                     str(out / "schema.toml"), "--methods", "mdav,mondrian",
                     "--utility", "query_error", "--repeats", "1", "--out", str(out / "c")])
    assert code == 0, buf.getvalue() + err.getvalue()
    return out / "c", buf.getvalue(), err.getvalue()


def test_whole_file_candidates_publish_every_column_so_there_is_no_note():
    """On a file with numeric attributes and QIs, ``mdav`` and ``mondrian`` named alone
    are read as their whole-file strategies (issue 28 item 1), which publish every
    column: the table says what each did to each column and no note is needed."""
    said = []
    comp = sdceval.compare(frame().drop(columns=["id"]), methods="mdav,mondrian",
                           curves=False, utilities="query_error", progress=said.append,
                           **{k: v for k, v in ROLES.items() if k != "identifier"})
    assert any("mdav read as mdav+recode" in m and "mondrian read as mondrian+intervals"
               in m for m in said), said
    table = comp.treatment_table()
    assert list(table.columns) == ["mdav+recode", "mondrian+intervals"]
    assert list(table.index) == [c for c in frame().columns if c != "id"]
    assert not table.apply(lambda col: col.str.startswith("dropped")).any().any(), table
    assert table.loc["income", "mdav+recode"] == "masked"
    assert table.loc["income", "mondrian+intervals"] == "generalized"  # intervals
    assert {table.loc[q, "mdav+recode"] for q in ("zip", "age", "sex")} <= {
        "as is", "generalized"}  # recoded (level 0: as is), never dropped
    assert comp.treatment_note() == ""


def test_the_note_names_the_columns_releases_differ_on():
    """The note is still written where the recorded releases publish different columns
    (a comparison stored before whole-file strategies, decoded by `sdceval report`):
    the plain methods' own releases, MDAV's numbers beside Mondrian's QIs."""
    import dataclasses

    from sdceval.experiments.result_codec import decode, encode
    ds = as_dataset(frame().drop(columns=["id"]),
                    **{k: v for k, v in ROLES.items() if k != "identifier"})
    comp = sdceval.compare(ds, methods="mdav,noise", curves=False,
                           utilities="query_error")
    assert comp.treatment_note() == ""
    old = dataclasses.replace(comp, treatment={
        "mdav": treat(ds, "mdav"), "mondrian": treat(ds, "mondrian", models=["k=20"])})
    for c in (old, decode(encode(old))):
        note = c.treatment_note()
        assert "different columns" in note and "income" in note and "zip" in note
        assert "region" not in note.split("(")[1]  # published alike by both


def test_console_and_results_json_say_what_each_method_publishes(compared):
    out, stdout, stderr = compared
    assert "mdav read as mdav+recode" in stderr and "mondrian read as mondrian+intervals" \
        in stderr.replace("\n", " ")
    # every candidate publishes every column: no rows of differences, no note
    assert "what each method publishes" not in stdout
    assert "different columns" not in stdout.replace("\n", " ")
    saved = json.loads((out / "results.json").read_text())["treatment"]
    assert set(saved) == {"mdav+recode", "mondrian+intervals"}
    assert saved["mdav+recode"]["income"] == "masked"
    assert saved["mondrian+intervals"]["income"] == "generalized"
    assert not any(v.startswith("dropped") for t in saved.values() for v in t.values())


def test_report_shows_the_table(compared):
    out, _, _ = compared
    text = (out / "report.html").read_text(encoding="utf-8")
    assert "What each method publishes" in text
    assert "masked" in text and "generalized" in text


def test_same_columns_give_no_note_and_the_store_keeps_the_table():
    from sdceval.experiments.result_codec import decode, encode
    comp = sdceval.compare(frame().drop(columns=["id"]), methods="mdav,noise",
                           curves=False, utilities="query_error",
                           **{k: v for k, v in ROLES.items() if k != "identifier"})
    assert comp.treatment_note() == ""
    assert set(comp.treatment_table().loc["income"]) == {"masked"}
    back = decode(encode(comp))
    assert back.treatment == comp.treatment
    assert back.treatment_table().equals(comp.treatment_table())


def test_anonymize_says_what_it_did_to_each_column(compared):
    """Every release states it: `sdceval anonymize` prints one line grouping the columns
    by treatment (progress output, so not under -q)."""
    from sdceval.cli import main
    folder = compared[0].parent
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["anonymize", "--data", str(folder / "p.csv"), "--schema",
                     str(folder / "schema.toml"), "--method", "mdav", "--param", "k=5",
                     "--out", str(folder / "m.csv")])
    assert code == 0, err.getvalue()
    line = next(x for x in err.getvalue().splitlines() if x.startswith("columns: "))
    assert line == ("columns: zip, age, sex, diagnosis dropped; income, visits masked; "
                    "region as is"), line
