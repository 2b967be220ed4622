"""``sdceval anonymize``: apply one method to a data set and write the release.

The release file's rows are in a random order and a private key file beside it
(``masked.csv`` -> ``masked.csv.private-key.csv``) says which record each row protects, for
``sdceval evaluate``; ``--keep-order`` writes record order and no key (for analysis
only).  A method with public parameters (PRAM's transition matrices) gets a public file
beside the release too (``masked.csv.method.json``, `sdceval.core.release_public`).  See
`sdceval.core.release_order`.  With ``--keep``, re-identification is measured with and
without the kept columns after the release is written, and a warning names the
kept columns that raise it and both figures (`sdceval.measures._kept_keys`).
"""
from __future__ import annotations

import time
import warnings

from sdceval.cli.common import (_add_command, _add_data_options, _add_model_option, _dataset,
                                _say)
from sdceval.core.errors import SdcevalError, plain


def add_parser(sub):
    s = _add_command(sub, "anonymize", "apply one method and write the release",
                     cmd_anonymize)
    _add_data_options(s, keep=True)
    s.add_argument("--method", required=True, help="method name (sdceval list methods)")
    s.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="method parameter, repeatable (e.g. --param k=5); "
                        "default: the method's defaults")
    _add_model_option(s)
    s.add_argument("--seed", type=int, default=0, help="seed of the random methods")
    s.add_argument("--out", required=True,
                   help="output CSV (Parquet for .parquet; never an input file), rows "
                        "in a random order; its private key goes beside it (OUT.csv -> "
                        "OUT.csv.private-key.csv: which record each row protects; keep "
                        "it, never publish it; never written over another file)")
    order = s.add_argument_group("row order")
    order.add_argument("--shuffle-seed", type=int, metavar="N",
                       help="seed of the random row order, for a reproducible file; keep "
                            "it as private as the key: with it the order can be undone "
                            "(default: a fresh seed from the operating system, recorded "
                            "in the key; --seed is never used, as it is often published)")
    order.add_argument("--keep-order", action="store_true",
                       help="write the rows in record order (row i protects record i) and "
                            "no key: the order links rows to records, so such a file is "
                            "for analysis only, NOT to publish")
    return s


#: the roles a method of each release kind neither protects nor reads: their columns are
#: dropped from its release (`sdceval.core.release.publishable_columns`), so missing
#: values there do not stop it (issue 22 item 16; generalization reads the label for the
#: classification metric, so a generalized release keeps it)
UNUSED_BY_KIND = {"perturbative": ("qi", "sensitive", "label"),
                  "generalized": ("numeric",),
                  "bucketized": ("numeric", "label"),
                  "composite": ("label",)}


def cmd_anonymize(args) -> int:
    from sdceval.catalog import METHODS, get_method
    from sdceval.core.release_order import write_release
    from sdceval.core.registry import parse_assignments
    spec = get_method(args.method)
    ds = _dataset(args, unused_roles=UNUSED_BY_KIND[spec.kind], user=spec.name)
    params = parse_assignments(args.param)
    if args.model:
        if not any(p.name == "models" for p in spec.params):
            takers = [m.name for m in METHODS.all() if any(p.name == "models"
                                                           for p in m.params)]
            raise SdcevalError(f"--model: method {spec.name!r} enforces no privacy model; "
                               f"--model applies to {', '.join(takers)}")
        params["models"] = list(args.model)
    t0 = time.perf_counter()
    rel = spec.apply(ds, params, seed=args.seed)
    dt = time.perf_counter() - t0
    summary = rel.summary()
    knob = spec.tunable_for(rel.params)
    shown = {k: plain(v) for k, v in rel.params.items()
             if k in params or k in (knob.name, knob.carrier)}
    _say(args, f"{spec.name} {shown} on {ds.name} ({ds.n} records) in {dt:.2f} s"
         + (f"; {summary['classes']} classes" if "classes" in summary else "")
         + (f"; {summary['suppressed']} suppressed" if summary.get("suppressed") else ""))
    if rel.dropped:
        _say(args, f"dropped {len(rel.dropped)} column(s) that {spec.name} does not protect: "
                   f"{', '.join(map(str, rel.dropped))} (publish a column unchanged with "
                   "--keep or 'passthrough' in the schema)")
    for w in rel.info.get("warnings", []):
        warnings.warn(w)  # main() prints each distinct warning once
    _say(args, f"writing {args.out}")
    out, key = write_release(rel, args.out, dataset=ds, seed=args.shuffle_seed,
                             keep_order=args.keep_order)
    if key is None:
        _say(args, f"wrote {out} in record order (row i protects record i): for analysis "
                   "only, do not publish it")
    else:
        _say(args, f"wrote {out} (rows in random order) and its key {key}: PRIVATE, do not "
                   "publish the key (evaluate finds it beside the release)")
    from sdceval.core.release_public import public_parameters, public_path_for
    if public_parameters(rel) is not None:
        _say(args, f"wrote its public file {public_path_for(out)}: the method's public "
                   "parameters (PRAM's keys and transition matrices), to publish with the "
                   "release (evaluate finds it beside the release)")
    # what was done to each column, since a method publishes only what it protects
    # (issue 28 item 1: every release states it)
    from sdceval.core.treatment import column_treatment, treatment_summary
    _say(args, f"columns: {treatment_summary(column_treatment(ds, rel))}")
    # kept columns raising re-identification: a warning with both figures (main()
    # prints it after the progress messages; nothing to do without kept columns)
    from sdceval.measures._kept_keys import warn
    warn(ds, rel, seed=args.seed)
    return 0
