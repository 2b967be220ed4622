"""A user's table files read with clear errors: CSV and Parquet (`load_table`), for the
data sets of `sdceval.core.loaders` and the release files of `sdceval.core.release_io`.

* **codes with leading zeros** stay text (`LEADING_ZERO`); columns named in ``text``
  are read exactly as written (only an empty field is missing there).
* **separators**: a CSV file's separator (``,`` ``;`` tab ``|``) is found from its first
  lines unless given (``sep=``, ``--sep``: `csv_separator`); a comma-separated file is
  read exactly as pandas reads it, and a file that would read as one column holding a
  separator is refused, naming it (issue 27 item 13).
* **statistics packages' files** (SPSS ``.sav``/``.zsav``/``.por``, Stata ``.dta``, SAS
  ``.sas7bdat``/``.xpt``: `READSTAT_READERS`) are read through pyreadstat when it is
  installed (the ``formats`` extra, `READSTAT_EXTRA`; issue 31): the values as stored
  (codes, not their value labels), user-defined missing values missing; without
  pyreadstat they are refused like the other formats, naming the extra.
* **other formats**: spreadsheets and the like (Excel, R, JSON, ...: `OTHER_FORMATS`)
  and binary files are refused, naming the supported formats and how to convert the
  file (issue 27 item 13).
"""
from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import re
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError

#: pandas' default missing-value markers, applied to every column not read as text
try:
    from pandas._libs.parsers import STR_NA_VALUES as _NA_MARKERS
except ImportError:  # pragma: no cover - moved in a future pandas
    _NA_MARKERS = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                   "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                   "nan", "null"}
PARQUET_EXTRA = 'pip install "sdceval[parquet]"'
READSTAT_EXTRA = 'pip install "sdceval[formats]"'
#: files of statistics packages read through pyreadstat (when installed), by suffix: the
#: pyreadstat function that reads one
READSTAT_READERS = {".sav": "read_sav", ".zsav": "read_sav", ".por": "read_por",
                    ".dta": "read_dta", ".sas7bdat": "read_sas7bdat", ".xpt": "read_xport"}


def _pyreadstat():
    """The pyreadstat module, or None when it is not installed (the ``formats`` extra)."""
    try:
        import pyreadstat
    except ImportError:
        return None
    return pyreadstat


def load_table(path, text: Iterable[str] = (), numeric: Iterable[str] = (),
               sep: str | None = None) -> pd.DataFrame:
    """Read a user's CSV or Parquet file with clear errors.

    Columns in ``text`` (codes: those with a categorical hierarchy or declared
    categorical) are read as text exactly as written, so ``02310`` stays ``02310`` and a
    code ``NA`` stays ``NA``; in them only an empty field is a missing value.  So is a
    CSV column read as whole numbers whose cells include a number written with a leading
    zero (`LEADING_ZERO`), unless it is in ``numeric``.  Other columns get pandas' usual
    types and missing-value markers.  Column names are text.  ``sep``: a CSV file's
    separator (default: found from its first lines, `csv_separator`).
    """
    return _load_table(path, text, numeric, sep)[0]


#: what sdceval reads, for the errors that refuse another format
SUPPORTED_FORMATS = ("CSV (separated by , ; tab or |) and Parquet (.parquet, .pq; "
                     f"{PARQUET_EXTRA}); SPSS, Stata and SAS files (.sav, .dta, "
                     f".sas7bdat, .xpt) with pyreadstat ({READSTAT_EXTRA})")
#: files sdceval does not read, by suffix: what they are and how to convert one (``{p}``:
#: the file, ``{out}``: a CSV file beside it); refused naming `SUPPORTED_FORMATS`
_SPSS = ("an SPSS file", "pandas.read_spss({p}).to_csv({out}, index=False) (needs "
                         "pyreadstat)")
