"""The anonymization report of a release (issue 30 item 3): an HTML page
(``sdceval anonymize --report FILE``) in the fields of the anonymization report that EMA
Policy 0070 (External guidance on the implementation of the European Medicines Agency
policy on the publication of clinical data, rev. 1.4, 2018, §4.2.3 and annex) and Health
Canada's Public Release of Clinical Information guidance (2019, §6.3) ask a sponsor for:

1. the identifiers and the technique applied to each variable (each column's role and
   what the method did to it, `sdceval.core.treatment.column_treatment`);
2. the attacker model (from each guideline verdict when one was checked; the
   re-identification reading's intruder always);
3. the threshold and its justification (the guideline profile's, when one was given;
   else the method's target, a class size ``k`` read as the risk ``1/k``; else none);
4. the initial and residual risk (the certificate's readings: the original's published
   columns and the release as published);
5. the utility impact (utility and information-loss measures of the release);

A synthetic release (issue 32: new records, no record correspondence) is described in
the same fields, in words where a record-linkage reading would stand: its columns
"synthesized", the re-identification rate "not applicable" on the release with the
registry's reason (the original's is still given), every other record-linkage measure
listed as not applicable, a guideline's verdict "not checked" with its reason (never
PASS), the certificate's readings of the measures that accept synthetic releases among
the utilities, and a DP release's budget, noise source and stated leaks;

then a "Certificate" section: the hashes, the version, the seeds and the verdicts of
the certificate written beside the release (`sdceval.experiments.certificate`).  The
page is built like every report (`sdceval.experiments.report_html`: escaped text, the
same content-security policy, aggregates only, never a record).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from sdceval.core.fileio import write_text
from sdceval.experiments.certificate import SUFFIX
from sdceval.experiments.report_html import (Section, bullets, esc, fmt, heading, page,
                                             paragraph, run_inputs, table)

#: the template's fields, in its order: the sub-headings of the section
FIELDS = ("Identifiers and technique per variable", "Attacker model",
          "Threshold and justification", "Initial and residual risk", "Utility impact")
#: what the re-identification reading assumes of the intruder
#: (`sdceval.measures.reidentification`, SPEC §4)
RISK_ATTACKER = ("prosecutor: the intruder knows that the person is in the file and the "
                 "person's published quasi-identifiers, and picks one of the released rows "
                 "compatible with them (re-identification rate)")


def _dl(items) -> str:
    """A definition list of ``(term, value)`` pairs (the report's inputs style)."""
    return '<dl class="inputs">' + "".join(
        f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items if v not in (None, "")
    ) + "</dl>"


def _frame_table(rows: list[dict], labels: dict[str, str]) -> str:
    """A table whose headers are ``labels`` (no glossary look-up: the template's words)."""
    if not rows:
        return ""
    df = pd.DataFrame(rows, columns=list(labels))
    text = [c for c in labels if any(isinstance(r.get(c), str) for r in rows)]
    return table(df.astype({c: object for c in text}), labels=labels, text_columns=text)


def _verdict_word(v: dict | None) -> str:
    if not v:
        return "–"
    if v.get("status") == "not checked":  # a synthetic release: never a PASS
        return "not checked"
    return "PASS" if v.get("passed") else "FAIL"


def _reading(r: dict):
    """A risk reading's value, or "not applicable" (a synthetic release: no number)."""
    return r["value"] if "value" in r else "not applicable"


def _name(v: dict) -> str:
    return str(v.get("guideline", "?"))


# -- the template's fields ------------------------------------------------------------------
def variables_block(dataset, release, cert: dict) -> str:
    """Field 1: each column's role and what the method did to it."""
    from sdceval.core.treatment import column_treatment
    treatment = column_treatment(dataset, release)
    roles = {c.name: c.role for c in dataset.schema.columns}
    method = cert["method"]
    params = ", ".join(f"{k}={fmt(v)}" for k, v in method.get("params", {}).items()
                       if v is not None)
    rows = [{"column": c, "role": roles.get(c, ""), "treatment": t}
            for c, t in treatment.items()]
    synthetic = ("" if release.aligned else
                 f" Every published column holds synthetic values: {release.n} new "
                 "records drawn from a model of the whole file, none of them the release "
                 "of an original record (no record correspondence).")
    return (paragraph(f"Technique: {method['name']} ({method.get('kind', '')} release)"
                      + (f" with {params}" if params else "") + ". Direct identifiers "
                      "(role identifier) and ignored columns are never published."
                      + synthetic)
            + _dp_block(method.get("dp"))
            + _frame_table(rows, {"column": "variable", "role": "role",
                                  "treatment": "what the release did to it"}))


def _dp_block(dp: dict | None) -> str:
    """A DP release's budget, noise source and stated leaks (the certificate's
    ``method.dp``, `sdceval.core.release_public.DP_FIELDS`)."""
    if not dp:
        return ""
    noise = ("OpenDP's secure generator: a differentially private release"
             if dp.get("private") else
             f"drawn from the seed ({dp.get('noise')}): NOT private once the seed is known")
    return _dl([("privacy budget", f"epsilon = {fmt(dp.get('epsilon'))} (spent "
                                   f"{fmt(dp.get('epsilon_spent'))}), delta = "
                                   f"{fmt(dp.get('delta'))}"),
                ("mechanism", dp.get("mechanism")),
                ("neighbouring data sets", dp.get("neighbouring")),
                ("noise source", noise)]) + bullets(
        [f"stated leak: {leak}" for leak in dp.get("leaks") or ()])


def attacker_block(cert: dict) -> str:
    """Field 2: the attacker each reading assumes."""
    residual = cert["readings"]["risk"]["residual"]
    items = [("re-identification rate", RISK_ATTACKER if "value" in residual else
              RISK_ATTACKER + "; on the original only: on a synthetic release it is "
              "not applicable (no released row is a person's)")]
    for v in cert["readings"]["verdicts"]:
        r = v.get("residual", {})
        if r.get("status") == "not checked":  # the profile's attacker, from the original
            r = v.get("initial", {})
        if r.get("attacker"):
            items.append((_name(v), str(r["attacker"])))
        assumptions = r.get("assumptions")
        if isinstance(assumptions, dict):  # the attacker is the line above
            assumptions = {k: a for k, a in assumptions.items() if k != "attacker"}
        if assumptions:
            items.append((f"{_name(v)}: assumptions", _assumptions(assumptions)))
    return _dl(items)


def _assumptions(a) -> str:
    if isinstance(a, dict):
        return "; ".join(f"{k}: {fmt(x)}" for k, x in a.items())
    if isinstance(a, (list, tuple)):
        return "; ".join(map(str, a))
    return str(a)


def target_of(method: dict) -> tuple[float, str] | None:
    """The method's own target risk when it has one: a class size ``k`` (its parameter
    or a ``k=K`` privacy model) read as the prosecutor's risk ``1/k`` (every class holds
    at least ``k`` records); None otherwise."""
    params = method.get("params", {})
    ks = [params["k"]] if isinstance(params.get("k"), (int, float)) else []
    for m in params.get("models", ()) or ():
        text = str(m).replace(" ", "")
        if text.startswith("k="):
            try:
                ks.append(float(text[2:].split(",")[0]))
            except ValueError:
                pass
    if not ks or min(ks) <= 0:
        return None
    k = max(ks)
    return 1.0 / k, (f"the method's target: classes of at least k = {fmt(k)} records, a "
                     f"prosecutor's risk of at most 1/k = {fmt(1.0 / k)} per record")


def _threshold_text(r: dict) -> str:
    """A verdict's threshold as its profile reads it (`sdceval.guidelines.rounding`)."""
    if r.get("kind") == "rules":
        return "rule checks on the published columns (every check must pass)"
    sign = {"at_most": "at most", "at_least": "at least"}.get(r.get("comparison"), "")
    text = f"{r.get('metric', 'value')} {sign} {fmt(r.get('threshold'))}".strip()
    if r.get("min_class_size"):
        text += (f", read as {r.get('rounding')} reads it: minimum class size "
                 f"{r['min_class_size']}, bound {fmt(r.get('effective_threshold'))}")
    elif r.get("rounding"):
        text += f" (read {r['rounding']})"
    return text


def threshold_block(cert: dict) -> str:
    """Field 3: each guideline's threshold, its reading and its justification (the
    profile's source and note); else the method's target; else none."""
    verdicts = cert["readings"]["verdicts"]
    if verdicts:
        out = []
        for v in verdicts:
            r = v.get("residual", {})
            source = r.get("source") or {}
            out.append(_dl([(f"{_name(v)}: threshold", _threshold_text(r)),
                            ("justification", source.get("note")),
                            ("source", " ".join(x for x in (source.get("citation"),
                                                            source.get("url")) if x))]))
        return "".join(out)
    target = target_of(cert["method"])
    if target is not None:
        return paragraph(f"No guideline was given (anonymize --guideline NAME): the "
                         f"threshold is {target[1]}.")
    return paragraph("No guideline was given and the method sets no target risk: the "
                     "release is described here, not judged against a threshold "
                     "(anonymize --guideline NAME checks one).")


def risk_block(cert: dict) -> str:
    """Field 4: each reading on the original and on the release."""
    risk = cert["readings"]["risk"]
    # no threshold beside the rate: it is a mean over records, and a target 1/k bounds
    # each record's risk (the rate under 1/k would not show that every record is)
    rows = [{"reading": "re-identification rate (share of records)",
             "initial": _reading(risk["initial"]), "residual": _reading(risk["residual"]),
             "threshold": None, "verdict": "–"}]
    for v in cert["readings"]["verdicts"]:
        i, r = v.get("initial", {}), v.get("residual", {})
        metric = r.get("metric") or i.get("metric") or "rule checks"
        rows.append({"reading": f"{_name(v)}: {metric}",
                     "initial": i.get("value"),
                     "residual": ("not checked" if r.get("status") == "not checked"
                                  else r.get("value")),
                     "threshold": r.get("threshold", i.get("threshold")),
                     "verdict": f"{_verdict_word(i)} before, {_verdict_word(r)} after"})
    why = [f"re-identification rate on the release: not applicable: "
           f"{risk['residual']['reason']}"] if "reason" in risk["residual"] else []
    why += [f"{_name(v)}: not checked: {v['residual']['reason']}"
            for v in cert["readings"]["verdicts"]
            if v.get("residual", {}).get("status") == "not checked"]
    why += [f"{r['measure']}: not applicable" for r in
            cert["readings"].get("not_applicable") or ()
            if r["measure"] != risk.get("measure")]
    checks = why + [f"{_name(v)}, {c.get('name')}: {c.get('status')}"
                    + (f" ({c['records']} records)" if c.get("records") is not None
                       else "")
                    + (f": {c['detail']}" if c.get("detail") else "")
                    for v in cert["readings"]["verdicts"]
                    for c in v.get("residual", {}).get("checks") or []]
    for v in cert["readings"]["verdicts"]:  # what no check covers (not a check's repeat)
        named = {str(c.get("name")) for c in v.get("residual", {}).get("checks") or []}
        checks += [f"{_name(v)}, not checked: {item}"
                   for item in v.get("residual", {}).get("not_checked") or []
                   if str(item).split(":")[0] not in named]
    return (paragraph("Initial: the published columns as they are in the original data; "
                      "residual: the release as published (read back from its file with "
                      "its key).", "muted")
            + _frame_table(rows, {"reading": "reading", "initial": "initial risk",
                                  "residual": "residual risk", "threshold": "threshold",
                                  "verdict": "verdict"})
            + bullets(checks))


def utility_rows(dataset, release, measures: str, root_seed: int = 0
                 ) -> tuple[list[dict], list[str]]:
    """Field 5: each measure of ``measures`` that applies to ``release`` (its seeds from
    the seed tree at repeat 0), and a note for each that does not."""
    from sdceval.catalog import get_measure
    from sdceval.compare.measure_text import parse_measure_list
    from sdceval.core.errors import SdcevalError
    from sdceval.core.rng import measure_params
    rows, notes = [], []
    for label, (name, params) in parse_measure_list(measures).items():
        spec = get_measure(name)
        spec.resolve(params)
        try:
            spec.check_release(dataset, release)
        except SdcevalError:
            notes.append(f"{label}: does not apply to a {release.kind} release")
            continue
        m = spec.evaluate(dataset, release, measure_params(spec, params, root_seed, 0))
        rows.append(_measure_row(label, m.value))
    return rows, notes


def _measure_row(label: str, value) -> dict:
    """One row of the utility table: the measure's display name, value and gloss."""
    from sdceval.core.glossary import term
    t = term(label)
    return {"measure": t.label if t else label, "value": float(value),
            "words": t.words if t else "", "name": label}


def utility_block(rows: list[dict], notes: list[str]) -> str:
    if not rows:
        return paragraph("No utility measure applies to this release.") + bullets(notes)
    return (_frame_table(rows, {"measure": "measure", "value": "value",
                                "words": "how to read it", "name": "name"})
            + bullets(notes))


# -- the certificate ---------------------------------------------------------------------------
def certificate_section(cert: dict, cert_name: str = "") -> Section:
    """The certificate as a section: what it records and how to check it."""
    s = Section("Certificate", anchor="certificate",
                answer=f"sdceval verify {cert_name or 'CERT'} recomputes every hash and "
                       "reading below; exit 0 when all agree.")
    seeds = cert["seeds"]
    s.add(_dl([("format", f"{cert['format']} {cert['version']}"),
               ("sdceval version", cert["sdceval"]), ("created (UTC)", cert["created"]),
               ("configuration sha256", cert["configuration_sha256"]),
               ("data fingerprint", cert["data_fingerprint"]),
               ("seeds", f"root {seeds['root']} (repeat {seeds['repeat']}): method "
                         f"{seeds['method']}, "
                         + ", ".join(f"{k} {v}" for k, v in seeds["measures"].items())
                         + f"; row order: {seeds['row_order']}")]))
    s.add(heading("Files"), _frame_table(
        [{"role": f["role"], "path": f["path"], "sha256": f["sha256"]}
         for f in cert["files"]], {"role": "file", "path": "path", "sha256": "SHA-256"}))
    verdicts = cert["readings"]["verdicts"]
    s.add(heading("Verdicts"))
    if verdicts:
        s.add(_frame_table([{"guideline": _name(v), "initial": _verdict_word(v["initial"]),
                             "residual": _verdict_word(v["residual"]),
                             "value": v["residual"].get("value"),
                             "threshold": v["residual"].get("threshold")}
                            for v in verdicts],
                           {"guideline": "guideline", "initial": "original",
                            "residual": "release", "value": "value", "threshold":
                            "threshold"}))
    else:
        s.add(paragraph("none: no guideline was given (anonymize --guideline NAME)"))
    s.notes.append("The hashes prove that files are the ones certified and the readings "
                   "that this sdceval computes the same numbers from them; they do not "
                   "prove that the data file is the true data, nor that the private key "
                   "was kept private (docs/certificate.md).")
    return s


def anonymization_section(dataset, release, cert: dict, utility: tuple) -> Section:
    """The "Anonymization report" section: the template's fields (`FIELDS`)."""
    verdicts = cert["readings"]["verdicts"]
    answer = ("; ".join(f"{_name(v)}: {_verdict_word(v['residual'])}" for v in verdicts)
              if verdicts else "no guideline checked")
    if not release.aligned:
        answer += ("; a synthetic release: record-linkage risks are not applicable (no "
                   "record correspondence)")
    s = Section("Anonymization report", anchor="anonymization",
                answer=f"{cert['method']['name']} release of {dataset.name}: {answer}.")
    blocks = (variables_block(dataset, release, cert), attacker_block(cert),
              threshold_block(cert), risk_block(cert), utility_block(*utility))
    for title, block in zip(FIELDS, blocks):
        s.add(heading(title), block)
    s.terms.extend(r["name"] for r in utility[0])
    return s


def write_anonymization_report(path, dataset, release, cert: dict, measures: str,
                               protected=()) -> Path:
    """The report page (module docstring), written atomically and never over an input
    file or the release's files (``protected``)."""
    utility = utility_rows(dataset, release, measures, int(cert["seeds"]["root"]))
    certified = {r["name"] for r in utility[0]}
    for r in cert["readings"].get("measures") or ():  # a synthetic release's readings
        if r["measure"] not in certified:
            utility[0].append(_measure_row(r["measure"], r["value"]))
    sections = [anonymization_section(dataset, release, cert, utility),
                certificate_section(cert, cert.get("configuration", {}).get("release", "")
                                    + SUFFIX)]
    inputs = run_inputs(dataset, {"method": cert["method"]["name"],
                                  "seed": str(cert["seeds"]["root"])})
    title = f"Anonymization report: {cert['method']['name']} on {dataset.name}"
    return write_text(page(title, sections, inputs), Path(path),
                      protected=[p for p in protected if p is not None])


__all__ = ["FIELDS", "anonymization_section", "certificate_section", "target_of",
           "utility_rows", "write_anonymization_report"]
