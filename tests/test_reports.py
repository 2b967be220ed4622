"""The HTML reports and the console output people read (issue 20): one self-contained
page beside every result, the answer first, display names and direction words, a
glossary of every term shown, aggregates only; console lines within 100 columns."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from reports import markers, shared_reports


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return shared_reports(tmp_path_factory)


KINDS = ("compare", "tradeoff", "vectors", "pbg", "lattice", "run")


class _Page(HTMLParser):
    """What a test needs of a page: header cells with/without a gloss, image sources,
    scripts, answer paragraphs, glossary entries."""

    def __init__(self):
        super().__init__()
        self.th, self.srcs, self.scripts, self.answers, self.dts = [], [], 0, [], []
        self._in = None
        self._text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag in ("img", "source", "iframe", "embed", "link", "audio", "video"):
            self.srcs.append(a.get("src") or a.get("href") or "")
        if tag == "th" or (tag == "p" and a.get("class") == "answer") or tag == "dt":
            self._in, self._text, self._attrs = tag if tag != "p" else "answer", [], a

    def handle_data(self, data):
        if self._in:
            self._text.append(data)

    def handle_endtag(self, tag):
        name = {"th": "th", "p": "answer", "dt": "dt"}.get(tag)
        if self._in and name == self._in:
            text = "".join(self._text).strip()
            if self._in == "th":
                self.th.append((text, "title" in self._attrs))
            elif self._in == "answer":
                self.answers.append(text)
            else:
                self.dts.append(text)
            self._in = None


def _page(report) -> tuple[str, _Page]:
    text = report.html.read_text(encoding="utf-8")
    p = _Page()
    p.feed(text)
    return text, p


@pytest.mark.parametrize("kind", KINDS)
def test_every_command_writes_a_self_contained_report_and_says_so(reports, kind):
    r = reports[kind]
    assert r.html.is_file()
    assert r.stdout.rstrip().endswith(f"report: {r.html}")
    text, page = _page(r)
    # nothing is fetched from anywhere: no http(s) resource, every figure a data: URI,
    # no script, and a policy that makes the browser refuse anything else
    assert not re.search(r"https?://", text)
    assert page.scripts == 0
    assert all(s.startswith("data:image/png;base64,") for s in page.srcs)
    # every kind but the lattice search has figures (its answer is one node)
    assert page.srcs or kind == "lattice"
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert text.count("<h1>") == 1 and "<h2>Inputs</h2>" in text
    assert "<h2>Glossary</h2>" in text


@pytest.mark.parametrize("kind", KINDS)
def test_the_report_opens_with_the_answer_and_shows_no_record(reports, kind, tmp_path):
    r = reports[kind]
    text, page = _page(r)
    assert page.answers and len(page.answers[0]) > 40
    # the console's first line is the page's answer (for run, each job's)
    first = " ".join(r.stdout.split("\n\n")[0].split())
    if kind == "run":
        assert all(" ".join(a.split()) in " ".join(r.stdout.split())
                   for a in page.answers[1:])
    else:
        assert " ".join(page.answers[0].split()) == first
    for marker in markers(r.html.parents[1] / "data" if kind == "lattice"
                          else r.html.parents[1] / "data"):
        assert marker not in text, f"{marker!r}: a record's value in the {kind} report"


@pytest.mark.parametrize("kind", KINDS)
def test_every_header_is_a_display_name_with_its_gloss(reports, kind):
    _, page = _page(reports[kind])
    internal = {"rank_swap", "multiplicative_noise", "reidentification_rate", "p_loss",
                "u_loss", "query_error", "linkage_risk", "p_binary_12", "ce_mean_mean",
                "rr_unit_archive_mean", "log_p_hv_12", "share_better_first"}
    heads = [h for h, _ in page.th]
    assert not internal & set(heads), heads
    # a header without a gloss is one the section named itself (rank, level, ours, ...)
    unexplained = [h for h, glossed in page.th if not glossed]
    assert all(len(h) < 50 for h in unexplained)
    # every glossed header's term is in the glossary
    glossary = " ".join(page.dts)
    for h, glossed in page.th:
        if glossed and "," not in h and " rank" not in h:
            name = h.removeprefix("matched risk: ")
            assert name.split(" (")[0].split("higher")[0].strip()[:20] in glossary, h


def test_every_column_a_report_shows_has_a_term(reports):
    """No jargon without a gloss: every name a section shows is in the glossary
    mapping (sdceval.core.glossary), rebuilt here from the sections themselves."""
    import pickle  # noqa: F401  (the sections are rebuilt from the result files below)
    from sdceval.core.glossary import unknown_terms
    for kind in ("compare", "tradeoff"):
        text = reports[kind].html.read_text(encoding="utf-8")
        assert "<dt>" in text
    # the contract over the registries: every method, measure, model, objective and
    # property has a display name different from nothing, and no table column of the
    # comparison, trade-off, vectors or PBG tables is unknown
    import sdceval.catalog  # noqa: F401
    import sdceval.pbg.study  # noqa: F401
    import sdceval.vectors.comparison  # noqa: F401
    columns = ["method", "parameter", "value", "risk", "risk_lo", "risk_hi", "bracketed",
               "evaluations", "reidentification_rate", "reidentification_rate_any",
               "linkage_risk(scale=fitted_per_attribute)", "rank_propensity", "emd_lo",
               "model", "classes", "p_loss", "u_loss", "query_error", "release",
               "property", "relation", "n_compared", "share_better_first",
               "share_better_second", "p_binary_12", "p_cov_21", "p_spr_12", "log_p_hv_21",
               "archive_mean", "nodes_evaluated_var", "ce_mean", "ce_mean_mean", "rr_mean",
               "rr_unit_archive_mean", "seconds_var", "glm", "s_k", "l_distinct", "k",
               "suppressed", "level_age"]
    assert unknown_terms(columns) == []


def test_every_registered_name_has_a_display_name_and_direction():
    from sdceval.catalog import METHODS, MEASURES
    from sdceval.core.glossary import direction_words, display_name, term
    for name, spec in METHODS.items():
        assert spec.label, f"method {name!r} has no display name"
        assert display_name(name) == spec.label
    for name in MEASURES:
        t = term(name)
        assert t.label and t.gloss, name
        assert direction_words(name).startswith("higher = "), name


@pytest.mark.parametrize("kind", KINDS)
def test_console_output_fits_in_100_columns(reports, kind):
    lines = reports[kind].stdout.splitlines()
    too_wide = [line for line in lines if len(line) > 100 and not line.startswith("files:")]
    assert not too_wide, too_wide[:3]


def test_compare_report_ranks_with_intervals_and_names_the_risk_direction(reports):
    text, page = _page(reports["compare"])
    assert "95 % interval" in text or "95 % intervals" in text
    # values with their intervals, the matched risk with its direction in words
    assert re.search(r"\d \[\S+, \S+\]", text)
    assert "higher = riskier" in text
    assert any("Mondrian (all keys)" in a for a in page.answers)   # whole-file strategies
    assert "What was assumed or fitted" in text


def test_run_report_links_its_jobs_and_their_files(reports):
    text, page = _page(reports["run"])
    assert '<nav><h2>Contents</h2>' in text
    assert 'href="#comparison0_p"' in text and 'id="comparison0_p"' in text
    assert 'href="comparison0_p_ranking.csv"' in text
    assert (reports["run"].html.parent / "comparison0_p_ranking.csv").is_file()


def test_tradeoff_figures_are_titled_for_what_they_plot(reports):
    """The query-error trade-off plot was titled "P_loss vs U_loss" (issue 20 Why)."""
    from sdceval.experiments.plots import _tradeoff_figure  # noqa: F401
    import pandas as pd
    from sdceval.compare.tradeoff import TradeoffResult
    from sdceval.experiments.tradeoff import write_tradeoff
    points = pd.DataFrame({"model": ["k", "k"], "value": [5, 10], "method": ["mondrian"] * 2,
                           "p_loss": [0.3, 0.2], "u_loss": [0.01, 0.02],
                           "query_error": [10.0, 20.0], "classes": [40, 20]})
    res = TradeoffResult(points, points, ["p_loss", "u_loss", "query_error"], "t", data="d")
    titles = {}
    import sdceval.experiments.tradeoff as tr
    original = tr.plot_tradeoff

    def spy(data, path, **kw):
        titles[path.name] = kw["title"]
        return original(data, path, **kw)
    tr.plot_tradeoff = spy
    try:
        write_tradeoff(res, reports["tradeoff"].html.parent / "spy")
    finally:
        tr.plot_tradeoff = original
    assert titles["tradeoff_query_error.png"].startswith("d: query error (%) against")
    assert "U_loss" not in titles["tradeoff_query_error.png"]
    assert titles["tradeoff.png"].startswith("d: aggregate utility loss (U_loss) against")


# -- issue 27 item 14: the vectors and PBG reports open with one answer and the table a
# person acts on ------------------------------------------------------------------------
class _Tables(HTMLParser):
    """The answer paragraphs and, in page order, every table's header texts and rows."""

    def __init__(self):
        super().__init__()
        self.answers, self.tables, self.order = [], [], []
        self._cell = self._answer = None

    def handle_starttag(self, tag, attrs):
        if tag == "p" and dict(attrs).get("class") == "answer":
            self._answer = []
        elif tag == "table":
            self.tables.append({"head": [], "rows": []})
            self.order.append(("table", len(self.tables) - 1))
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("th", "td"):
            self._cell = []

    def handle_data(self, data):
        for buf in (self._cell, self._answer):
            if buf is not None:
                buf.append(data)

    def handle_endtag(self, tag):
        if tag == "p" and self._answer is not None:
            self.answers.append(" ".join("".join(self._answer).split()))
            self.order.append(("answer", len(self.answers) - 1))
            self._answer = None
        elif tag in ("th", "td") and self._cell is not None:
            text = " ".join("".join(self._cell).split())
            (self.tables[-1]["head"] if tag == "th" else self._row).append(text)
            self._cell = None
        elif tag == "tr" and getattr(self, "_row", None):
            self.tables[-1]["rows"].append(self._row)
            self._row = []


