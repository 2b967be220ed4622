"""The audit certificate beside every release, ``sdceval verify`` and the anonymization
report (issue 30 item 3; docs/certificate.md)."""
from __future__ import annotations

import hashlib
import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdceval.cli import main
from sdceval.experiments import certificate as certificate_module
from sdceval.experiments.certificate import SUFFIX, certificate_path_for


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def anonymize(tmp_path, capsys, *extra, data="census", method="mdav", name="masked.csv"):
    out = tmp_path / name
    code, _, err = run(["anonymize", "--data", str(data), "--method", method,
                        "--out", str(out), "-q", *extra], capsys)
    assert code == 0, err
    return out, certificate_path_for(out)


def verify(cert, capsys):
    return run(["verify", str(cert)], capsys)


def lines_of(out: str) -> dict[str, str]:
    """``what -> OK | MISMATCH`` from verify's output."""
    got = {}
    for line in out.splitlines():
        status, _, rest = line.partition(" ")
        if status in ("OK", "MISMATCH"):
            got[rest.strip().split(":")[0]] = status
    return got


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def flip_byte(path, at: int = -2) -> None:
    data = bytearray(Path(path).read_bytes())
    data[at] = ord("7") if data[at] != ord("7") else ord("8")
    Path(path).write_bytes(bytes(data))


def edit(cert, change) -> None:
    doc = json.loads(Path(cert).read_text())
    change(doc)
    Path(cert).write_text(json.dumps(doc, indent=2))


class FakeVerdict:
    """A stand-in with `Verdict.to_dict`'s fields (the share of released rows unique on
    every published column against a threshold): the certificate records whatever the
    guideline module returns."""

    def __init__(self, name, value, threshold):
        self.name, self.value, self.threshold = name, value, threshold

    def to_dict(self):
        return {"guideline": self.name, "passed": self.value <= self.threshold,
                "value": self.value, "threshold": self.threshold,
                "attacker": "journalist", "metric": "share of unique rows",
                "records_violating": round(self.value * 1000),
                "assumptions": {"population": "the file"}}


def fake_guideline(name, dataset, release, threshold="0.5"):
    unique = ~release.data.duplicated(keep=False)
    return FakeVerdict(name, float(np.mean(unique)), float(threshold))


@pytest.fixture
def stub_guidelines(monkeypatch):
    """A guideline ``stub`` that reads perturbative releases too (the profiles' measures
    read released keys)."""
    import sdceval.guidelines
    real = sdceval.guidelines.get_profile
    monkeypatch.setattr(certificate_module, "_evaluate_guideline", fake_guideline)
    monkeypatch.setattr(sdceval.guidelines, "get_profile",
                        lambda name: None if name == "stub" else real(name))


