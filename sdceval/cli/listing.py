"""``sdceval list methods|measures|models|objectives|properties|rules|jobs|datasets``:
every registry's entries (with their typed parameters) and the bundled data sets."""
from __future__ import annotations

import os

from sdceval.cli.common import PLUGINS_ENV, _add_command


def add_parser(sub):
    s = _add_command(sub, "list", "list methods, measures, privacy models, lattice "
                     "objectives, property vectors, suppression rules, job kinds or bundled "
                     "data sets", cmd_list)
    s.add_argument("what", choices=list(LISTS), help="what to list")
    return s


#: ``sdceval list WHAT``: the registry's plural name and the module that fills it; each
#: list imports only its own modules (issue 27 item 23: ``list methods`` loads neither
#: pandas nor the measures; the user's plugins, which may register in any registry,
#: are loaded through `sdceval.catalog` only when ``$SDCEVAL_PLUGINS`` names some)
LISTS = {"methods": ("methods", "sdceval.methods"),
         "measures": ("measures", "sdceval.measures"),
         "models": ("privacy models", "sdceval.privacy"),
         "objectives": ("lattice objectives", "sdceval.lattice.objectives"),
         "properties": ("property vectors", "sdceval.vectors.properties"),
         "rules": ("suppression rules", "sdceval.lattice.suppression"),
         "jobs": ("job kinds", "sdceval.experiments"),
         "datasets": (None, None)}


def direction_words(spec) -> str:
    """What a larger value of a measure means, in words (``sdceval list measures``),
    from its registered ``direction`` and category.

    linkage_risk is a distance (records far from their originals are hard to link), so
    larger means less risk; utility and information-loss measures are losses; privacy
    checks report the model's parameter the release attains (larger k or ℓ means more
    protection, larger t or δ less)."""
    lower_better = spec.direction == "lower_is_better"
    if spec.category == "risk":
        if lower_better:
            return "larger = more risk"
        return ("larger distance = less risk" if "distance" in spec.description
                else "larger = less risk")
    if spec.category in ("utility", "information_loss"):
        return f"larger = {'more' if lower_better else 'less'} loss"
    if spec.category == "privacy":
        return f"larger = {'less' if lower_better else 'more'} protection"
    return "smaller = better" if lower_better else "larger = better"


def _param_line(p) -> str:
    extra = []
    if p.protection:
        extra.append(f"protection {p.protection}" + (f" when {dict(p.when)}" if p.when else ""))
    if p.unit:
        extra.append(f"unit: {p.unit}")
    if p.grid:
        extra.append("grid " + ",".join(f"{g:g}" if isinstance(g, float) else str(g)
                                        for g in p.grid))
    return (f"    {p.name:18s} {p.type_name:5s} {p.describe_bounds():18s} default "
            f"{p.default!s:8s} {p.description}" + (f" ({'; '.join(extra)})" if extra else ""))


def _headline(what: str, entry) -> str:
    """One line per entry: its name, what kind it is, what it does."""
    if what == "methods":
        return (f"{entry.name:22s} [{entry.family}{', random' if entry.random else ''}] "
                f"{entry.description}")
    if what == "measures":
        return f"{entry.name:20s} [{entry.category}; {direction_words(entry)}] {entry.description}"
    if what == "models":
        spec = entry.spec()
        flags = [f"threshold {entry.parameter}",
                 "monotone with generalization" if entry.monotone_generalization else "",
                 "monotone with suppression" if entry.monotone_suppression else "",
                 f"check {entry.check_name}"]
        text = spec["description"]
        if spec["title"] and not text.lower().startswith(spec["title"].lower()):
            text = f"{spec['title']}: {text}"
        return f"{entry.name:8s} [{', '.join(f for f in flags if f)}] {text}"
    if what == "objectives":
        goal = {"min": "minimized", "max": "maximized", None: "reported"}[entry.goal]
        return f"{entry.name:18s} [{goal}] {entry.description}"
    if what == "properties":
        better = "higher" if entry.higher_is_better else "lower"
        return f"{entry.name:18s} [{better} is better] {entry.description}"
    return f"{entry.name:10s} {entry.description}"


def cmd_list(args) -> int:
    import importlib
    plural, module = LISTS[args.what]
    if plural is None:
        from sdceval.core.loaders import BUNDLED
        for info in BUNDLED.values():
            print(f"{info.name:12s} {info.description}")
        return 0
    importlib.import_module(module)
    if os.environ.get(PLUGINS_ENV):
        from sdceval.catalog import load_plugins
        load_plugins()
    from sdceval.core.registry import REGISTRIES
    registry = REGISTRIES[plural]
    entries = registry.all() if args.what in ("methods", "measures") else \
        [registry[n] for n in registry.names()]
    for entry in entries:
        print(_headline(args.what, entry))
        for p in getattr(entry, "params", ()):
            print(_param_line(p))
    return 0
