"""The audit certificate of a release (issue 30 item 3; docs/certificate.md).

``sdceval anonymize`` writes, beside every release, a certificate: a plain JSON file
(``masked.csv`` -> ``masked.csv.certificate.json``, `certificate_path_for`) that lets an
auditor check, later and elsewhere, that the files in hand are the ones assessed and
that the assessment still gives the same numbers.  It holds (format
``sdceval-certificate``, `VERSION` 1; the fields are docs/certificate.md's):

* ``files``: the SHA-256 of every file the release came from or consists of: each input
  file sdceval read (the data file, the schema file, hierarchy files; a bundled data
  set has none, its ``data_fingerprint`` stands for it), the release file, its private
  key file and its public method file, each with its path relative to the
  certificate's folder (absolute when outside it);
* ``data_fingerprint``: `sdceval.core.fingerprint.dataset_fingerprint` of the data set as
  read (values, roles, hierarchies);
* ``configuration``: what the run was given (data options, method, parameters, privacy
  models, seeds, guidelines), and ``configuration_sha256``, its canonical-JSON hash
  (`sdceval.core.fingerprint.spec_hash`, the hash the results store keys jobs by);
* ``sdceval``, ``created`` (UTC), ``method`` (name, kind, the parameters the release
  records) and ``seeds`` (the seed tree of `sdceval.core.rng` at repeat 0: the method's
  seed and each measure's; the row order's seed is private, in the key file only);
* ``readings``: the risk readings and the guideline verdicts, each on the original
  (``initial``: the published columns as they are in the data) and on the release read
  back from its file with its key (``residual``), so that what is certified is the file
  as published (`readings`).

A *synthetic* release (``method.kind`` ``"synthetic"``: new records, no record
correspondence, issue 32) is certified on what applies to it (docs/certificate.md): the
hashes (release and public file; it has no key), the method and its parameters, the
seeds, the DP budget and noise source when it has one (``method.dp``, the public file's
`sdceval.core.release_public.DP_FIELDS`), the original's risk (``initial``) and the
readings of `SYNTHETIC_READINGS` on the release (``readings.measures``).  A
record-linkage reading has no meaning on it: the risk's ``residual`` is ``{"applicable":
false, "reason": ...}``, every risk and privacy measure that does not accept the release
is listed in ``readings.not_applicable`` with the registry's reason, and a guideline's
``residual`` verdict is ``{"status": "not checked", "passed": null, "reason": ...}``:
never a number, never 0, never a PASS.

Nothing in a certificate executes: it is read with `json` and checked field by field
(`load_certificate`).  `verify` recomputes every hash and every reading.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import write_json
from sdceval.core.fingerprint import _plain, dataset_fingerprint, file_fingerprint, spec_hash

FORMAT = "sdceval-certificate"
VERSION = 1
SUFFIX = ".certificate.json"
#: the risk reading every certificate holds (`sdceval.measures.reidentification`: it
#: reads every kind of release, and the original as a release)
RISK_MEASURE = "reidentification"
#: the readings a certificate of a synthetic release holds beside the original's risk:
#: measures that accept synthetic releases and need nothing held out (a control set is
#: not: ``anonymize`` synthesizes from the whole file)
SYNTHETIC_READINGS = ("query_error",)
#: the categories of measures whose readings link released rows to records (listed as
#: not applicable to a synthetic release unless they accept it)
LINKAGE_CATEGORIES = ("risk", "privacy")
#: guideline settings whose value is a file (population tables, `sdceval.guidelines`):
#: recorded by their path from the certificate's folder, and hashed
FILE_SETTINGS = ("population", "zip_population")
_REQUIRED = ("format", "version", "sdceval", "created", "files", "data_fingerprint",
             "configuration", "configuration_sha256", "method", "seeds", "readings")


def certificate_path_for(release_path) -> Path:
    """The certificate beside a release: its whole file name and ``.certificate.json``
    (``masked.csv`` -> ``masked.csv.certificate.json``), as for its key file."""
    path = Path(release_path)
    return path.with_name(path.name + SUFFIX)


def canonical(obj) -> str:
    """``obj`` as canonical JSON (sorted keys, numpy values as Python ones): two readings
    agree when their canonical texts are equal (floats round-trip exactly)."""
    return json.dumps(_plain(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def shown_path(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when it lies under it, else absolute."""
    path, base = Path(path).resolve(), Path(base).resolve()
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)


