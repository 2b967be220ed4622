"""The self-contained HTML report (issue 20): one file a person opens in any browser,
reads on a laptop and prints, with no network access.

Everything is inline: the styles in one ``<style>`` element, every figure as a PNG
``data:`` URI read from the file the plot just wrote, no script; a Content-Security-
Policy (``default-src 'none'``) makes the browser refuse any resource from elsewhere,
so a report cannot call out even if a label held a URL.  Links to the result files
beside the report are relative (``ranking.csv``).

A report holds aggregates only: tables of measures, parameters and counts, figures of
them, never a record.  Names are shown as people read them (`sdceval.core.glossary`):
table headers are display names with their direction words, and the glossary at the
end explains every term a table or figure of the page shows.

`Section` is one part of a page (a job, or a command's result): its ``answer`` (one
sentence), its blocks of HTML, the terms it shows (for the glossary), its notes (what
was assumed or fitted), its files (linked).  `write_page` assembles sections into a
page.  The section of each job kind is the kind's ``report`` (`sdceval.experiments.jobs`).
"""
from __future__ import annotations

import base64
import html
import math
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from sdceval.core.fileio import write_text
from sdceval.core.glossary import glossary, release_label, term

#: the page's only policy: nothing is loaded from anywhere but the page itself
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_CSS = """
:root { --ink: #1b1b1b; --muted: #555; --rule: #d0d0d0; --band: #f4f6f8; --accent: #0072B2; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
       sans-serif; color: var(--ink); margin: 0 auto; max-width: 72rem; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; }
h2 { font-size: 1.25rem; margin: 2.2rem 0 .6rem; border-bottom: 2px solid var(--rule);
     padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
p.lead { color: var(--muted); margin-top: 0; }
.answer { font-size: 1.12rem; background: #eaf3fa; border-left: 5px solid var(--accent);
          padding: .8rem 1rem; margin: 1rem 0 1.2rem; }
table { border-collapse: collapse; margin: .4rem 0 1rem; font-size: .9rem; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid var(--rule); text-align: right;
         vertical-align: top; }
th { background: var(--band); font-weight: 600; }
th small { display: block; font-weight: 400; color: var(--muted); }
td.text, th.text { text-align: left; }
tr.unranked td { color: var(--muted); }
.scroll { overflow-x: auto; max-width: 100%; }
figure { margin: 1rem 0 1.6rem; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--rule); }
figcaption { color: var(--muted); font-size: .88rem; margin-top: .3rem; }
ul.notes li { margin: .3rem 0; }
dl.glossary dt { font-weight: 600; margin-top: .6rem; }
dl.glossary dd { margin: 0 0 0 1.2rem; color: #333; }
dl.inputs { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dl.inputs dt { font-weight: 600; }
dl.inputs dd { margin: 0; }
nav ol { padding-left: 1.4rem; }
.muted { color: var(--muted); }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  .scroll { overflow: visible; }
  h2 { break-after: avoid; }
  figure, table { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
"""


def esc(text) -> str:
    """Text for HTML (quotes too: it goes into attributes)."""
    return html.escape(str(text), quote=True)


