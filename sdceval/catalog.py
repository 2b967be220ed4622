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
    Returns the names loaded.  A plugin that fails to import or register is a
    `SdcevalError` naming it and what it did: an exception, an `SdcevalError` of its own
    (a registration refused), or ``sys.exit`` (``SystemExit``, which would otherwise end
    the command silently with the plugin's exit code); Ctrl-C is left to propagate.  A
    plugin file that failed leaves no half-imported module behind."""
    spec = os.environ.get(PLUGINS_ENV, "") if spec is None else spec
    out = []
    for item in (s.strip() for s in spec.split(",")):
        if not item or item in _loaded:
            continue
        try:
            _import_plugin(item)
        # a user's module: whatever it did, reported with its name, as one line
        except SystemExit as e:
            raise SdcevalError(f"plugin {item!r} exited while being imported (sys.exit"
                               f"({e.code!r})): a plugin module only defines and registers; "
                               f"remove the exit, or the plugin from ${PLUGINS_ENV} / "
                               "--plugin") from None
        except SdcevalError as e:
            raise SdcevalError(f"plugin {item!r}: {e}") from None
        except Exception as e:
            raise SdcevalError(f"plugin {item!r} could not be imported "
                               f"({type(e).__name__}: {e}); check ${PLUGINS_ENV} or "
                               "--plugin") from None
        _loaded.add(item)
        out.append(item)
    return out


def _import_plugin(item: str) -> None:
    """Import one plugin: a module name, or a ``.py`` file as module
    ``sdceval_plugin_STEM``, which is dropped again if its import fails in any way."""
    if not (item.endswith(".py") or os.sep in item):
        importlib.import_module(item)  # which drops a module that failed itself
        return
    path = Path(item).expanduser().resolve()
    name = f"sdceval_plugin_{path.stem}"
    mod_spec = importlib.util.spec_from_file_location(name, path)
    if mod_spec is None or not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[name] = module
    try:
        mod_spec.loader.exec_module(module)
    except BaseException:  # even Ctrl-C: nothing half-imported stays
        sys.modules.pop(name, None)
        raise


def get_method(name: str) -> MethodSpec:
    """The registered method ``name`` (unknown names get a suggestion), or the
    whole-file strategy its text composes (``"noise+recode:level=2"``, built and
    registered the first time: `sdceval.methods.strategy.strategy_spec`)."""
    if isinstance(name, str) and name not in METHODS and "+" in name:
        from sdceval.methods.strategy import strategy_spec
        return strategy_spec(name)
    return METHODS.get_spec(name)


def get_measure(name: str) -> MeasureSpec:
    """The registered measure ``name`` (unknown names get a suggestion)."""
    return MEASURES.get_spec(name)


load_plugins()

__all__ = ["METHODS", "MEASURES", "PLUGINS_ENV", "get_method", "get_measure", "load_plugins"]