# -- the certificate's content ---------------------------------------------------------------
def test_certificate_hashes_are_hashlib_sha256_of_the_files(tmp_path, capsys):
    out, cert = anonymize(tmp_path, capsys, "--param", "k=5", "--seed", "3")
    doc = json.loads(cert.read_text())
    assert cert.name == "masked.csv" + SUFFIX
    assert doc["format"] == "sdceval-certificate" and doc["version"] == 1
    files = {f["role"]: f for f in doc["files"]}
    assert files["release"]["path"] == "masked.csv"
    assert files["release"]["sha256"] == sha(out)
    assert files["key"]["path"] == "masked.csv.private-key.csv"
    assert files["key"]["sha256"] == sha(tmp_path / "masked.csv.private-key.csv")
    canonical = json.dumps(doc["configuration"], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    assert doc["configuration_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert doc["configuration"]["method"] == "mdav"
    assert doc["configuration"]["seed"] == 3 and doc["seeds"]["method"] == 3
    assert doc["method"]["params"]["k"] == 5
    # the row order's seed is private: never in the certificate
    assert "shuffle_seed" not in cert.read_text()
    risk = doc["readings"]["risk"]
    assert risk["initial"]["value"] == 1.0 > risk["residual"]["value"] > 0


def test_a_data_file_and_its_schema_are_hashed_and_found_relative_to_the_certificate(
        tmp_path, capsys):
    folder = tmp_path / "a"
    folder.mkdir()
    rng = np.random.default_rng(0)
    data = folder / "d.csv"
    pd.DataFrame({"age": rng.integers(20, 60, 300), "zip": rng.integers(1, 6, 300),
                  "income": rng.normal(50, 10, 300).round(2)}).to_csv(data, index=False)
    _, cert = anonymize(folder, capsys, "--qi", "age,zip", "--param", "k=5",
                          data=data, method="mondrian")
    doc = json.loads(cert.read_text())
    inputs = [f for f in doc["files"] if f["role"] == "input"]
    assert inputs == [{"role": "input", "path": "d.csv", "sha256": sha(data)}]
    moved = tmp_path / "elsewhere"
    folder.rename(moved)  # the bundle moves as a whole: paths are relative
    code, text, err = verify(moved / cert.name, capsys)
    assert code == 0, text + err
    flip_byte(moved / "d.csv", at=-3)
    code, text, _ = verify(moved / cert.name, capsys)
    assert code == 1 and lines_of(text)["input sha256 d.csv"] == "MISMATCH"


# -- verify ----------------------------------------------------------------------------------
def test_verify_agrees_on_an_untouched_release(tmp_path, capsys, stub_guidelines):
    _, cert = anonymize(tmp_path, capsys, "--param", "k=5", "--guideline", "stub")
    code, out, err = verify(cert, capsys)
    assert code == 0, out + err
    got = lines_of(out)
    assert set(got.values()) == {"OK"}
    assert {"release sha256 masked.csv", "key sha256 masked.csv.private-key.csv",
            "configuration sha256", "data fingerprint", "risk reidentification",
            "verdict stub"} <= set(got)


def test_one_byte_of_the_release_changed_is_a_mismatch(tmp_path, capsys):
    out, cert = anonymize(tmp_path, capsys, "--param", "k=5")
    flip_byte(out)
    code, text, _ = verify(cert, capsys)
    got = lines_of(text)
    assert code == 1
    assert got["release sha256 masked.csv"] == "MISMATCH"
    assert got["key sha256 masked.csv.private-key.csv"] == "OK"


def test_one_byte_of_the_key_changed_is_a_mismatch(tmp_path, capsys):
    _, cert = anonymize(tmp_path, capsys, "--param", "k=5")
    flip_byte(tmp_path / "masked.csv.private-key.csv")
    code, text, _ = verify(cert, capsys)
    got = lines_of(text)
    assert code == 1 and got["key sha256 masked.csv.private-key.csv"] == "MISMATCH"
    assert got["release sha256 masked.csv"] == "OK"


def test_an_edited_configuration_is_a_mismatch(tmp_path, capsys):
    _, cert = anonymize(tmp_path, capsys, "--param", "k=5")

    def change(doc):
        doc["configuration"]["params"]["k"] = "3"
    edit(cert, change)
    code, text, _ = verify(cert, capsys)
    assert code == 1 and lines_of(text)["configuration sha256"] == "MISMATCH"


def test_an_edited_verdict_is_a_mismatch(tmp_path, capsys, stub_guidelines):
    _, cert = anonymize(tmp_path, capsys, "--param", "k=5", "--guideline", "stub")
    doc = json.loads(cert.read_text())
    verdict = doc["readings"]["verdicts"][0]
    assert verdict["guideline"] == "stub" and verdict["initial"]["passed"] is False
    assert verdict["residual"]["passed"] is True   # mdav k=5: no unique row

    def change(doc):
        doc["readings"]["verdicts"][0]["residual"]["value"] = 0.01
    edit(cert, change)
    code, text, _ = verify(cert, capsys)
    assert code == 1
    assert lines_of(text) == {**lines_of(text), "verdict stub": "MISMATCH",
                              "configuration sha256": "OK"}
    assert "value: recorded 0.01, now 0.0" in text


def test_an_edited_risk_reading_is_a_mismatch(tmp_path, capsys):
    _, cert = anonymize(tmp_path, capsys, "--param", "k=5")

    def change(doc):
        doc["readings"]["risk"]["residual"]["value"] /= 2
    edit(cert, change)
    code, text, _ = verify(cert, capsys)
    assert code == 1 and lines_of(text)["risk reidentification"] == "MISMATCH"


def test_a_release_in_record_order_has_no_key_and_verifies(tmp_path, capsys):
    _, cert = anonymize(tmp_path, capsys, "--keep-order")
    roles = [f["role"] for f in json.loads(cert.read_text())["files"]]
    assert roles == ["release"]
    code, text, err = verify(cert, capsys)
    assert code == 0, text + err


# -- bad certificates: one line, exit 2 ----------------------------------------------------------
def _one_line_error(code, out, err):
    assert code == 2 and out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("sdceval: error: "), err
    return lines[0]


def test_a_file_that_is_not_json_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "c.json"
    bad.write_text("{not json")
    line = _one_line_error(*verify(bad, capsys))
    assert "is not JSON" in line and "c.json" in line


def test_an_unknown_version_or_format_is_a_one_line_error(tmp_path, capsys):
    _, cert = anonymize(tmp_path, capsys, "--param", "k=5")
    edit(cert, lambda doc: doc.update(version=99))
    line = _one_line_error(*verify(cert, capsys))
    assert "version 99" in line
    edit(cert, lambda doc: doc.update(format="something-else"))
    assert "not an sdceval certificate" in _one_line_error(*verify(cert, capsys))
    missing = tmp_path / "none.json"
    assert "does not exist" in _one_line_error(*verify(missing, capsys))
    edit(cert, lambda doc: doc.update(format="sdceval-certificate", version=1,
                                      files="masked.csv"))
    assert "files must be a list" in _one_line_error(*verify(cert, capsys))
    edit(cert, lambda doc: doc.update(files=[], seeds={"root": -1}))
    assert "names no release" in _one_line_error(*verify(cert, capsys))
    (tmp_path / "list.json").write_text("[1, 2]")
    assert "not an sdceval certificate" in _one_line_error(
        *verify(tmp_path / "list.json", capsys))


def test_a_missing_file_named_in_the_certificate_is_a_one_line_error(tmp_path, capsys):
    _, cert = anonymize(tmp_path, capsys, "--param", "k=5")
    (tmp_path / "masked.csv.private-key.csv").unlink()
    line = _one_line_error(*verify(cert, capsys))
    assert "masked.csv.private-key.csv" in line and "does not exist" in line


# -- writing next to the release -----------------------------------------------------------------
def test_a_file_at_the_certificate_name_is_never_overwritten(tmp_path, capsys):
    taken = tmp_path / ("masked.csv" + SUFFIX)
    taken.write_text("mine\n")
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--out",
                        str(tmp_path / "masked.csv"), "-q"], capsys)
    assert code == 2 and "certificate" in err
    assert taken.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [taken.name]  # nothing written