def resolve(shown: str, cert_path) -> Path:
    """A path recorded in the certificate at ``cert_path``: absolute as it is, relative
    from the certificate's folder."""
    p = Path(shown)
    return p if p.is_absolute() else Path(cert_path).resolve().parent / p


def file_record(role: str, path, base) -> dict:
    """One entry of ``files``: its role, its path as recorded (`shown_path`) and SHA-256."""
    return {"role": role, "path": shown_path(path, base), "sha256": file_fingerprint(path)}


# -- the readings: risk before and after, and the guideline verdicts --------------------
def original_release(dataset, release):
    """The original as a release of the same form as ``release``: what an intruder
    would hold if the data were published unprotected (the ``initial`` readings).  A
    release with cells (generalized, bucketized, composite) of a data set with
    quasi-identifiers: the original table as a generalized release with exact cells
    (`sdceval.measures.attribute_disclosure.identity_release`), which the measures of
    released keys read, and so for a synthetic release (it publishes the QIs);
    otherwise the original values of the columns ``release`` publishes, as an external
    table."""
    from sdceval.core.release import Release
    # a synthetic release publishes every column the schema uses, the QIs among them:
    # unprotected, they are the original's keys as they are (an identity release)
    if (release.cells is not None or not release.aligned) and dataset.schema.qis:
        from sdceval.measures.attribute_disclosure import identity_release
        return identity_release(dataset)
    columns = [c for c in release.data.columns if c in dataset.frame.columns]
    return Release.external(dataset, dataset.frame[columns], method="original")


def _evaluate_guideline(name, dataset, release, **overrides):
    """`sdceval.guidelines.evaluate_guideline` (imported here: the guideline profiles
    are read only when a certificate names one)."""
    from sdceval.guidelines import evaluate_guideline
    return evaluate_guideline(name, dataset, release, **overrides)


def readings(dataset, release, guidelines=(), seed: int = 0, cert_path=None) -> dict:
    """The risk readings and guideline verdicts a certificate records, on the original
    (``initial``, `original_release`) and on ``release`` (``residual``).

    * ``risk``: `RISK_MEASURE` with its seeds from the seed tree rooted at ``seed``
      (`sdceval.core.rng.measure_params`, repeat 0): its value and details;
    * ``verdicts``: for each ``{"guideline": NAME, "overrides": {...}}`` of
      ``guidelines``, ``Verdict.to_dict()`` of `evaluate_guideline` on each side (a
      profile file, ``"file": true``, read at its path recorded relative to the
      certificate ``cert_path``).
    """
    from sdceval.catalog import get_measure
    from sdceval.core.rng import measure_params
    original = original_release(dataset, release)
    spec = get_measure(RISK_MEASURE)
    params = measure_params(spec, {}, seed, 0)

    def risk(rel):
        m = spec.evaluate(dataset, rel, params)
        return {"value": m.value, "details": {k: v for k, v in m.details.items()
                                              if isinstance(v, (int, float, str))}}
    out = {"risk": {"measure": RISK_MEASURE, "params": spec.resolve(params),
                    "initial": risk(original),
                    # a synthetic release: the registry's reason, never a number
                    "residual": ((not release.aligned
                                  and _not_applicable(spec, dataset, release))
                                 or risk(release))},
           "verdicts": []}
    if not release.aligned:
        out.update(_synthetic_readings(dataset, release, seed))
    for g in guidelines:
        overrides = dict(g.get("overrides") or {})
        name = g["guideline"]
        if g.get("file"):
            name = str(resolve(name, cert_path))
        given = {k: str(resolve(overrides[k], cert_path)) for k in FILE_SETTINGS
                 if isinstance(overrides.get(k), str)}
        # a verdict naming a file names it as recorded: moved with the certificate, the
        # files are read elsewhere and the verdict reads the same
        recorded = {given[k]: overrides[k] for k in given}
        if name != g["guideline"]:
            recorded[name] = g["guideline"]

        def verdict(rel):
            if not rel.aligned:
                return _not_checked(name, {**overrides, **given})
            v = _evaluate_guideline(name, dataset, rel, **{**overrides, **given})
            return _as_recorded(v.to_dict(), recorded)
        out["verdicts"].append({
            "guideline": g["guideline"], "overrides": overrides,
            **({"file": True} if g.get("file") else {}),
            "initial": verdict(original), "residual": verdict(release)})
    return json.loads(canonical(out))  # as it reads back from the file


