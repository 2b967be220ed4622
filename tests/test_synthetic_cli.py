"""Synthetic releases (``cart_synthesis``, ``gaussian_copula``, ``dp_histogram``: new
records, no record correspondence) through the command line and the files, end to end
(issue 32): written with no private key and a public ``.method.json`` naming the kind
(and the DP budget), read back as `Release.synthetic`, evaluated by the measures that
accept them, certified and verified, with the record-linkage readings and the
guideline verdicts "not applicable" / "not checked", never a number or a PASS."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdceval.cli import main
from sdceval.core.errors import SdcevalError
from sdceval.experiments.certificate import certificate_path_for


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def small_csv(folder: Path, n: int = 300) -> Path:
    """A small mixed file: two categorical QIs, two numeric attributes."""
    rng = np.random.default_rng(3)
    path = folder / "d.csv"
    pd.DataFrame({"sex": rng.choice(["F", "M"], n),
                  "region": rng.choice(["north", "south", "east", "west"], n),
                  "age": rng.integers(18, 80, n),
                  "income": rng.normal(50, 10, n).round(1)}).to_csv(path, index=False)
    return path


ROLES = ("--qi", "sex,region", "--numeric", "age,income")


def anonymize(folder, capsys, method, *extra, name="syn.csv", code=0):
    data = small_csv(folder)
    out = folder / name
    got, stdout, err = run(["anonymize", "--data", str(data), *ROLES, "--method", method,
                            "--out", str(out), *extra], capsys)
    assert got == code, err
    return data, out, stdout, err


def public_of(out: Path) -> dict:
    return json.loads(Path(str(out) + ".method.json").read_text())


def certificate_of(out: Path) -> dict:
    return json.loads(certificate_path_for(out).read_text())


@pytest.mark.parametrize("method,params", [("cart_synthesis", ("--param", "minbucket=10")),
                                           ("gaussian_copula", ())])
def test_a_synthetic_release_is_written_with_no_key_and_certified(tmp_path, capsys,
                                                                  method, params):
    _, out, stdout, err = anonymize(tmp_path, capsys, method, *params)
    assert out.is_file()
    assert not Path(str(out) + ".private-key.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["d.csv", "syn.csv", "syn.csv.method.json", "syn.csv.certificate.json"])
    text = stdout + err
    assert "no private key" in text and "no record correspondence" in text
    assert "PRIVATE" not in text
    # the treatment line says what happened to each column: synthesized, not masked
    columns = next(ln for ln in text.splitlines() if ln.startswith("columns:"))
    assert "synthesized" in columns and "masked" not in columns
    public = public_of(out)
    assert public["kind"] == "synthetic" and public["method"] == method
    assert "seed" not in public.get("params", {})
    assert "dp" not in public
    cert = certificate_of(out)
    assert cert["method"]["kind"] == "synthetic"
    assert {f["role"] for f in cert["files"]} == {"input", "release", "public"}


def test_verify_agrees_on_a_synthetic_release(tmp_path, capsys):
    _, out, _, _ = anonymize(tmp_path, capsys, "cart_synthesis", "--param", "minbucket=10")
    code, stdout, err = run(["verify", str(certificate_path_for(out))], capsys)
    assert code == 0, stdout + err
    assert "MISMATCH" not in stdout
    # the release edited: its hash and the public file's tie no longer agree
    data = bytearray(out.read_bytes())
    data[-2] = ord("7") if data[-2] != ord("7") else ord("8")
    out.write_bytes(bytes(data))
    code, stdout, _ = run(["verify", str(certificate_path_for(out))], capsys)
    assert code == 1 and "MISMATCH  release sha256" in stdout


def test_the_certificate_lists_record_linkage_readings_as_not_applicable(tmp_path, capsys):
    _, out, _, _ = anonymize(tmp_path, capsys, "cart_synthesis", "--param", "minbucket=10")
    readings = certificate_of(out)["readings"]
    risk = readings["risk"]
    assert risk["measure"] == "reidentification"
    assert "value" not in risk["residual"]          # never a number, never 0
    assert risk["residual"]["applicable"] is False
    assert "no record correspondence" in risk["residual"]["reason"]
    assert isinstance(risk["initial"]["value"], float)  # the original's own risk
    na = {r["measure"]: r["reason"] for r in readings["not_applicable"]}
    assert "reidentification" in na and "linkage_risk" in na
    assert all("no record correspondence" in r or "control set" in r for r in na.values())
    # the measures that accept synthetic releases are read
    measured = {r["measure"]: r for r in readings["measures"]}
    assert "query_error" in measured
    assert isinstance(measured["query_error"]["value"], float)


def test_evaluate_reads_a_synthetic_release_and_refuses_linkage_risks(tmp_path, capsys):
    data, out, _, _ = anonymize(tmp_path, capsys, "cart_synthesis",
                                "--param", "minbucket=10")
    base = ["evaluate", "--data", str(data), *ROLES, "--release", str(out)]
    code, stdout, err = run([*base, "--measures", "query_error"], capsys)
    assert code == 0, err
    assert "query_error" in stdout
    code, stdout, err = run([*base, "--measures", "reidentification"], capsys)
    assert code == 2
    assert "not applicable to a synthetic release" in err
    assert "no record correspondence" in err
    code, stdout, err = run([*base, "--measures", "query_error,linkage_risk"], capsys)
    assert code == 0 and "not computed" in err and "not applicable" in err


def test_read_release_recognizes_a_synthetic_file(tmp_path, capsys):
    from sdceval.core.loaders import open_dataset
    from sdceval.core.release_io import read_release
    data, out, _, _ = anonymize(tmp_path, capsys, "gaussian_copula",
                                "--param", "n_records=120")
    ds = open_dataset(str(data), qi=["sex", "region"], numeric=["age", "income"])
    rel = read_release(ds, out)
    assert rel.kind == "synthetic" and not rel.aligned and rel.n == 120
    assert rel.method == "gaussian_copula"
    # a key given for a synthetic release: refused (no row is any record's)
    with pytest.raises(SdcevalError, match="no key"):
        read_release(ds, out, key=tmp_path / "k.csv")
    # without its public file the file is not taken for a row-aligned release
    Path(str(out) + ".method.json").unlink()
    with pytest.raises(SdcevalError, match=r"syn\.csv\.method\.json"):
        read_release(ds, out)


def test_dp_histogram_records_its_budget_and_uses_opendp_noise(tmp_path, capsys):
    _, out, stdout, err = anonymize(tmp_path, capsys, "dp_histogram", "--param",
                                    "epsilon=1", "--param", "columns=sex,region")
    dp = public_of(out)["dp"]
    assert dp["epsilon"] == 1.0 and dp["delta"] == 0.0
    assert dp["noise"] == "opendp" and dp["private"] is True
    assert "Laplace" in dp["mechanism"] and dp["neighbouring"]
    assert isinstance(dp["leaks"], list) and dp["leaks"]     # bounds from the data
    assert dp["epsilon_spent"] <= 1.0
    cert = certificate_of(out)
    assert cert["method"]["dp"] == dp
    text = stdout + err
    assert "OpenDP" in text and "not private" not in text
    code, stdout, err = run(["verify", str(certificate_path_for(out))], capsys)
    assert code == 0, stdout + err


def test_seeded_dp_noise_is_said_to_be_not_private(tmp_path, capsys):
    _, out, stdout, err = anonymize(tmp_path, capsys, "dp_histogram", "--param",
                                    "epsilon=1", "--param", "columns=sex,region",
                                    "--param", "noise=seeded")
    assert "warning" in err.lower() and "not private" in err
    assert public_of(out)["dp"]["noise"] == "seeded"
    assert public_of(out)["dp"]["private"] is False


def test_a_guideline_on_a_synthetic_release_is_not_checked(tmp_path, capsys):
    report = tmp_path / "r.html"
    _, out, stdout, err = anonymize(tmp_path, capsys, "cart_synthesis", "--param",
                                    "minbucket=10", "--guideline", "ema-0070",
                                    "--report", str(report))
    verdict = certificate_of(out)["readings"]["verdicts"][0]
    assert verdict["residual"]["status"] == "not checked"
    assert verdict["residual"]["passed"] is None
    assert "value" not in verdict["residual"]
    assert "no record correspondence" in verdict["residual"]["reason"]
    line = next(ln for ln in (stdout + err).splitlines() if ln.startswith("ema-0070:"))
    assert "not checked" in line and "PASS" not in line
    page = report.read_text()
    assert "not applicable" in page and "not checked after" in page
    assert "PASS after" not in page and "FAIL after" not in page
    code, stdout, err = run(["verify", str(certificate_path_for(out))], capsys)
    assert code == 0, stdout + err


def test_row_order_options_are_refused_for_a_synthetic_release(tmp_path, capsys):
    code = anonymize(tmp_path, capsys, "cart_synthesis", "--shuffle-seed", "3",
                     code=2)[3]
    assert "--shuffle-seed" in code and "synthetic" in code
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]


def test_a_stale_key_of_an_earlier_release_is_removed(tmp_path, capsys):
    """An aligned release first (with its key), then a synthetic one at the same name:
    the old key (of rows that no longer exist) goes."""
    data = small_csv(tmp_path)
    out = tmp_path / "syn.csv"
    code, _, err = run(["anonymize", "--data", str(data), *ROLES, "--method", "noise",
                        "--out", str(out)], capsys)
    assert code == 0, err
    assert Path(str(out) + ".private-key.csv").is_file()
    code, _, err = run(["anonymize", "--data", str(data), *ROLES, "--method",
                        "cart_synthesis", "--out", str(out)], capsys)
    assert code == 0, err
    assert not Path(str(out) + ".private-key.csv").exists()
    assert public_of(out)["kind"] == "synthetic"


def test_kept_columns_are_synthesized_and_not_measured_for_linkage(tmp_path, capsys,
                                                                    monkeypatch):
    """``--keep`` on a synthetic release: the kept column is synthesized like the
    others, and the kept-columns warning (a re-identification comparison, which has no
    meaning here) is not even asked for: no error, no warning about re-identification."""
    import sdceval.measures._kept_keys as kept
    calls = []
    monkeypatch.setattr(kept, "warn", lambda *a, **k: calls.append(a))
    rng = np.random.default_rng(5)
    data = tmp_path / "d.csv"
    n = 200
    pd.DataFrame({"sex": rng.choice(["F", "M"], n), "age": rng.integers(18, 80, n),
                  "town": rng.choice([f"t{i}" for i in range(60)], n)}).to_csv(
        data, index=False)
    out = tmp_path / "syn.csv"
    code, stdout, err = run(["anonymize", "--data", str(data), "--qi", "sex",
                             "--numeric", "age", "--keep", "town", "--method",
                             "gaussian_copula", "--out", str(out)], capsys)
    assert code == 0, err
    assert "re-identification" not in err and calls == []
    columns = next(ln for ln in (stdout + err).splitlines() if ln.startswith("columns:"))
    assert "town" in columns and "synthesized" in columns


def test_an_edited_dp_budget_in_the_certificate_is_a_mismatch(tmp_path, capsys):
    _, out, _, _ = anonymize(tmp_path, capsys, "dp_histogram", "--param", "epsilon=1",
                             "--param", "columns=sex,region", "--param", "noise=seeded")
    cert = certificate_path_for(out)
    doc = json.loads(cert.read_text())
    doc["method"]["dp"]["epsilon"] = 0.1
    cert.write_text(json.dumps(doc))
    code, stdout, _ = run(["verify", str(cert)], capsys)
    assert code == 1 and "MISMATCH  dp budget" in stdout and "epsilon" in stdout