def test_a_new_release_replaces_the_certificate_of_the_old(tmp_path, capsys):
    out, cert = anonymize(tmp_path, capsys, "--param", "k=5")
    first = json.loads(cert.read_text())
    anonymize(tmp_path, capsys, "--param", "k=10")
    second = json.loads(cert.read_text())
    assert second["configuration"]["params"]["k"] == "10" != first["configuration"]["params"]["k"]
    assert {f["role"]: f["sha256"] for f in second["files"]}["release"] == sha(out)
    assert not list(tmp_path.glob("*.tmp"))


# -- the anonymization report --------------------------------------------------------------------
class _Page(HTMLParser):
    """Headings by section, tables as rows of cell texts, and the definition lists."""

    def __init__(self):
        super().__init__()
        self.sections: dict[str, dict] = {}
        self.current = None
        self.stack: list[str] = []
        self.text = ""
        self.meta = []

    def handle_starttag(self, tag, attrs):
        if tag == "meta":
            self.meta.append(dict(attrs))
        self.stack.append(tag)
        if tag in ("h2", "h3", "td", "th", "dt", "dd"):
            self.text = ""
        if tag == "tr" and self.current is not None:
            self.current["tables"][-1].append([])
        if tag == "table" and self.current is not None:
            self.current["tables"].append([])

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()
        text = " ".join(self.text.split())
        if tag == "h2":
            self.current = self.sections.setdefault(
                text, {"h3": [], "tables": [], "dl": {}})
        elif tag == "h3" and self.current is not None:
            self.current["h3"].append(text)
        elif tag in ("td", "th") and self.current is not None:
            self.current["tables"][-1][-1].append(text)
        elif tag == "dt" and self.current is not None:
            self.dt = text
        elif tag == "dd" and self.current is not None:
            under = self.current["h3"][-1] if self.current["h3"] else ""
            self.current["dl"].setdefault(under, {})[self.dt] = text

    def handle_data(self, data):
        self.text += data