_SAS = "pandas.read_sas({p}).to_csv({out}, index=False)"
_EXCEL = ("a spreadsheet", "pandas.read_excel({p}).to_csv({out}, index=False)")
_R = ("an R file", "write.csv(...) in R")
OTHER_FORMATS = {
    ".dta": ("a Stata file", "pandas.read_stata({p}).to_csv({out}, index=False)"),
    ".sav": _SPSS, ".zsav": _SPSS, ".por": _SPSS,
    ".sas7bdat": ("a SAS file", _SAS), ".xpt": ("a SAS transport file", _SAS),
    ".xls": _EXCEL, ".xlsx": _EXCEL, ".xlsm": _EXCEL, ".ods": _EXCEL,
    ".rds": _R, ".rdata": _R, ".rda": _R,
    ".feather": ("an Arrow file", "pandas.read_feather({p}).to_parquet(...)"),
    ".json": ("a JSON file", "pandas.read_json({p}).to_csv({out}, index=False)"),
}


def _refuse_other_format(path: Path) -> None:
    """A file of `OTHER_FORMATS` (by its suffix) is refused, naming the supported formats
    and how to convert it, before anything reads it as a CSV (a codec error says
    neither)."""
    suffix = path.suffix.lower()
    if suffix not in OTHER_FORMATS:
        return
    if suffix in READSTAT_READERS and _pyreadstat() is not None:
        return  # read by `_read_readstat`
    what, how = OTHER_FORMATS[suffix]
    how = how.format(p=repr(path.name), out=repr(path.stem + ".csv"))
    raise SdcevalError(
        f"data file {str(path)!r} is {what} ({suffix}), which sdceval does not read: the "
        f"supported formats are {SUPPORTED_FORMATS}; convert it first, e.g. {how}")


def _load_table(path, text: Iterable[str] = (), numeric: Iterable[str] = (),
                sep: str | None = None) -> tuple[pd.DataFrame, dict, str | None]:
    """`load_table`, the columns read as text for their leading zeros (column -> a cell
    with one), and the separator found in a CSV file (None: a Parquet file)."""
    path = Path(path)
    shown = str(path)
    if not path.exists():
        raise SdcevalError(f"data file {shown!r} does not exist")
    text = [str(c) for c in text]
    numeric = [str(c) for c in numeric]
    suffixes = "".join(path.suffixes).lower()
    codes: dict = {}
    found = None
    _refuse_other_format(path)
    try:
        if suffixes.endswith((".parquet", ".pq")):
            df = _read_parquet(path, text)
        elif path.suffix.lower() in READSTAT_READERS:
            df = _read_readstat(path, text)
        else:
            found = csv_separator(path, sep)
            df, codes = _read_csv(path, text, numeric, found)
    except SdcevalError:
        raise
    except pd.errors.EmptyDataError:
        raise SdcevalError(f"data file {shown!r} is empty") from None
    except UnicodeDecodeError as exc:
        raise SdcevalError(
            f"data file {shown!r} is not UTF-8 text ({exc.reason}; Latin-1 or another "
            "encoding?): save it as a UTF-8 CSV, e.g. pandas.read_csv(FILE, "
            "encoding='latin-1').to_csv('utf8.csv', index=False)") from None
    except (ValueError, OSError, EOFError, ImportError, pd.errors.ParserError) as exc:
        raise SdcevalError(f"cannot read {shown!r}: {exc}") from None
    if df.empty:
        raise SdcevalError(f"data file {shown!r} has no records")
    return df, codes, found


#: the separators a CSV file may have when none is given, the comma first
SEPARATORS = (",", ";", "\t", "|")
#: how much of a CSV file's start `csv_separator` reads (whole lines of it)
SNIFF_BYTES = 1 << 16
#: compressed CSV files (pandas reads them by their suffix): sniffed through these
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: archives pandas also reads: not sniffed (the comma, unless ``sep`` is given)
_PACKED = (".zip", ".zst", ".tar")
_SEP_WORDS = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}


