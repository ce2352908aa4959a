"""The report a person reads (issue #27): record ids, the reason's first sentence with its
steps folded under it, shared notes said once, a summary with the top advice, and the
card of one query in Jupyter (``Analysis._repr_html_``).

Every report here is written by ``cqsens report`` over the examples (a folder, and the
query log ``examples/logs/tpch.jsonl``), beside its JSON form from the same run options;
the expected values are computed from the JSON rows, not written down.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import cqsens
import cqsens.batch
from cqsens.batch import BatchResult
from cqsens.cli import cli
from cqsens.report.common import split_reason

ROOT = Path(__file__).resolve().parent.parent
HOSPITAL = ROOT / "examples" / "hospital"
LOG = ROOT / "examples" / "logs" / "tpch.jsonl"

_VOID = {"meta", "br", "hr", "img", "input", "link", "rect", "line", "circle", "path",
         "polygon", "ellipse", "polyline", "stop", "use"}


class _Tree(HTMLParser):
    """Checks that every element is closed in order, and keeps tags and text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _tree(page: str) -> _Tree:
    tree = _Tree()
    tree.feed(page)
    tree.close()
    return tree


def _report(tmp_path: Path, source: Path, suffix: str) -> str:
    out = tmp_path / f"report{suffix}"
    done = CliRunner().invoke(cli, ["report", str(source), "-o", str(out), "--force"])
    assert done.exit_code == 0, done.output
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def hospital(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``cqsens report examples/hospital`` as JSON, HTML and Markdown: the folder is
    analysed by the first command, the other two render that same analysis (the three
    commands ask for the same inputs and settings)."""
    tmp = tmp_path_factory.mktemp("hospital")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cqsens.batch, "analyze_paths", _analysed_once(cqsens.batch.analyze_paths))
        return {"json": json.loads(_report(tmp, HOSPITAL, ".json")),
                "html": _report(tmp, HOSPITAL, ".html"), "md": _report(tmp, HOSPITAL, ".md")}


def _analysed_once(analyze_paths: Callable[..., BatchResult]) -> Callable[..., BatchResult]:
    """``analyze_paths`` that analyses each (inputs, options) once and returns that result
    again, under the later call's command line."""
    seen: dict[str, BatchResult] = {}

    def once(inputs: tuple[str, ...], *, command: str = "", **options: Any) -> BatchResult:
        key = repr((tuple(inputs), sorted(options.items())))
        if key not in seen:
            seen[key] = analyze_paths(inputs, command=command, **options)
        return replace(seen[key], command=command)
    return once


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``cqsens report examples/logs/tpch.jsonl`` as streamed rows, HTML and Markdown."""
    tmp = tmp_path_factory.mktemp("log")
    rows = [json.loads(line) for line in _report(tmp, LOG, ".jsonl").splitlines()]
    return {"rows": rows, "html": _report(tmp, LOG, ".html"), "md": _report(tmp, LOG, ".md")}


def _verdicts(rows: list[dict[str, Any]]) -> Counter[str]:
    return Counter("unbounded" if r["status"] == "ok" and r["upper"] == "inf" else
                   "bounded" if r["status"] == "ok" else r["status"] for r in rows)


def _declarations(suggestions: list[str]) -> list[str]:
    """What each suggestion of a JSON row asks to declare, in order (the test's own reading)."""
    found: list[str] = []
    for text in suggestions:
        for head in ("To bound it, declare ", "Or instead, declare "):
            if text.startswith(head):
                declared = "declare " + text[len(head):].split(" (")[0]
                if declared not in found:
                    found.append(declared)
    return found


def _top(rows: list[dict[str, Any]]) -> tuple[str, int]:
    """The declaration that the most unbounded rows are advised (the first one on ties)."""
    counts: Counter[str] = Counter()
    for row in rows:
        if row["status"] == "ok" and row["upper"] == "inf":
            analysis = row.get("analysis") or {}
            counts.update(_declarations(analysis.get("suggestion") or [row["suggestion"] or ""]))
    best = max(counts, key=lambda d: counts[d])  # Counter keeps first-seen order
    return best, counts[best]


# ----------------------------------------------------------------------------- summary


def test_summary_counts_and_top_advice_of_a_folder(hospital: dict[str, Any]) -> None:
    rows = hospital["json"]["rows"]
    counts = _verdicts(rows)
    advice, many = _top(rows)
    assert (counts["bounded"], counts["unbounded"]) == (9, 3)  # examples/hospital today
    expected = (f"{len(rows)} queries: {counts['bounded']} bounded, {counts['unbounded']} "
                f"unbounded, {counts['error']} refused (error). Top advice: {advice}, "
                f"proposed for {many} of the {counts['unbounded']} unbounded queries.")
    page = _tree(hospital["html"])
    overview = re.search(r'<p class="overview" id="overview">(.*?)<span', hospital["html"])
    assert overview is not None
    import html as html_module

    assert html_module.unescape(overview.group(1)) == expected
    # the overview comes first, before the options and the table
    assert hospital["html"].index('id="overview"') < hospital["html"].index('id="results"')
    assert page.errors == [] and page.stack == []
    # the advice is one that each of the unbounded queries is given, and it bounds them all
    assert advice == "declare Pat[hos->id]" and many == counts["unbounded"]
    assert f"**{expected.replace('*', chr(92) + '*')}**" in hospital["md"]


def test_summary_of_a_log_counts_records(log: dict[str, Any]) -> None:
    rows = log["rows"]
    counts = _verdicts(rows)
    text = "".join(_tree(log["html"]).text)
    assert (f"{len(rows)} records: {counts['bounded']} bounded, {counts['unbounded']} "
            f"unbounded, {counts['error']} refused (error).") in text
    assert counts["error"] >= 1 and counts["unbounded"] >= 1
    # the streamed rows carry no analysis object: their one suggestion each
    advice, many = _top(rows)
    assert f"Top advice: {advice}, proposed for {many} of the {counts['unbounded']}" in text


# ----------------------------------------------------------------------------- record ids


def test_log_reports_name_records_by_id(log: dict[str, Any]) -> None:
    rows = log["rows"]
    page = _tree(log["html"])
    table = [a for t, a in page.tags if t == "tr" and "row" in (a.get("class") or "")]
    assert [a["data-id"] for a in table] == [r["id"] for r in rows]  # one shape per record
    cells = re.findall(r'<td class="file" data-sort="([^"]*)"><a href="#q-\d+" '
                       r'title="([^"]*)">([^<]*)</a><span class="where">([^<]*)</span>',
                       log["html"])
    assert [(c[0], c[1], c[2], c[3]) for c in cells] == [
        (r["id"], r["file"], r["id"], r["file"]) for r in rows]
    assert all(re.fullmatch(r".*tpch\.jsonl:\d+", r["file"]) for r in rows)
    assert '<th data-type="text" scope="col"><button type="button">Record</button>' \
        in log["html"]
    md = log["md"]
    for i, row in enumerate(rows, start=1):
        assert f"| {i} | `{row['id']}` |" in md
        assert f"### {i}. `{row['id']}` (" in md
        assert f"Read from `{row['file']}`." in md
    assert "| # | Record |" in md


def test_folder_reports_keep_file_names(hospital: dict[str, Any]) -> None:
    rows = hospital["json"]["rows"]
    assert all("id" not in r for r in rows)
    assert '<button type="button">File</button>' in hospital["html"]
    for i, row in enumerate(rows, start=1):
        assert f'<a href="#q-{i}">{row["file"]}</a></td>' in hospital["html"]


# ----------------------------------------------------------------------------- reasons


def test_reason_first_sentence_with_steps_folded(hospital: dict[str, Any]) -> None:
    rows = hospital["json"]["rows"]
    page = hospital["html"]
    cells = re.findall(r'<td class="reason">(.*?)</td>', page, re.S)
    assert len(cells) == len(rows)
    folded = 0
    import html as html_module

    for cell, row in zip(cells, rows, strict=True):
        headline, steps = split_reason(row["reason"])
        shown = re.search(r'<span class="headline">(.*?)</span>', cell)
        assert shown is not None and html_module.unescape(shown.group(1)) == headline
        items = [html_module.unescape(s) for s in re.findall(r"<li>(.*?)</li>", cell)]
        assert items == steps
        if steps:
            folded += 1
            assert "<details class=\"steps\">" in cell and "<details class=\"steps\" open" \
                not in cell
        # the wall of trivial steps is folded, never in the headline
        assert "holds every counted column" not in headline
    assert folded == len(rows)  # every hospital reason has steps under its first sentence
    avg = next(r for r in rows if r["file"].endswith("avg_age_by_sex.sql"))
    assert split_reason(avg["reason"])[0] == "changes AVG(age) by at most 60"
    md_table = [line for line in hospital["md"].splitlines() if line.startswith("| ")]
    for row in rows:
        headline, steps = split_reason(row["reason"])
        line = next(x for x in md_table if f"`{row['file']}`" in x)
        assert f"| {headline.replace('*', chr(92) + '*')} |" in line.replace("&lt;", "<")
        assert not any(step in line for step in steps)
    assert "Steps:\n\n1. " in hospital["md"]


@given(st.lists(st.text(alphabet="ab ():;[]'", min_size=1, max_size=12), min_size=1,
                max_size=6))
def test_split_reason_keeps_every_character(parts: list[str]) -> None:
    reason = "; ".join(parts)
    headline, steps = split_reason(reason)
    # the pieces are the reason's text, in order, with only separators between them
    pattern = re.escape(headline) + "".join("(?:; |: )+" + re.escape(step) for step in steps)
    assert all(steps) and re.fullmatch(pattern + "(?:; |: )*", reason.strip())


# ----------------------------------------------------------------------------- notes


def test_repeated_notes_said_once(log: dict[str, Any], tmp_path: Path) -> None:
    # the log's analyses carry their notes: the HTML report of the log has them
    page = log["html"]
    sections = re.findall(r'<section class="query.*?</section>', page, re.S)
    notes_section = re.search(r'<h2 id="notes">Notes</h2>.*?</ul>', page, re.S)
    assert notes_section is not None
    import html as html_module

    shared = [html_module.unescape(n) for n in
              re.findall(r"<li>(.*?) <span class=\"meta\">", notes_section.group())]
    assert any("table customer has no primary key" in n for n in shared)
    # the notes of the analyses in the JSON report of the same log, counted per record
    batch = json.loads(_report(tmp_path, LOG, ".json"))
    per_note = Counter(n for r in batch["rows"] if isinstance(r.get("analysis"), Mapping)
                       for n in set(r["analysis"]["notes"]) for _ in range(r["records"]))
    repeated = {n for n, k in per_note.items() if k > 1}
    assert repeated and set(shared) == repeated
    text = html_module.unescape(page)
    for note in repeated:
        assert text.count(note) == 1  # once in the page, not on every row
        queries = re.search(re.escape(note) + r' <span class="meta">\((\d+) records: ', text)
        assert queries is not None and int(queries.group(1)) == per_note[note]
    for section in sections:
        for note in repeated:
            assert note not in html_module.unescape(section)
    md = log["md"]
    assert "## Notes" in md
    for note in repeated:
        escaped = note.replace("*", "\\*").replace("<", "&lt;")
        assert md.count(escaped) == 1


# ----------------------------------------------------------------------------- notebook


def test_analysis_repr_html_is_the_report_card() -> None:
    analysis = cqsens.analyze(str(HOSPITAL / "ny_patients.sql"),
                              schema=str(HOSPITAL / "schema.sql"))
    card = analysis._repr_html_()
    tree = _tree(card)
    assert tree.errors == [] and tree.stack == []
    assert card.startswith('<div class="cqsens-card"><style>')
    text = "".join(tree.text)
    assert "upper ∞" in text  # the bound, as the report's facts show it
    headline, steps = split_reason(analysis.reason())
    assert headline.endswith("can create unboundedly many answers")
    assert headline in text and all(step in text for step in steps)
    assert analysis.suggestion[0] in text
    # every style rule applies inside the card only
    style = re.search(r"<style>(.*?)</style>", card, re.S)
    assert style is not None
    for rule in style.group(1).split("}"):
        if "{" in rule:
            assert all(sel.strip().startswith(".cqsens-card")
                       for sel in rule.split("{")[0].split(","))
    # the same card as in the HTML report of the same query
    from cqsens.report.html import query_card, to_html

    page = to_html({"rows": [analysis.report_row()]})
    assert query_card(1, analysis.report_row(), back=False) in card
    section = re.search(r'<section class="query.*?</section>', page, re.S)
    assert section is not None
    assert section.group().replace(
        '<p class="back"><a href="#row-1">back to the table</a></p>', "") in card


def test_repr_html_of_a_bounded_analysis_shows_its_bound() -> None:
    analysis = cqsens.analyze(str(HOSPITAL / "oncology.sql"), schema=str(HOSPITAL / "schema.sql"),
                              cds=["PatDoc[1->2]<=3"])
    card = analysis._repr_html_()
    text = "".join(_tree(card).text)
    assert analysis.upper == 3 and "upper 3" in text
    assert 'class="badge bounded"' in card
    assert split_reason(analysis.reason())[0] in text