def parse(path) -> _Page:
    p = _Page()
    p.feed(Path(path).read_text(encoding="utf-8"))
    return p


def test_the_report_holds_the_template_fields_and_the_certificate(tmp_path, capsys,
                                                                    stub_guidelines):
    from sdceval.experiments.report_anonymization import FIELDS
    report = tmp_path / "report.html"
    out, cert = anonymize(tmp_path, capsys, "--param", "k=5", "--guideline",
                          "stub:threshold=0.3", "--report", str(report))
    doc = json.loads(cert.read_text())
    page = parse(report)
    assert any("default-src 'none'" in m.get("content", "") for m in page.meta)
    anon = page.sections["Anonymization report"]
    assert anon["h3"] == list(FIELDS)
    variables, risk, utility = anon["tables"]
    assert variables[0] == ["variable", "role", "what the release did to it"]
    by_column = {r[0]: r[1:] for r in variables[1:]}
    assert by_column["AGI"] == ["numeric", "masked"]
    assert risk[0][:3] == ["reading", "initial risk", "residual risk"]
    assert risk[1][0].startswith("re-identification rate") and risk[1][1] == "1"
    assert risk[2][0].startswith("stub") and risk[2][3] == "0.3"
    assert risk[2][4] == "FAIL before, PASS after"
    assert [r[3] for r in utility[1:]] == ["propensity", "il1s"]
    assert anon["dl"]["Attacker model"]["stub"] == "journalist"
    assert anon["dl"]["Threshold and justification"]["stub: threshold"] == (
        "share of unique rows 0.3")
    certificate = page.sections["Certificate"]
    files = {r[0]: r[1:] for r in certificate["tables"][0][1:]}
    assert files["release"] == ["masked.csv", sha(out)]
    assert certificate["dl"][""]["configuration sha256"] == doc["configuration_sha256"]
    assert certificate["dl"][""]["sdceval version"] == doc["sdceval"]
    assert certificate["tables"][1][1][:3] == ["stub", "FAIL", "PASS"]
    # a report at the name of the release or its companions: refused before any file
    for name in ("m2.csv", "m2.csv.private-key.csv", "m2.csv" + SUFFIX):
        code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--out",
                            str(tmp_path / "m2.csv"), "--report", str(tmp_path / name),
                            "-q"], capsys)
        assert code == 2 and "choose another report file" in err
        assert not (tmp_path / "m2.csv").exists()
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--out",
                        str(tmp_path / "m2.csv"), "--report", str(tmp_path / "r2.html"),
                        "--report-measures", "propensity,nonesuch", "-q"], capsys)
    assert code == 2 and "nonesuch" in err and not (tmp_path / "m2.csv").exists()


