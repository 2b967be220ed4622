"""The text forms of a comparison's measures and reference releases, parsed once:
``"mdav:k=5"`` (a method or measure and its parameters after a colon), a measure list
``"propensity:model=quadratic,emd"`` and the label of a measure variant.  Used by the
comparison's plan (`sdceval.compare.ranking`) and its constraints
(`sdceval.compare.constraints`)."""
from __future__ import annotations

from sdceval.catalog import get_measure
from sdceval.core.errors import SdcevalError
from sdceval.core.registry import parse_assignments


def parse_reference(text: str) -> tuple[str, dict]:
    """``"mdav:k=5"`` -> ``("mdav", {"k": "5"})``."""
    if ":" in text:
        name, rest = text.split(":", 1)
        return name.strip(), parse_assignments([p for p in rest.split(",") if p.strip()],
                                               "target")
    return text.strip(), {}


def measure_label(name: str, params: dict) -> str:
    """Column label of a measure variant: ``propensity`` or ``propensity(model=linear)``."""
    if not params:
        return name
    return f"{name}(" + ",".join(f"{k}={v}" for k, v in params.items()) + ")"


def parse_measure_list(text) -> dict[str, tuple[str, dict]]:
    """``"propensity:model=quadratic,emd"`` or a list -> ``{label: (name, params)}``.

    A measure's own parameters follow a colon; measures are separated by commas (a
    ``name=value`` item after a colon belongs to the preceding measure).  The same
    measure may appear with different parameters (each variant gets its own label)."""
    if isinstance(text, dict):
        if all(isinstance(v, tuple) for v in text.values()):
            return dict(text)  # already parsed
        return {measure_label(n, p): (n, dict(p)) for n, p in text.items()}
    items = text if isinstance(text, (list, tuple)) else str(text).split(",")
    parsed: list[tuple[str, dict]] = []
    for raw in items:
        item = str(raw).strip()
        if not item:
            continue
        if "=" in item and ":" not in item and parsed:
            parsed[-1][1].update(parse_assignments([item], "measure parameter"))
            continue
        name, params = parse_reference(item)
        get_measure(name)  # unknown names fail here, with a suggestion
        parsed.append((name, params))
    if not parsed:
        raise SdcevalError("no measure given")
    return {measure_label(n, p): (n, p) for n, p in parsed}


__all__ = ["measure_label", "parse_measure_list", "parse_reference"]
