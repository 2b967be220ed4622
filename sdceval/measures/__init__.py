"""Risk, utility and information-loss measures.  Each module registers its measures."""
from importlib import import_module

_MODULES = ["linkage", "propensity", "emd", "il1s", "information_loss",
            "divergence", "attribute_disclosure", "utility_loss", "queries",
            "privacy_checks", "property_vectors"]

for _m in _MODULES:
    try:
        import_module(f"{__name__}.{_m}")
    except ModuleNotFoundError as exc:  # a module not written yet in this checkout
        if exc.name != f"{__name__}.{_m}":
            raise