def test_without_a_guideline_the_threshold_is_the_methods_target(tmp_path, capsys):
    report = tmp_path / "report.html"
    anonymize(tmp_path, capsys, "--param", "k=5", "--report", str(report))
    page = parse(report)
    text = Path(report).read_text()
    assert "at most 1/k = 0.2" in text
    assert page.sections["Certificate"]["tables"][1:] == []  # no verdict table


# -- with the guideline profiles (sdceval.guidelines) ---------------------------------------
def _small_csv(folder, n=400):
    rng = np.random.default_rng(1)
    path = folder / "d.csv"
    pd.DataFrame({"age": rng.integers(20, 70, n), "zip": rng.integers(1, 9, n),
                  "income": rng.normal(50, 10, n).round(1)}).to_csv(path, index=False)
    return path


def test_ema_0070_verdicts_are_certified_and_verified(tmp_path, capsys):
    """Unprotected the file fails EMA 0070's 0.09 (unique records); mondrian with
    classes of at least 12 passes it; verify recomputes both verdicts."""
    data = _small_csv(tmp_path)
    report = tmp_path / "r.html"
    _, cert = anonymize(tmp_path, capsys, "--qi", "age,zip", "--param", "k=12",
                        "--guideline", "ema-0070", "--report", str(report),
                        data=data, method="mondrian")
    verdict = json.loads(cert.read_text())["readings"]["verdicts"][0]
    assert verdict["guideline"] == "ema-0070"
    assert verdict["initial"]["passed"] is False and verdict["initial"]["value"] == 1.0
    assert verdict["residual"]["passed"] is True
    assert verdict["residual"]["value"] <= 1 / 12
    assert verdict["residual"]["min_class_size"] == 12
    code, out, err = verify(cert, capsys)
    assert code == 0 and lines_of(out)["verdict ema-0070"] == "OK", out + err
    anon = parse(report).sections["Anonymization report"]
    threshold = anon["dl"]["Threshold and justification"]
    assert "minimum class size 12" in threshold["ema-0070: threshold"]
    assert "EMA" in threshold["source"] and threshold["justification"]
    assert anon["dl"]["Attacker model"]["ema-0070"] == "journalist"
    # the threshold edited in the certificate: its verdict no longer agrees
    edit(cert, lambda doc: doc["readings"]["verdicts"][0]["residual"].update(passed=False))
    code, out, _ = verify(cert, capsys)
    assert code == 1 and lines_of(out)["verdict ema-0070"] == "MISMATCH"
    assert "passed: recorded false, now true" in out


def test_an_unknown_guideline_is_refused_before_anything_is_written(tmp_path, capsys):
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--out",
                        str(tmp_path / "m.csv"), "--guideline", "ema-007", "-q"], capsys)
    assert code == 2 and "ema-007" in err
    assert list(tmp_path.iterdir()) == []


def test_a_guideline_that_cannot_read_the_release_leaves_no_release(tmp_path, capsys):
    """EMA 0070's measure reads released keys, not masked numbers: an error, and the
    release and key just written are removed (no release without its certificate)."""
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--out",
                        str(tmp_path / "m.csv"), "--guideline", "ema-0070", "-q"], capsys)
    assert code == 2 and "does not apply" in err
    assert list(tmp_path.iterdir()) == []