def _not_applicable(spec, dataset, release) -> dict | None:
    """``{"applicable": False, "reason": ...}`` when the measure ``spec`` does not
    accept ``release`` (the registry's reason, `MeasureSpec.check_release`), else
    None."""
    try:
        spec.check_release(dataset, release)
    except SdcevalError as exc:
        return {"applicable": False, "reason": str(exc)}
    return None


def _synthetic_readings(dataset, release, seed: int) -> dict:
    """What a certificate of a synthetic release reads beside the risk (module
    docstring): ``measures``, each of `SYNTHETIC_READINGS` that accepts the release
    (its seeds from the seed tree), and ``not_applicable``, every risk or privacy
    measure (`LINKAGE_CATEGORIES`) that does not, with its reason."""
    from sdceval.catalog import MEASURES, get_measure
    from sdceval.core.rng import measure_params
    measures = []
    for name in SYNTHETIC_READINGS:
        spec = get_measure(name)
        if _not_applicable(spec, dataset, release) is None:
            params = measure_params(spec, {}, seed, 0)
            m = spec.evaluate(dataset, release, params)
            measures.append({"measure": name, "params": spec.resolve(params),
                             "value": m.value,
                             "details": {k: v for k, v in m.details.items()
                                         if isinstance(v, (int, float, str))}})
    skipped = []
    for spec in sorted(MEASURES.all(), key=lambda m: m.name):
        if spec.category in LINKAGE_CATEGORIES:
            why = _not_applicable(spec, dataset, release)
            if why is not None:
                skipped.append({"measure": spec.name, "reason": why["reason"]})
    return {"measures": measures, "not_applicable": skipped}


def _not_checked(name, overrides: dict) -> dict:
    """A guideline's verdict on a synthetic release: not checked, with the reason (a
    guideline profile reads a record-linkage risk, or rules on each released record's
    columns against its own: neither has a record to read)."""
    from sdceval.core.registry import NOT_APPLICABLE_SYNTHETIC
    from sdceval.guidelines.verdict import settle
    profile, _ = settle(name, **overrides)
    reads = (f"the risk measure {profile.measure!r}" if profile.kind != "rules" else
             "rules on each released record")
    return {"status": "not checked", "passed": None,
            "reason": (f"guideline {profile.name!r} reads {reads}, "
                       f"{NOT_APPLICABLE_SYNTHETIC}; judge a synthetic release by the "
                       "attacks that apply to it (singling_out, linkability, inference, "
                       "membership_inference)")}


def _as_recorded(obj, paths: dict):
    """``obj`` with every resolved path of ``paths`` in its texts replaced by the path
    as the certificate records it."""
    if isinstance(obj, dict):
        return {k: _as_recorded(v, paths) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_as_recorded(v, paths) for v in obj]
    if isinstance(obj, str):
        for resolved, shown in paths.items():
            obj = obj.replace(resolved, shown)
    return obj


