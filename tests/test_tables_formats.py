"""Statistics packages' files (SPSS, Stata, SAS) read through pyreadstat when it is
installed (issue 31: the app's Data page), refused naming the extra when it is not."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdceval.core import tables
from sdceval.core.errors import SdcevalError
from sdceval.core.loaders import open_dataset
from sdceval.core.tables import load_table

pyreadstat = pytest.importorskip("pyreadstat")


def _people() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 90, 40).astype(float),
                         "sex": rng.choice(["f", "m"], 40),
                         "income": np.round(rng.normal(3000, 500, 40), 1)})


@pytest.mark.parametrize("suffix,write", [(".sav", "write_sav"), (".dta", "write_dta"),
                                          (".xpt", "write_xport")])
def test_statistics_package_files_are_read_through_pyreadstat(tmp_path, suffix, write):
    df = _people()
    df.loc[3, "income"] = np.nan
    path = tmp_path / f"people{suffix}"
    getattr(pyreadstat, write)(df, str(path))
    got = load_table(path)
    assert list(got.columns) == ["age", "sex", "income"]
    assert len(got) == 40 and int(got["income"].isna().sum()) == 1
    np.testing.assert_allclose(got["age"].to_numpy(float), df["age"].to_numpy(float))
    ds = open_dataset(str(path), missing="drop")
    assert ds.schema.numeric == ["age", "income"]


def test_codes_read_as_text_lose_their_float_point(tmp_path):
    df = pd.DataFrame({"region": [1.0, 2.0, np.nan, 1.0], "x": [1.5, 2.5, 3.5, 4.5]})
    path = tmp_path / "codes.sav"
    pyreadstat.write_sav(df, str(path))
    got = load_table(path, text=["region"])
    assert got["region"].tolist()[:2] == ["1", "2"] and pd.isna(got["region"][2])


def test_a_broken_file_names_the_format(tmp_path):
    path = tmp_path / "broken.sav"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(SdcevalError, match=r"broken\.sav.*SPSS"):
        load_table(path)


def test_without_pyreadstat_they_are_refused_naming_the_extra(tmp_path, monkeypatch):
    path = tmp_path / "people.dta"
    pyreadstat.write_dta(_people(), str(path))
    monkeypatch.setattr(tables, "_pyreadstat", lambda: None)
    with pytest.raises(SdcevalError, match=r"Stata.*sdceval\[formats\]"):
        load_table(path)