def test_a_profile_file_is_hashed_and_read_from_the_certificates_folder(tmp_path, capsys,
                                                                         monkeypatch):
    folder = tmp_path / "bundle"
    folder.mkdir()
    _small_csv(folder)
    profile = folder / "mine.toml"
    shipped = Path(__file__).resolve().parents[1] / "sdceval" / "guidelines" / "el-emam-5.toml"
    profile.write_text(shipped.read_text().replace('name = "el-emam-5"', 'name = "mine"'))
    monkeypatch.chdir(folder)   # given relative to the working folder
    _, cert = anonymize(folder, capsys, "--qi", "age,zip", "--param", "k=5",
                        "--guideline", "mine.toml", data="d.csv", method="mondrian")
    doc = json.loads(cert.read_text())
    assert {"role": "guideline", "path": "mine.toml", "sha256": sha(profile)} in doc["files"]
    assert doc["readings"]["verdicts"][0]["residual"]["guideline"] == "mine"
    monkeypatch.chdir(tmp_path)  # verify from elsewhere: paths from the certificate
    code, out, err = verify(cert, capsys)
    assert code == 0, out + err
    profile.write_text(profile.read_text().replace("threshold = 0.2", "threshold = 0.05"))
    code, out, _ = verify(cert, capsys)
    got = lines_of(out)
    assert code == 1 and got["guideline sha256 mine.toml"] == "MISMATCH"
    assert got["verdict mine.toml"] == "MISMATCH"   # 0.05: classes of 5 no longer pass


@pytest.mark.browser
def test_the_anonymization_report_renders_in_a_browser(tmp_path, capsys):
    """Headless Chromium: no console error, nothing loaded from elsewhere, the
    template's fields and the certificate's hashes visible."""
    from browser import check_page, require_chromium
    require_chromium()
    data = _small_csv(tmp_path)
    report = tmp_path / "r.html"
    out, _ = anonymize(tmp_path, capsys, "--qi", "age,zip", "--param", "k=12",
                       "--guideline", "ema-0070", "--report", str(report),
                       data=data, method="mondrian")
    expect = {"#anonymization": ["Identifiers and technique per variable", "Attacker model",
                                 "Threshold and justification", "Initial and residual risk",
                                 "Utility impact", "minimum class size 12", "journalist"],
              "#anonymization table": ["age", "zip", "generalized"],
              "#certificate": ["SHA-256", sha(out), "ema-0070", "PASS"]}
    shot = tmp_path / "anonymization.png"
    result = check_page(report, expect=expect, screenshot=shot, height=2400)
    assert result.ok, str(result)
    assert result.external_resources == []
    assert shot.stat().st_size > 20_000


def test_a_population_table_is_hashed_and_moves_with_the_certificate(tmp_path, capsys):
    """A guideline's population table (a file-valued setting) is recorded by its path
    from the certificate's folder and hashed; the verdict names it so, and reads the
    same once the folder has moved."""
    folder = tmp_path / "bundle"
    folder.mkdir()
    data = _small_csv(folder)
    frame = pd.read_csv(data)
    pop = frame.groupby(["age", "zip"]).size().reset_index(name="count")
    pop["count"] *= 20
    pop.to_csv(folder / "pop.csv", index=False)
    _, cert = anonymize(folder, capsys, "--qi", "age,zip", "--param", "k=5",
                        "--guideline", f"ema-0070:population={folder / 'pop.csv'}",
                        data=data, method="mondrian")
    doc = json.loads(cert.read_text())
    assert {"role": "population", "path": "pop.csv",
            "sha256": sha(folder / "pop.csv")} in doc["files"]
    verdict = doc["readings"]["verdicts"][0]
    assert verdict["overrides"] == {"population": "pop.csv"}
    assert str(tmp_path) not in json.dumps(verdict)
    assert verdict["residual"]["assumptions"]["sampling_fraction"] == 0.05
    folder.rename(tmp_path / "moved")
    code, out, err = verify(tmp_path / "moved" / cert.name, capsys)
    assert code == 0, out + err
    pop["count"] *= 2
    pop.to_csv(tmp_path / "moved" / "pop.csv", index=False)
    code, out, _ = verify(tmp_path / "moved" / cert.name, capsys)
    got = lines_of(out)
    assert code == 1 and got["population sha256 pop.csv"] == "MISMATCH"
    assert got["verdict ema-0070"] == "MISMATCH"