def fmt(v) -> str:
    """A cell as a person reads it: 4 significant digits (from 10 000 on, the whole
    number), whole numbers with thousands separators, yes/no, a dash for missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "–"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == int(v) and abs(v) < 1e15:
            return f"{int(v):,}"
        if 1e4 <= abs(v) < 1e15:  # read whole (63,251), not as 6.325e+04
            return f"{v:,.0f}"
        return f"{v:.4g}"
    return str(v)


def header_cell(name: str, css: str = "", label: str | None = None) -> str:
    """``<th>``: the display name (or ``label``, then without direction words, which the
    caller's label carries), its direction words under it, its gloss as title."""
    t = term(name)
    words = f"<small>{esc(t.words)}</small>" if label is None and t and t.words else ""
    if label is None:
        label = t.label if t else str(name)
    title = f' title="{esc(t.gloss)}"' if t and t.gloss else ""
    cls = f' class="{css}"' if css else ""
    return f"<th{cls}{title}>{esc(label)}{words}</th>"


def table(df: pd.DataFrame, css: str = "", text_columns: Iterable[str] = (),
          row_css: Iterable[str] | None = None, labels: dict[str, str] | None = None,
          percent: Iterable[str] = ()) -> str:
    """An HTML table of ``df``: headers through the glossary (or ``labels``), numbers
    right-aligned and formatted (`fmt`), ``text_columns`` (and object columns) left-
    aligned; ``row_css`` gives each row a class (``unranked``); shares of records (by
    their glossary unit, or named in ``percent``) as percents."""
    text = set(text_columns) | {c for c in df.columns if df[c].dtype == object
                                and not all(isinstance(v, (int, float, np.number))
                                            for v in df[c].dropna())}
    head = [header_cell(c, "text" if c in text else "", (labels or {}).get(c))
            for c in df.columns]
    rows = []
    classes = list(row_css) if row_css is not None else [""] * len(df)
    # a share of the records reads as a percent
    shares = {c for c in df.columns if c not in text and (t := term(c)) is not None
              and t.unit == "share of records"} | set(percent)

    def show(c, v):
        if c in shares and isinstance(v, (float, np.floating)) and np.isfinite(v):
            return f"{100 * float(v):.3g} %"
        return fmt(v)
    for (_, r), rc in zip(df.iterrows(), classes):
        cells = "".join(f'<td class="text">{esc(show(c, r[c]))}</td>' if c in text
                        else f"<td>{esc(show(c, r[c]))}</td>" for c in df.columns)
        rows.append(f'<tr class="{rc}">{cells}</tr>' if rc else f"<tr>{cells}</tr>")
    cls = f' class="{css}"' if css else ""
    return (f'<div class="scroll"><table{cls}><thead><tr>{"".join(head)}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def figure(path, caption: str = "") -> str:
    """A figure from a PNG or SVG file, embedded (a ``data:`` URI / the SVG inline)."""
    path = Path(path)
    data = path.read_bytes()
    alt = esc(caption or path.stem)
    if path.suffix.lower() == ".svg":
        body = data.decode("utf-8")
        body = body[body.find("<svg"):]
    else:
        b64 = base64.b64encode(data).decode("ascii")
        body = f'<img src="data:image/png;base64,{b64}" alt="{alt}">'
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f"<figure>{body}{cap}</figure>"


def paragraph(text: str, css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return f"<p{cls}>{esc(text)}</p>"


def bullets(items: Iterable[str], css: str = "notes") -> str:
    items = list(items)
    if not items:
        return ""
    return f'<ul class="{css}">' + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>"


def heading(text: str, level: int = 3) -> str:
    return f"<h{level}>{esc(text)}</h{level}>"


def releases_shown(values) -> list[str]:
    """Release specs as people read them (`release_label`)."""
    return [release_label(v) for v in values]


@dataclass
class Section:
    """One part of a page: a job's or a command's result (module docstring)."""

    title: str
    answer: str = ""
    blocks: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    anchor: str = ""

    def add(self, *blocks: str) -> "Section":
        self.blocks.extend(b for b in blocks if b)
        return self

    def add_table(self, df: pd.DataFrame, caption: str = "", **kw) -> "Section":
        """A table, its columns kept for the glossary."""
        if df is None or df.empty:
            return self
        self.terms.extend(str(c) for c in df.columns)
        if caption:
            self.blocks.append(paragraph(caption, "muted"))
        self.blocks.append(table(df, **kw))
        return self

    def add_figures(self, files: Iterable[Path], captions: dict[str, str] | None = None
                    ) -> "Section":
        for f in files:
            f = Path(f)
            if f.suffix.lower() in (".png", ".svg") and f.is_file():
                self.blocks.append(figure(f, (captions or {}).get(f.name, "")))
        return self

    def html(self, level: int = 2) -> str:
        anchor = f' id="{esc(self.anchor)}"' if self.anchor else ""
        out = [f"<section{anchor}><h{level}>{esc(self.title)}</h{level}>"]
        if self.answer:
            out.append(f'<p class="answer">{esc(self.answer)}</p>')
        out += self.blocks
        if self.notes:
            out += [heading("What was assumed or fitted", level + 1), bullets(self.notes)]
        data_files = [f for f in self.files if Path(f).suffix.lower() not in (".png", ".svg")]
        if data_files:
            links = ", ".join(f'<a href="{esc(Path(f).name)}">{esc(Path(f).name)}</a>'
                              for f in data_files)
            out.append(f'<p class="muted">Result files: {links}</p>')
        out.append("</section>")
        return "".join(out)


def run_inputs(dataset=None, extra: dict | None = None) -> dict[str, str]:
    """The inputs block: the data set and its roles, the settings, the versions (no
    record, no path outside what the user gave)."""
    import sdceval
    out: dict[str, str] = {}
    if dataset is not None:
        s = dataset.schema
        out["data set"] = f"{dataset.name} ({dataset.n:,} records)"
        roles = [(r, s.names(r)) for r in ("qi", "sensitive", "numeric", "label")]
        out["column roles"] = "; ".join(f"{r}: {', '.join(c)}" for r, c in roles if c) \
            or "none"
    for k, v in (extra or {}).items():
        if v is not None and v != "":
            out[k] = v if isinstance(v, str) else fmt(v)
    import numpy
    out["versions"] = (f"sdceval {sdceval.__version__}, Python {platform.python_version()}, "
                       f"numpy {numpy.__version__}, pandas {pd.__version__}")
    prog = Path(sys.argv[0]).name if sys.argv else ""
    if prog in ("sdceval", "__main__.py") and "pytest" not in sys.argv[0]:
        out["command"] = " ".join(["sdceval", *sys.argv[1:]])
    out["written"] = time.strftime("%Y-%m-%d %H:%M %Z")
    return out


def page(title: str, sections: list[Section], inputs: dict[str, str], lead: str = "",
         answer: str = "") -> str:
    """The whole page: title, the answer, a contents list when there are several
    sections, the sections, the inputs and the glossary of every term shown."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{esc(title)}</h1>"]
    if lead:
        parts.append(paragraph(lead, "lead"))
    first = answer or (sections[0].answer if len(sections) == 1 else "")
    if first and len(sections) != 1:
        parts.append(f'<p class="answer">{esc(first)}</p>')
    if len(sections) > 1:
        for i, s in enumerate(sections):
            s.anchor = s.anchor or f"job{i}"
        parts.append("<nav><h2>Contents</h2><ol>" + "".join(
            f'<li><a href="#{esc(s.anchor)}">{esc(s.title)}</a>'
            + (f' <span class="muted">— {esc(s.answer)}</span>' if s.answer else "")
            + "</li>" for s in sections) + "</ol></nav>")
    parts += [s.html() for s in sections]
    parts.append("<section><h2>Inputs</h2><dl class=\"inputs\">" + "".join(
        f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in inputs.items()) + "</dl>"
        "<p class=\"muted\">This report holds aggregates only (measures, parameters, "
        "counts and figures of them), never a record.</p></section>")
    terms = glossary(t for s in sections for t in s.terms)
    if terms:
        parts.append("<section><h2>Glossary</h2><dl class=\"glossary\">" + "".join(
            f"<dt>{esc(t.label)}"
            + (f' <span class="muted">({esc(t.words)})</span>' if t.words else "")
            + f"</dt><dd>{esc(t.gloss) or '–'}</dd>" for t in terms) + "</dl></section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_page(path, title: str, sections: list[Section], inputs: dict[str, str],
               lead: str = "", answer: str = "") -> Path:
    """Write the page atomically (`sdceval.core.fileio.write_text`)."""
    return write_text(page(title, sections, inputs, lead, answer), Path(path))


__all__ = ["CSP", "Section", "esc", "figure", "fmt", "page", "run_inputs", "table",
           "write_page"]
