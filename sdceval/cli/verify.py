"""``sdceval verify CERT``: check a release's certificate (`sdceval.experiments.certificate`,
docs/certificate.md).

Recomputes every SHA-256 the certificate records (the input files, the release, its key
and public files, read relative to the certificate's folder or at their absolute
paths), the configuration's hash, the data set's fingerprint (re-read with the recorded
data options) and every reading and guideline verdict (the release re-read with its
key; a synthetic release, with no key, from its public file, and its readings of the
measures that accept it, the record-linkage measures listed as not applicable, and a
DP method's budget against the public file's), and prints one line per check, ``OK``
or ``MISMATCH`` with what differs.  Exit 0 when every check agrees, 1 when any
differs, 2 when the certificate cannot be read or a file it names is missing (one line
naming it).
"""
from __future__ import annotations

from sdceval.cli.common import _add_command, _say

#: the exit code of a certificate some check of which disagrees
EXIT_MISMATCH = 1


def add_parser(sub):
    s = _add_command(sub, "verify", "recompute the hashes and verdicts of a release's "
                                    "certificate", cmd_verify)
    s.add_argument("certificate", metavar="CERT",
                   help="the certificate file sdceval anonymize wrote beside the release "
                        "(masked.csv.certificate.json)")
    return s


def cmd_verify(args) -> int:
    import sdceval
    from sdceval.experiments.certificate import load_certificate, verify
    written_by = load_certificate(args.certificate)["sdceval"]
    if written_by != sdceval.__version__:  # a reading may differ for that reason alone
        _say(args, f"note: the certificate was written by sdceval {written_by}; this is "
                   f"sdceval {sdceval.__version__}")
    checks = verify(args.certificate)
    for c in checks:
        print(c.line())
    bad = sum(not c.ok for c in checks)
    print(f"{len(checks) - bad} of {len(checks)} checks agree" + (
        f"; {bad} MISMATCH" if bad else ": the files and readings are the certified ones"))
    return EXIT_MISMATCH if bad else 0
