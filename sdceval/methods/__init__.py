"""Anonymization methods.  Each module registers its methods in `sdceval.registry`."""
from importlib import import_module

# one module per concept; modules are imported for their registrations
_MODULES = ["microaggregation", "noise", "swapping",
            "generalization", "mondrian", "bucketization"]

for _m in _MODULES:
    try:
        import_module(f"{__name__}.{_m}")
    except ModuleNotFoundError as exc:  # a module not written yet in this checkout
        if exc.name != f"{__name__}.{_m}":
            raise