def seeds(root: int, synthetic: bool = False) -> dict:
    """The seed tree at repeat 0 (`sdceval.core.rng`): the method's and each reading's
    (with ``synthetic``, those of `SYNTHETIC_READINGS` too; such a release has no row
    order to keep private)."""
    from sdceval.catalog import get_measure
    from sdceval.core.rng import measure_params, method_seed
    names = (RISK_MEASURE, *SYNTHETIC_READINGS) if synthetic else (RISK_MEASURE,)
    measures = {}
    for name in names:
        spec = get_measure(name)
        measures[name] = measure_params(spec, {}, root, 0).get(
            "seed", spec.resolve({}).get("seed"))
    return {"root": int(root), "repeat": 0, "method": method_seed(root, 0),
            "measures": measures,
            "row_order": ("none: a synthetic release's rows are new records, in the "
                          "order the method drew them (no key)" if synthetic else
                          "private: recorded in the key file only")}


# -- building, writing, reading ---------------------------------------------------------
def build_certificate(*, cert_path, dataset, configuration: dict, release, release_path,
                      key_path=None, public_path=None, method: dict, root_seed: int,
                      guidelines=()) -> dict:
    """The certificate of the release file ``release_path`` (``release``: that file read
    back with its key) of ``dataset``, to be written at ``cert_path`` (module
    docstring)."""
    import sdceval
    base = Path(cert_path).resolve().parent
    files = [file_record("input", p, base) for p in dataset.input_files]
    files.append(file_record("release", release_path, base))
    if key_path is not None:
        files.append(file_record("key", key_path, base))
    if public_path is not None and Path(public_path).is_file():
        files.append(file_record("public", public_path, base))
    files += [file_record("guideline", resolve(g["guideline"], cert_path), base)
              for g in guidelines if g.get("file")]
    files += [file_record(k, resolve(g["overrides"][k], cert_path), base)
              for g in guidelines for k in FILE_SETTINGS
              if isinstance((g.get("overrides") or {}).get(k), str)]
    configuration = json.loads(canonical(configuration))
    return {"format": FORMAT, "version": VERSION, "sdceval": sdceval.__version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "files": files, "data_fingerprint": dataset_fingerprint(dataset),
            "configuration": configuration,
            "configuration_sha256": spec_hash(configuration),
            "method": json.loads(canonical(method)),
            "seeds": seeds(root_seed, synthetic=not release.aligned),
            "readings": readings(dataset, release, guidelines, root_seed, cert_path)}