def separator(sep) -> str:
    """The separator a user gives (``sep=``, ``--sep``): one character but a quote or a
    line break; ``tab`` or a written ``\\t`` is a tab."""
    given = _SEP_WORDS.get(sep.lower(), sep) if isinstance(sep, str) else sep
    if not isinstance(given, str) or len(given) != 1 or given in '"\r\n':
        raise SdcevalError(
            f"sep {sep!r}: give the CSV file's separator as one character (not a quote "
            "or a line break), e.g. --sep ';' (sep=';'), or --sep tab for tabs")
    return given


def csv_separator(path, sep=None) -> str:
    """The separator of the CSV file ``path``: ``sep`` if given (`separator`); else the
    first of `SEPARATORS` that splits every line of the file's start (`SNIFF_BYTES`,
    quotes honoured as pandas does) into the same number of fields, more than one, the
    comma first (so a comma-separated file is read exactly as pandas reads it), several
    others tied broken by the most fields; none: the comma, but for a file whose first
    line holds another separator, which would read as one column named after the whole
    line: refused, naming it.  A file holding NUL bytes is not text: refused, naming the
    supported formats."""
    if sep is not None:
        return separator(sep)
    path = Path(path)
    suffix = path.suffix.lower()
    if any(s.lower() in _PACKED for s in path.suffixes):
        return ","  # an archive pandas unpacks itself: its default separator, as before
    try:
        with _OPENERS.get(suffix, open)(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES + 1)
    except (EOFError, lzma.LZMAError, gzip.BadGzipFile) as exc:
        raise SdcevalError(f"cannot read {str(path)!r}: damaged {suffix} file ({exc}); "
                           "compress it again, or give the CSV file itself") from None
    if b"\0" in head:
        raise SdcevalError(
            f"data file {str(path)!r} is not a text (CSV) file: it holds binary data (NUL "
            "bytes: another program's format, or text saved as UTF-16); the supported "
            f"formats are {SUPPORTED_FORMATS}: save it as a UTF-8 CSV or Parquet file")
    text = head[:SNIFF_BYTES].decode("utf-8", errors="replace")
    if len(head) > SNIFF_BYTES:  # the last line may be cut short: not counted
        text = text[:text.rfind("\n") + 1] or text
    fields = {}  # separator -> (the numbers of fields of the lines, the first line's)
    for d in SEPARATORS:
        try:
            rows = [r for r in csv.reader(io.StringIO(text), delimiter=d) if r]
        except csv.Error:
            continue
        if len(head) > SNIFF_BYTES and len(rows) > 1:
            rows = rows[:-1]  # a quoted field may run past what was read
        if rows:
            fields[d] = ({len(r) for r in rows}, len(rows[0]))
    even = [d for d, (n, _) in fields.items() if len(n) == 1 and min(n) > 1]
    if "," in even:
        return ","
    if even:
        return max(even, key=lambda d: (fields[d][1], -SEPARATORS.index(d)))
    split = [d for d, (_, k) in fields.items() if d != "," and k > 1]
    if split and fields.get(",", (None, 1))[1] == 1:
        d = max(split, key=lambda d: fields[d][1])
        k = fields[d][1]
        name = "tab" if d == "\t" else repr(d)
        raise SdcevalError(
            f"data file {str(path)!r} would read as one column: its first line holds "
            f"{k} fields separated by {name}, but its lines do not all have {k} fields; "
            f"fix those lines and give --sep {name} (sep= in Python), or save it with "
            "commas")
    return ","


def _read_parquet(path: Path, text: list) -> pd.DataFrame:
    try:
        df = pd.read_parquet(path)
    except ImportError:
        raise SdcevalError(
            f"reading the Parquet file {str(path)!r} needs pyarrow, an optional extra: "
            f"{PARQUET_EXTRA} (or pip install pyarrow), or give a CSV file") from None
    df.columns = [str(c) for c in df.columns]
    for c in text:
        if c in df.columns and not _is_text(df[c]):
            df[c] = df[c].astype(str).where(df[c].notna())
    return df


