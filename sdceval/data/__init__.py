"""Bundled data files (CASC Census, EIA, UCI Adult); read via importlib.resources."""