def is_certificate(path) -> bool:
    """Whether the file ``path`` is an sdceval certificate (its ``format`` field)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def check_certificate_slot(release_path, cert_path: Path) -> None:
    """Refuse, before a release is written, a file at its certificate's name that is not
    a certificate: nothing is overwritten silently (as for the key file)."""
    if (cert_path.exists() or cert_path.is_symlink()) and not is_certificate(cert_path):
        raise SdcevalError(
            f"refusing to write {str(release_path)!r}: its certificate file "
            f"{str(cert_path)!r} already exists and is not an sdceval certificate; move "
            "that file away or choose another --out")


def remove_stale_certificate(cert_path: Path) -> None:
    """Remove the certificate of an earlier release of this name before the new release
    replaces it: an interrupted run leaves no certificate of another file."""
    if cert_path.is_file() and is_certificate(cert_path):
        cert_path.unlink(missing_ok=True)


def write_certificate(cert: dict, cert_path, protected=()) -> Path:
    """Write the certificate atomically (`sdceval.core.fileio.atomic_write`), never over
    an input file."""
    return write_json(cert, cert_path, protected=protected)


def load_certificate(path) -> dict:
    """The certificate at ``path``, checked: a missing or unreadable file, one that is
    not JSON, not a certificate, of another version or lacking a field is an
    `SdcevalError` naming the file and what is wrong."""
    from sdceval.core.fileio import read_text_file
    text = read_text_file(path, "certificate")
    shown = str(path)
    try:
        cert = json.loads(text)
    except ValueError as exc:
        raise SdcevalError(f"certificate file {shown!r} is not JSON ({exc}); give the "
                           f"{SUFFIX} file sdceval wrote beside the release") from None
    if not isinstance(cert, dict) or cert.get("format") != FORMAT:
        raise SdcevalError(f"certificate file {shown!r} is not an sdceval certificate (no "
                           f"\"format\": {FORMAT!r}); give the {SUFFIX} file sdceval wrote")
    if cert.get("version") != VERSION:
        raise SdcevalError(f"certificate file {shown!r} has version "
                           f"{cert.get('version')!r}; this sdceval reads version {VERSION}: "
                           "verify it with the sdceval version that wrote it")
    missing = [k for k in _REQUIRED if k not in cert]
    if missing:
        raise SdcevalError(f"certificate file {shown!r} lacks the field(s) "
                           f"{', '.join(missing)}; it was edited or cut short")
    bad = _misshapen(cert)
    if bad:
        raise SdcevalError(f"certificate file {shown!r}: {bad} (docs/certificate.md has "
                           "the format); it was edited")
    return cert


def _misshapen(cert: dict) -> str:
    """What in ``cert`` does not have the format's shape, or ``""``."""
    files = cert["files"]
    if not isinstance(files, list) or not all(
            isinstance(f, dict) and all(isinstance(f.get(k), str)
                                        for k in ("role", "path", "sha256"))
            for f in files):
        return "files must be a list of {role, path, sha256} texts"
    if not any(f["role"] == "release" for f in files):
        return "files names no release"
    for key in ("configuration", "method", "seeds", "readings"):
        if not isinstance(cert[key], dict):
            return f"{key} must be an object"
    if not isinstance(cert["configuration"].get("read"), dict) or \
            not isinstance(cert["configuration"].get("data"), str):
        return "configuration must hold data (a text) and read (an object)"
    root = cert["seeds"].get("root")
    if not isinstance(root, int) or isinstance(root, bool) or root < 0:
        return "seeds.root must be a non-negative integer"
    verdicts = cert["readings"].get("verdicts")
    if not isinstance(verdicts, list) or not all(
            isinstance(v, dict) and isinstance(v.get("guideline"), str)
            and isinstance(v.get("overrides", {}), dict) for v in verdicts):
        return "readings.verdicts must be a list of {guideline, overrides, ...}"
    if not isinstance(cert["readings"].get("risk"), dict):
        return "readings.risk must be an object"
    return ""


# -- verifying ----------------------------------------------------------------------------
@dataclass
class Check:
    """One line of `verify`: what was checked, whether it agrees, and the detail."""

    what: str
    ok: bool
    detail: str = ""

    def line(self) -> str:
        return f"{'OK' if self.ok else 'MISMATCH':<9} {self.what}" + (
            f": {self.detail}" if self.detail else "")


def _short(text) -> str:
    text = str(text)
    return text if len(text) <= 80 else text[:77] + "..."