def _read_readstat(path: Path, text: list) -> pd.DataFrame:
    """A statistics package's file (`READSTAT_READERS`) read through pyreadstat: the
    stored values (codes, not value labels; user-defined missing values are missing);
    columns in ``text`` become text, a whole number written without ``.0`` (an SPSS
    code 1 is stored as the double 1.0)."""
    suffix = path.suffix.lower()
    what = OTHER_FORMATS[suffix][0]
    reader = _pyreadstat()
    try:
        df, _meta = getattr(reader, READSTAT_READERS[suffix])(str(path))
    except (reader.ReadstatError, reader.PyreadstatError, OSError, ValueError) as exc:
        raise SdcevalError(f"cannot read {str(path)!r} as {what} ({suffix}): {exc}; "
                           "is the file complete and of that format?") from None
    df.columns = [str(c) for c in df.columns]
    for c in text:
        if c in df.columns and not _is_text(df[c]):
            values = df[c]
            whole = pd.api.types.is_float_dtype(values) and bool(
                (values.dropna() % 1 == 0).all())
            shown = values.astype("Int64") if whole else values
            df[c] = shown.astype(str).where(values.notna())
    return df


#: a cell written as a number with a leading zero: a code (ZIP ``02116``), not a number
LEADING_ZERO = re.compile(r"\s*0[0-9]+\s*", flags=re.ASCII)


def _read_csv(path: Path, text: list, numeric: list = (), sep: str = ","
              ) -> tuple[pd.DataFrame, dict]:
    # the header as written: pandas renames a repeated name 'a' to 'a.1' silently
    first = pd.read_csv(path, sep=sep, nrows=1, header=None, dtype=str,
                        keep_default_na=False)
    names = [str(v) for v in first.iloc[0].tolist()]
    seen, dup = set(), []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    if dup:
        raise SdcevalError(
            f"data file {str(path)!r}: duplicated column name(s) {', '.join(map(repr, dup))} "
            "in the header; every column needs its own name: rename them in the file")
    if not text:
        df = pd.read_csv(path, sep=sep)
        df.columns = [str(c) for c in df.columns]
        codes = []
    else:
        header = [str(c) for c in pd.read_csv(path, sep=sep, nrows=0).columns]
        codes = [c for c in header if c in text]
        na = {c: ([""] if c in codes else sorted(_NA_MARKERS)) for c in header}
        df = pd.read_csv(path, sep=sep, keep_default_na=False, na_values=na)
        df.columns = [str(c) for c in df.columns]
    # a column pandas parsed as text holds the cells as written; one it parsed as
    # numbers (02310 -> 2310) or booleans is read again as text (asking for dtype=str
    # up front costs three times the parse on every column); so is every column of
    # whole numbers, to look for leading zeros in its cells as written
    parsed = [c for c in codes if not _is_text(df[c])]
    wholes = [c for c in df.columns if c not in codes and c not in numeric
              and _whole_numbers(df[c])]
    found: dict = {}
    if parsed or wholes:
        both = parsed + wholes
        raw = pd.read_csv(path, sep=sep, usecols=both, dtype={c: str for c in both},
                          keep_default_na=False, na_values={c: [""] for c in both})
        raw.columns = [str(c) for c in raw.columns]
        for c in parsed:
            df[c] = raw[c]
        for c in wholes:
            cells = raw[c].dropna()
            cells = cells[cells.str.lstrip().str.startswith("0")]
            lead = cells[cells.str.fullmatch(LEADING_ZERO)]
            if len(lead):
                df[c] = raw[c]
                found[c] = str(lead.iloc[0]).strip()
    return df, found


def _whole_numbers(values: pd.Series) -> bool:
    """Numbers (not booleans) that are all whole: integers, or floats with a missing
    value (pandas reads a column of integers with a missing value as floats)."""
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return False
    if pd.api.types.is_integer_dtype(values):
        return True
    x = values.to_numpy(dtype=float, na_value=np.nan)
    x = x[~np.isnan(x)]
    return bool(len(x)) and bool(np.all(np.isfinite(x) & (x == np.round(x))))


def _is_text(values: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(values) or values.dtype == object
