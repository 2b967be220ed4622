"""``sdceval anonymize``: apply one method to a data set and write the release.

The release file's rows are in a random order and a private key file beside it
(``masked.csv`` -> ``masked.csv.private-key.csv``) says which record each row protects, for
``sdceval evaluate``; ``--keep-order`` writes record order and no key (for analysis
only).  A method with public parameters (PRAM's transition matrices) gets a public file
beside the release too (``masked.csv.method.json``, `sdceval.core.release_public`).  See
`sdceval.core.release_order`.  With ``--keep``, re-identification is measured with and
without the kept columns after the release is written, and a warning names the
kept columns that raise it and both figures (`sdceval.measures._kept_keys`).

A synthetic method (``cart_synthesis``, ``gaussian_copula``, ``dp_histogram``: new
records, no record correspondence, issue 32) writes its file with no key (no row is any
record's: the output says so) and its public file, which marks it synthetic and holds a
DP method's budget; ``--shuffle-seed`` and ``--keep-order`` do not apply and are
refused.  Its columns are "synthesized"; the kept-columns warning does not apply (it
compares record-linkage risks); a ``--guideline`` reads a record-linkage risk, so its
verdict on the release is "not checked", with the reason, never PASS.  ``dp_histogram``
draws OpenDP's noise unless ``--param noise=seeded``, and the output says which (seeded
noise is reproducible and not private: a warning).
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
    audit = s.add_argument_group("audit")
    audit.add_argument("--guideline", action="append", default=[], metavar="NAME",
                       help="a guideline profile to check the release against, "
                            "repeatable: NAME (sdceval check --list) or a profile file, "
                            "with check's settings after a colon (ema-0070:"
                            "sampling_fraction=0.1, ema-0070:population=pop.csv); its "
                            "verdicts on the original and on the release go into the "
                            "certificate (default: none)")
    audit.add_argument("--report", metavar="FILE",
                       help="write an HTML anonymization report (the fields of the EMA "
                            "Policy 0070 / Health Canada template) and the certificate "
                            "(default: none)")
    audit.add_argument("--report-measures", default=DEFAULT_REPORT_MEASURES,
                       metavar="LIST",
                       help="the utility measures of --report (those that apply to the "
                            "release)")
    return s


#: the utility measures of ``--report``: those of them that apply to the release are
#: computed (cheap on every kind of release)
DEFAULT_REPORT_MEASURES = "propensity,il1s,discernibility,avg_class_size"

#: the roles a method of each release kind neither protects nor reads: their columns are
#: dropped from its release (`sdceval.core.release.publishable_columns`), so missing
#: values there do not stop it (issue 22 item 16; generalization reads the label for the
#: classification metric, so a generalized release keeps it)
UNUSED_BY_KIND = {"perturbative": ("qi", "sensitive", "label"),
                  "generalized": ("numeric",),
                  "bucketized": ("numeric", "label"),
                  "composite": ("label",),
                  # a synthetic release synthesizes every column the schema uses
                  "synthetic": ()}


def cmd_anonymize(args) -> int:
    from sdceval.catalog import METHODS, get_method
    from sdceval.core.release_order import write_release
    from sdceval.core.registry import parse_assignments
    spec = get_method(args.method)
    synthetic = spec.kind == "synthetic"
    if synthetic and (args.shuffle_seed is not None or args.keep_order):
        option = "--shuffle-seed" if args.shuffle_seed is not None else "--keep-order"
        raise SdcevalError(
            f"{option}: {spec.name!r} makes a synthetic release (new records, no record "
            "correspondence): its rows are in the order the method drew them and it has "
            f"no key, so there is no row order to choose; drop {option}")
    ds = _dataset(args, unused_roles=UNUSED_BY_KIND[spec.kind], user=spec.name)
    params = parse_assignments(args.param)
    if args.model:
        if not any(p.name == "models" for p in spec.params):
            takers = [m.name for m in METHODS.all() if any(p.name == "models"
                                                           for p in m.params)]
            raise SdcevalError(f"--model: method {spec.name!r} enforces no privacy model; "
                               f"--model applies to {', '.join(takers)}")
        params["models"] = list(args.model)
    # the certificate's and the report's names and the guidelines, before any work
    from sdceval.experiments.certificate import (certificate_path_for,
                                                 check_certificate_slot,
                                                 remove_stale_certificate)
    cert_path = certificate_path_for(args.out)
    guidelines = _guidelines(args.guideline, cert_path)
    check_certificate_slot(args.out, cert_path)
    _check_report(args, ds, cert_path)
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
    _say_noise(args, rel)
    remove_stale_certificate(cert_path)  # of the release about to be replaced
    _say(args, f"writing {args.out}")
    out, key = write_release(rel, args.out, dataset=ds, seed=args.shuffle_seed,
                             keep_order=args.keep_order)
    if not rel.aligned:
        _say(args, f"wrote {out}: {rel.n} synthetic records, no record correspondence "
                   "(no row is the release of a record), so there is no private key "
                   "and no row order to undo")
    elif key is None:
        _say(args, f"wrote {out} in record order (row i protects record i): for analysis "
                   "only, do not publish it")
    else:
        _say(args, f"wrote {out} (rows in random order) and its key {key}: PRIVATE, do not "
                   "publish the key (evaluate finds it beside the release)")
    from sdceval.core.release_public import public_parameters, public_path_for
    if public_parameters(rel) is not None:
        what = ("the method's public parameters (PRAM's keys and transition matrices)"
                if rel.aligned else "its kind (synthetic) and the method's parameters"
                + (", DP budget and noise source" if "dp" in rel.info else ""))
        _say(args, f"wrote its public file {public_path_for(out)}: {what}, to publish "
                   "with the release (evaluate finds it beside the release)")
    # what was done to each column, since a method publishes only what it protects
    # (issue 28 item 1: every release states it)
    from sdceval.core.treatment import column_treatment, treatment_summary
    _say(args, f"columns: {treatment_summary(column_treatment(ds, rel))}")
    # kept columns raising re-identification: a warning with both figures (main()
    # prints it after the progress messages; nothing to do without kept columns)
    if rel.aligned:  # it compares record-linkage risks, which a synthetic release lacks
        from sdceval.measures._kept_keys import warn
        warn(ds, rel, seed=args.seed)
    try:
        _certify(args, ds, spec, rel, params, out, key, cert_path, guidelines)
    except BaseException:
        # a release is never left without its certificate: a guideline that cannot be
        # read on it (or an interrupt) removes the files just written
        for p in (out, key, public_path_for(out) if public_parameters(rel) else None,
                  cert_path):
            if p is not None:
                p.unlink(missing_ok=True)
        raise
    return 0


def _say_noise(args, rel) -> None:
    """A DP release's noise source and budget in one line; seeded noise (reproducible,
    not private) as a warning too (`sdceval.methods.dp_histogram`)."""
    dp = rel.info.get("dp")
    if not dp:
        return
    budget = f"epsilon = {plain(dp.get('epsilon'))}, delta = {plain(dp.get('delta'))}"
    if dp.get("private"):
        _say(args, f"noise: OpenDP's secure generator ({budget}, {dp.get('neighbouring')}): "
                   "a differentially private release, not reproducible")
    else:
        _say(args, f"noise: drawn from the seed ({budget} as a budget)")
        warnings.warn(f"{rel.method}: noise={dp.get('noise')}: the release is not private: "
                      + str(dp.get("warning") or "the noise can be redrawn from the seed"))
    for leak in dp.get("leaks") or ():
        warnings.warn(f"{rel.method}: stated leak: {leak}")


def _check_report(args, ds, cert_path) -> None:
    """``--report`` where it cannot be written, or at the name of the release, its key,
    its certificate or an input file, and a bad ``--report-measures``: an error before
    anything is written."""
    if not args.report:
        return
    from pathlib import Path

    from sdceval.core.fileio import check_output, protected
    from sdceval.core.release_order import key_path_for
    check_output(args.report)
    from sdceval.catalog import get_measure
    from sdceval.compare.measure_text import parse_measure_list
    for name, params in parse_measure_list(args.report_measures).values():
        get_measure(name).resolve(params)  # a bad name or parameter: an error now
    taken = {Path(p).resolve() for p in (args.out, key_path_for(args.out), cert_path)}
    if Path(args.report).resolve() in taken | set(protected()):
        raise SdcevalError(f"--report {args.report!r} is the release, its key, its "
                           "certificate or an input file; choose another report file")


def _guidelines(texts, cert_path) -> list[dict]:
    """``--guideline NAME[:param=value,...]`` as the certificate records them: a profile
    file (``.toml``) by its path from the certificate's folder, and hashed with the
    other files."""
    from pathlib import Path

    from sdceval.compare.measure_text import parse_reference
    from sdceval.core.fileio import protect
    from sdceval.experiments.certificate import FILE_SETTINGS, shown_path
    from sdceval.guidelines import get_profile
    out = []
    for text in texts:
        name, overrides = parse_reference(text)
        get_profile(name)  # an unknown name or a bad file: an error before any work
        for k in FILE_SETTINGS:  # population tables: by their path from the certificate
            if k in overrides:
                if not Path(overrides[k]).is_file():
                    raise SdcevalError(f"--guideline {text!r}: {k} file "
                                       f"{overrides[k]!r} does not exist")
                protect(overrides[k])
                overrides[k] = shown_path(overrides[k], cert_path.resolve().parent)
        if name.endswith(".toml"):
            protect(name)
            out.append({"guideline": shown_path(name, cert_path.resolve().parent),
                        "overrides": overrides, "file": True})
        else:
            out.append({"guideline": name, "overrides": overrides})
    return out


def _certify(args, ds, spec, rel, params, out, key, cert_path, guidelines) -> None:
    """The release's certificate beside it (`sdceval.experiments.certificate`): the
    release read back from its file with its key, so what is certified is the file as
    published; with ``--report``, the anonymization report."""
    from pathlib import Path

    from sdceval.cli.common import _read_options
    from sdceval.core.release_io import read_release
    from sdceval.core.release_public import public_path_for
    from sdceval.experiments.certificate import (build_certificate, shown_path,
                                                 write_certificate)
    read = _read_options(args, UNUSED_BY_KIND[spec.kind], spec.name)
    base = cert_path.resolve().parent
    is_file = Path(args.data).exists()
    if read["schema_file"]:
        read["schema_file"] = shown_path(read["schema_file"], base)
    configuration = {"command": "anonymize", "data": shown_path(args.data, base) if is_file
                     else args.data, "data_is_file": is_file, "read": read,
                     "method": spec.name, "params": params, "seed": args.seed,
                     "keep_order": bool(args.keep_order),
                     "row_order_seed_given": args.shuffle_seed is not None,
                     "guidelines": guidelines, "release": Path(out).name}
    if guidelines:
        _say(args, "checking " + ", ".join(g["guideline"] for g in guidelines) + " ...")
    published = read_release(ds, out, key=key if key is not None else False)
    method = {"name": spec.name, "kind": rel.kind, "params": rel.params}
    if published.info.get("dp"):  # the budget as the public file states it
        method["dp"] = published.info["dp"]
    cert = build_certificate(
        cert_path=cert_path, dataset=ds, configuration=configuration, release=published,
        release_path=out, key_path=key, public_path=public_path_for(out),
        method=method, root_seed=args.seed, guidelines=guidelines)
    protected = [args.data if is_file else None, args.schema, *ds.input_files]
    write_certificate(cert, cert_path, protected=protected)
    _say(args, f"wrote its certificate {cert_path} (sdceval verify {cert_path} checks it)")
    if not published.aligned:
        _say(args, "record-linkage risks: not applicable (no record correspondence; "
                   "the certificate lists them with the reason); the attacks that apply "
                   "to every release need a control set held out before synthesis "
                   "(sdceval compare --control)")
    for v in cert["readings"]["verdicts"]:
        r = v["residual"]
        if r.get("status") == "not checked":
            _say(args, f"{v['guideline']}: not checked ({r.get('reason')})")
            continue
        _say(args, f"{v['guideline']}: {'PASS' if r.get('passed') else 'FAIL'} "
                   f"(value {r.get('value')}, threshold {r.get('threshold')})")
    if args.report:
        from sdceval.experiments.report_anonymization import write_anonymization_report
        report = write_anonymization_report(
            args.report, ds, published, cert, measures=args.report_measures,
            protected=protected + [out, key, cert_path])
        _say(args, f"wrote the anonymization report {report}")
