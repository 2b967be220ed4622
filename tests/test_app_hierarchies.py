"""The Roles page's hierarchies (issue 31: "the hierarchy of each quasi-identifier shown
and editable through the builders"): each QI's tree previewed, changed through the
intervals / masking / grouping / flat builders, written as a hierarchy file named in the
schema, used by the run, refused beside its field when a builder does not fit."""
from __future__ import annotations

import re
import stat
import tomllib

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("starlette")
pytest.importorskip("multipart")

from test_app_server import _client, _csv, _post, _upload  # noqa: E402

from sdceval.core.loaders import open_dataset  # noqa: E402


def _patients(n=60) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"age": rng.integers(18, 90, n),
                         "zip": [f"{z:05d}" for z in rng.integers(2100, 2200, n)],
                         "ward": rng.choice(["icu", "cardiology", "a&e", "oncology", "maternity", "surgery",
                                     "geriatrics", "paediatrics", "neurology"], n),
                         "cost": np.round(rng.normal(3000, 400, n), 1)})


def _roles(client):
    form = {"role_age": "qi", "role_zip": "qi", "role_ward": "qi", "role_cost": "numeric",
            "kind_zip": "categorical", "missing": "refuse", "next": "hierarchies"}
    return _post(client, "/roles", data=form)


def _section(page: str, column: str) -> str:
    m = re.search(rf"<h3>{column}</h3>(.*?)</section>", page, re.DOTALL)
    assert m, page[-3000:]
    return m.group(1)


def test_each_quasi_identifier_shows_its_hierarchy_after_the_roles_are_saved(tmp_path):
    client = _client(tmp_path)
    _upload(client, "patients.csv", _csv(_patients()))
    before = client.get("/roles").text
    assert "Save the roles to see" in before
    page = _roles(client).text
    age, zipc = _section(page, "age"), _section(page, "zip")
    assert "built from the data: intervals" in age and "built from the data: masking" in zipc
    # nodes per level end in the root, and the preview rows hold the levels' labels
    assert re.search(r"nodes per level: \d+( → \d+)+ → 1", age)
    assert "0210*" in zipc or "021**" in zipc
    assert 'name="hier_ward"' in page


def test_a_builder_chosen_is_written_named_in_the_schema_and_used(tmp_path):
    client = _client(tmp_path)
    _upload(client, "patients.csv", _csv(_patients()))
    _roles(client)
    r = _post(client, "/hierarchies", data={"hier_age": "intervals", "levels_age": "2",
                                            "hier_zip": "grouping", "hier_ward": "flat"})
    assert r.status_code == 200, r.text[:2000]
    folder = tmp_path / "app"
    schema = tomllib.loads((folder / "schema.toml").read_text())
    files = schema["hierarchies"]
    assert set(files) == {"age", "zip", "ward"} and files["age"]["numeric"] is True
    for e in files.values():
        assert stat.S_IMODE(__import__("os").stat(e["file"]).st_mode) == 0o600
    ds = open_dataset(str(next((folder / "uploads").rglob("patients.csv"))),
                      schema_file=str(folder / "schema.toml"))
    assert ds.hierarchy("age").height == 3          # 2 interval levels, then *
    assert ds.hierarchy("ward").height == 1         # flat
    assert ds.hierarchy("zip").builder is None      # read from the file written
    page = r.text
    assert re.search(r'id="hier_age">.*?<option value="intervals" selected', page, re.DOTALL)
    assert "nodes per level" in _section(page, "ward") and "→ 1" in _section(page, "ward")
    # the run's configuration names the schema snapshot that names the files
    _post(client, "/goal", data={"methods": "mondrian,generalization", "target_kind":
                                 "default", "repeats": "1"})
    # saving the roles again keeps the chosen trees for the columns still QIs
    _roles(client)
    again = tomllib.loads((folder / "schema.toml").read_text())
    assert again["hierarchies"]["ward"] == files["ward"]


def test_a_builder_that_does_not_fit_is_refused_beside_its_field(tmp_path):
    client = _client(tmp_path)
    _upload(client, "patients.csv", _csv(_patients()))
    _roles(client)
    folder = tmp_path / "app"
    before = (folder / "schema.toml").read_text()
    r = _post(client, "/hierarchies", data={"hier_ward": "masking", "hier_zip": "intervals"})
    assert r.status_code == 400
    assert re.search(r'id="error-hier_ward"[^>]*>[^<]*masking', r.text), r.text[-3000:]
    assert re.search(r'id="error-hier_zip"[^>]*>[^<]*categorical', r.text)
    # the refused form is shown as sent; the schema in force is unchanged
    assert re.search(r'id="hier_ward">.*?<option value="masking" selected', r.text, re.DOTALL)
    assert (folder / "schema.toml").read_text() == before
    bad = _post(client, "/hierarchies", data={"hier_age": "intervals", "levels_age": "0"})
    assert bad.status_code == 400 and "from 1 to 8" in bad.text