def _first_table_after_answer(html_path) -> tuple[str, dict]:
    page = _Tables()
    page.feed(html_path.read_text(encoding="utf-8"))
    i = next(n for n, (kind, _) in enumerate(page.order) if kind == "answer")
    table = next(page.tables[j] for kind, j in page.order[i:] if kind == "table")
    return page.answers[0], table


def _sentences(text: str) -> int:
    """Sentence ends: a full stop, question or exclamation mark before a space or the end
    (not a decimal point)."""
    return len(re.findall(r"[.!?](?=\s|$)", text))


@pytest.fixture(scope="module")
def four_releases(tmp_path_factory, reports):
    """A vectors report of four releases (six pairs: the report opened with six run-on
    sentences, one per pair)."""
    from reports import _run
    root = reports["vectors"].html.parents[1]
    out = tmp_path_factory.mktemp("vectors4")
    data = ["--data", str(root / "data" / "p.csv"), "--schema",
            str(root / "data" / "schema.toml")]
    stdout = _run(["vectors", *data, *[a for r in ("mondrian:k=5", "generalization:k=5",
                                                   "bucketization:k=5", "mdav:k=5")
                                       for a in ("--release", r)], "--out", str(out)])
    return out / "report.html", stdout


@pytest.mark.parametrize("which", ["two", "four"])
def test_vectors_report_opens_with_one_sentence_and_the_releases_best_first(
        reports, four_releases, which):
    html = reports["vectors"].html if which == "two" else four_releases[0]
    answer, table = _first_table_after_answer(html)
    assert _sentences(answer) == 1 and answer.endswith("."), answer
    assert answer[0].isupper() and "leaves the fewest records worse off" in answer
    # one row per release, best first, one column per property and the ranking's key
    n = 2 if which == "two" else 4
    assert len(table["rows"]) == n, table
    assert table["head"][0] == "release"
    assert "mean over the properties" in table["head"] and "dominated by" in table["head"]
    assert "class size" in table["head"]
    means = [float(r[table["head"].index("mean over the properties")].rstrip(" %"))
             for r in table["rows"]]
    assert means == sorted(means)
    assert table["rows"][0][0][1:] in answer  # its first letter capitalized there