def _first_difference(recorded, now, where: str = "") -> str:
    """Where two JSON values first differ (``passed: recorded True, now False``)."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        for k in sorted(set(recorded) | set(now), key=str):
            if canonical(recorded.get(k)) != canonical(now.get(k)):
                return _first_difference(recorded.get(k), now.get(k), f"{where}{k}.")
    return (f"{where.rstrip('.') or 'value'}: recorded {_short(canonical(recorded))}, "
            f"now {_short(canonical(now))}")


def verify(cert_path) -> list[Check]:
    """Recompute everything the certificate at ``cert_path`` records: every file's
    SHA-256, the configuration's hash, the data set's fingerprint (re-read with the
    recorded data options), and every reading and verdict (the release re-read with its
    key, then `readings`).  A file named in it that does not exist, and a certificate
    that does not load (`load_certificate`), is an `SdcevalError` (nothing checked)."""
    cert = load_certificate(cert_path)
    entries = cert["files"]
    for e in entries:
        p = resolve(e["path"], cert_path)
        if not p.is_file():
            raise SdcevalError(f"{e['role']} file {str(p)!r} named in the certificate "
                               f"{str(cert_path)!r} does not exist; put it back where the "
                               "certificate says (relative to the certificate's folder)")
    checks = []
    for e in entries:
        now = file_fingerprint(resolve(e["path"], cert_path))
        checks.append(Check(f"{e['role']} sha256 {e['path']}", now == e["sha256"],
                            "" if now == e["sha256"] else
                            f"recorded {e['sha256'][:16]}..., now {now[:16]}..."))
    config = cert["configuration"]
    now = spec_hash(config)
    checks.append(Check("configuration sha256", now == cert["configuration_sha256"],
                        "" if now == cert["configuration_sha256"] else
                        f"recorded {str(cert['configuration_sha256'])[:16]}..., "
                        f"now {now[:16]}..."))
    checks += _verify_readings(cert, cert_path, entries)
    return checks


def _verify_readings(cert: dict, cert_path, entries) -> list[Check]:
    """The data fingerprint, the risk readings and the verdicts, recomputed; each a
    MISMATCH naming why when the data or the release can no longer be read."""
    from sdceval.core.loaders import open_dataset
    from sdceval.core.release_io import read_release
    config = cert["configuration"]
    recorded = cert["readings"]
    names = ["risk " + str(recorded.get("risk", {}).get("measure", ""))] + [
        f"verdict {v.get('guideline')}" for v in recorded.get("verdicts", [])]
    # a synthetic release's readings (`_synthetic_readings`) and its DP budget
    extra = [k for k in ("measures", "not_applicable") if k in recorded]
    names += [f"readings {k}" for k in extra]
    if isinstance(cert["method"].get("dp"), dict):
        names.append("dp budget")
    try:
        read = dict(config["read"])
        data = str(config["data"])
        if config.get("data_is_file"):
            data = str(resolve(data, cert_path))
        if read.get("schema_file"):
            read["schema_file"] = str(resolve(read["schema_file"], cert_path))
        ds = open_dataset(data, **read)
    except (SdcevalError, KeyError, TypeError) as exc:
        return [Check(w, False, f"not recomputed: the data set cannot be re-read ({exc})")
                for w in ["data fingerprint", *names]]
    fp = dataset_fingerprint(ds)
    checks = [Check("data fingerprint", fp == cert["data_fingerprint"],
                    "" if fp == cert["data_fingerprint"] else
                    f"recorded {str(cert['data_fingerprint'])[:16]}..., now {fp[:16]}...")]
    by_role = {e["role"]: resolve(e["path"], cert_path) for e in entries}
    try:
        release = read_release(ds, by_role["release"], key=by_role.get("key", False))
        now = readings(ds, release, recorded.get("verdicts", []),
                       int(cert["seeds"]["root"]), cert_path)
    except SdcevalError as exc:
        return checks + [Check(w, False, f"not recomputed: {exc}") for w in names]
    pairs = [(names[0], recorded.get("risk"), now["risk"])]
    verdicts = recorded.get("verdicts", [])
    pairs += [(n, r, v) for n, r, v in zip(names[1:], verdicts, now["verdicts"])]
    pairs += [(f"readings {k}", recorded[k], now.get(k)) for k in extra]
    if "dp budget" in names:  # as the public file beside the release states it
        pairs.append(("dp budget", cert["method"]["dp"], release.info.get("dp")))
    for what, rec, got in pairs:
        same = canonical(rec) == canonical(got)
        checks.append(Check(what, same, "" if same else _first_difference(rec, got)))
    return checks


__all__ = ["Check", "FORMAT", "SUFFIX", "SYNTHETIC_READINGS", "VERSION",
           "build_certificate", "canonical", "certificate_path_for",
           "check_certificate_slot", "shown_path", "load_certificate", "readings",
           "remove_stale_certificate", "verify", "write_certificate"]
