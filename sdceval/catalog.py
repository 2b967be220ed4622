"""Every registered method and measure: look-ups by name, and the user's plugins.

The registries are defined in `sdceval.core.registry`; the method and measure modules
fill them when imported.  This module imports them all, so that `get_method` and
`get_measure` see every plugin; it is the layer above methods and measures that
comparison, experiments and the CLI import from (SPEC §1).

Plugins (issue 18).  A user's own methods, measures, privacy models, lattice objectives
or property vectors live in their own modules, which register with the same decorators
sdceval uses.  Python users import their module; for the command line and for worker
processes, the environment variable ``SDCEVAL_PLUGINS`` (or the CLI's ``--plugin``,
which sets it for every child process) names them — module names or ``.py`` paths,
separated by commas — and this module imports them once, after sdceval's own.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

import sdceval.measures  # noqa: F401  (registers the measures)
import sdceval.methods  # noqa: F401  (registers the methods)
from sdceval.core.errors import SdcevalError
from sdceval.core.registry import MEASURES, METHODS, MeasureSpec, MethodSpec

PLUGINS_ENV = "SDCEVAL_PLUGINS"
_loaded: set[str] = set()


def load_plugins(spec: str | None = None) -> list[str]:
    """Import the plugin modules named in ``spec`` (default: ``$SDCEVAL_PLUGINS``):
    module names or paths of ``.py`` files, comma-separated; each is imported once.
    Returns the names loaded.  A plugin that fails to import is a `SdcevalError`
    naming it and the error."""
    spec = os.environ.get(PLUGINS_ENV, "") if spec is None else spec
    out = []
    for item in (s.strip() for s in spec.split(",")):
        if not item or item in _loaded:
            continue
        try:
            if item.endswith(".py") or os.sep in item:
                path = Path(item).expanduser().resolve()
                name = f"sdceval_plugin_{path.stem}"
                mod_spec = importlib.util.spec_from_file_location(name, path)
                if mod_spec is None or not path.is_file():
                    raise FileNotFoundError(f"no such file: {path}")
                module = importlib.util.module_from_spec(mod_spec)
                sys.modules[name] = module
                mod_spec.loader.exec_module(module)
            else:
                importlib.import_module(item)
        except SdcevalError:
            raise
        except Exception as e:  # a user's module: any error, reported with its name
            raise SdcevalError(f"plugin {item!r} could not be imported "
                               f"({type(e).__name__}: {e}); check ${PLUGINS_ENV} or "
                               "--plugin") from None
        _loaded.add(item)
        out.append(item)
    return out


def get_method(name: str) -> MethodSpec:
    """The registered method ``name`` (unknown names get a suggestion)."""
    return METHODS.get_spec(name)


def get_measure(name: str) -> MeasureSpec:
    """The registered measure ``name`` (unknown names get a suggestion)."""
    return MEASURES.get_spec(name)


load_plugins()

__all__ = ["METHODS", "MEASURES", "PLUGINS_ENV", "get_method", "get_measure", "load_plugins"]