def test_vectors_console_opens_with_the_same_answer(four_releases):
    html, stdout = four_releases
    answer, _ = _first_table_after_answer(html)
    assert " ".join(stdout.split("\n\n")[0].split()) == answer


def test_pbg_report_opens_with_the_generalizations_found(reports):
    import pandas as pd
    r = reports["pbg"]
    answer, table = _first_table_after_answer(r.html)
    assert _sentences(answer) == 1 and answer.endswith("."), answer
    assert "age at level" in answer and "sex at level" in answer
    # rows are generalizations: one column per quasi-identifier, then the objectives
    assert table["head"][:2] == ["level of age", "level of sex"], table["head"]
    assert any(h.startswith("k-anonymity") for h in table["head"])
    assert any(h.startswith("generalization loss") for h in table["head"])
    found = pd.read_csv(r.html.parent / "generalizations.csv")
    assert len(table["rows"]) == len(found) > 0
    # best first by the stated rule, and none beats another on both objectives
    assert found["distance"].is_monotonic_increasing
    k, glm = found["k"].to_numpy(), found["glm"].to_numpy()
    assert not any((k[j] >= k[i]) and (glm[j] <= glm[i]) and (k[j], glm[j]) != (k[i], glm[i])
                   for i in range(len(found)) for j in range(len(found)))
    first = found.iloc[0]
    assert f"age at level {first['level_age']}" in answer
    assert "distance to the ideal" in r.html.read_text(encoding="utf-8")


@pytest.mark.slow  # over 1.5 s: the whole suite runs it
def test_vectors_answer_is_the_same_from_the_results_store(reports, tmp_path):
    """The releases' order is read from stored data (the unary table's directions), so a
    resumed run says what the run that computed it said."""
    from reports import _run
    data = reports["vectors"].html.parents[1] / "data"
    path = tmp_path / "v.toml"
    path.write_text(f'[[vectors]]\ndata = "{(data / "p.csv").as_posix()}"\n'
                    f'schema = "{(data / "schema.toml").as_posix()}"\n'
                    'releases = ["mondrian:k=5", "generalization:k=5", "bucketization:k=5"]\n')
    answers = []
    for _ in range(2):  # computed, then read back from the store
        _run(["run", str(path), "--out", str(tmp_path / "out")])
        answers.append(_first_table_after_answer(tmp_path / "out" / "report.html"))
    assert answers[0] == answers[1]
    head, rows = answers[0][1]["head"], answers[0][1]["rows"]
    # bucketization loses no information: no release serves a record better on GLM
    glm = head.index("generalization loss (GLM)")
    assert next(r for r in rows if r[0] == "bucketization k = 5")[glm] == "0 %"
