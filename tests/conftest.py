import numpy as np
import pandas as pd
import pytest

from sdceval import Dataset, Schema


@pytest.fixture
def small_numeric():
    """A small numeric data set with correlated columns (seeded)."""
    rng = np.random.default_rng(12345)
    n = 300
    a = rng.normal(50, 10, n)
    frame = pd.DataFrame({"a": a, "b": 2 * a + rng.normal(0, 5, n),
                          "c": rng.gamma(2.0, 3.0, n), "name": [f"r{i}" for i in range(n)]})
    return Dataset(frame, Schema.from_roles(frame, numeric=["a", "b", "c"]), name="small")


def cli_run(args, capsys):
    """``sdceval -q ARGS`` in this process: exit code, stdout, stderr."""
    from sdceval.cli import main
    code = main(["-q", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def cli_error(args, capsys) -> str:
    """The one-line message of a command that must fail with exit code 2."""
    from sdceval.cli import EXIT_ERROR
    code, out, err = cli_run(args, capsys)
    assert code == EXIT_ERROR, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sdceval: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture(scope="session")
def adult_small():
    """The first 3 000 records of adult-train, four QIs, occupation sensitive."""
    import sdceval
    base = sdceval.load_dataset("adult-train")
    frame = base.frame.iloc[:3000].reset_index(drop=True)
    return Dataset(frame, base.schema.with_roles(
        qi=["age", "education", "marital-status", "sex"], sensitive="occupation"),
        name="adult-small")


def pytest_collection_modifyitems(config, items):
    """A test that needs a browser is slow too: the fast suite (-m "not slow") leaves
    headless Chromium to the full run (CI)."""
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.slow)
