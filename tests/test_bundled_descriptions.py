"""The record counts the bundled data sets' descriptions state (``sdceval list
datasets``, the app's data page) are the counts they load with."""
from __future__ import annotations

import re

import pytest

from sdceval.core.loaders import BUNDLED, load_dataset

COUNT = re.compile(r"(\d+) (?:records|persons)")


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_the_stated_record_count_is_the_loaded_one(name):
    stated = COUNT.search(BUNDLED[name].description)
    if stated is None:
        pytest.skip(f"{name}: its description states no record count")
    assert load_dataset(name).n == int(stated.group(1)), BUNDLED[name].description
