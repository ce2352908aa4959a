"""Tests of the batch report renderers (HTML, Markdown) and of the structure drawings.

The batches are built from real analyses of ``examples/hospital`` and of a few
CQs, plus an error row and a timeout row made by hand.  The last tests open the
HTML page in headless Chromium: the rows and drawings must be rendered, the
table must sort when a header is clicked, and a screenshot must be taken.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import cqsens
from cqsens.batch import row_for
from cqsens.pipeline import Analysis
from cqsens.report.common import split_reason
from cqsens.report.drawing import draw_structure
from cqsens.report.html import to_html
from cqsens.report.markdown import to_markdown

ROOT = Path(__file__).resolve().parent.parent
HOSPITAL = ROOT / "examples" / "hospital"
SCHEMA = HOSPITAL / "schema.sql"
HOSPITAL_QUERIES = (
    "doctors_with_patients.sql",
    "female_patients.sql",
    "ny_patients.sql",
    "oncology.sql",
    "patients_per_doctor_link.sql",
    "same_hospital_pairs.sql",
)

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

ERROR_TEXT = "examples/bad<1>.sql:3:7: unsupported construct <UNION> [UNION]"
NASTY_FILE = "examples/<script>alert(1)</script>.sql"


# ----------------------------------------------------------------------------- batch


def _analyze(source: str, **kw: Any) -> Analysis:
    return cqsens.analyze(source, epsilon=1.0, delta=1e-6, **kw)


def _row(file: str, analysis: Analysis) -> dict[str, Any]:
    """A batch row of status ``ok``, exactly as ``cqsens report`` writes it."""
    return row_for(Path(file), analysis)


def _make_batch() -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for path in (HOSPITAL / name for name in HOSPITAL_QUERIES):
        rel = str(path.relative_to(ROOT))
        rows.append(_row(rel, _analyze(str(path), schema=str(SCHEMA))))
    rows.append(_row(
        "examples/hospital/oncology.sql (with PatDoc[1->2]<=3)",
        _analyze(str(HOSPITAL / "oncology.sql"), schema=str(SCHEMA), cds=["PatDoc[1->2]<=3"]),
    ))
    rows.append(_row("inline/path.cq", _analyze("Q(x) :- R(x,y), S(y,z)")))
    rows.append(_row(
        "inline/less|than.cq",
        _analyze("Q(x, y) :- R(x, z), S(z, y), T(y, 'a<b'), U(x, y, z)"),
    ))
    rows.append(_row(
        "inline/steps.cq",
        _analyze("Q(x,w) :- R(x,y), S(y,z), T(z,w), V(x,w)",
                 cds=["R[1->2]<=2", "S[1->2]<=3", "T[1->2]<=4", "V[2->1]<=5"]),
    ))
    rows.append({"file": "examples/bad<1>.sql", "status": "error", "error": ERROR_TEXT,
                 "aggregate": None, "upper": None, "lower": None, "tight": None,
                 "reason": None, "suggestion": None, "noise": None, "analysis": None})
    rows.append({"file": NASTY_FILE, "status": "timeout", "error": "timed out after 10 s",
                 "aggregate": None, "upper": None, "lower": None, "tight": None,
                 "reason": None, "suggestion": None, "noise": None, "analysis": None})
    ok = [r for r in rows if r["status"] == "ok"]
    buckets = {"0": 0, "1": 0, "2-10": 0, "11-1000": 0, ">1000": 0, "inf": 0}
    for r in ok:
        u = r["upper"]
        key = ("inf" if u == "inf" else "0" if u == 0 else "1" if u == 1 else "2-10" if u <= 10
               else "11-1000" if u <= 1000 else ">1000")
        buckets[key] += 1
    return {
        "title": "cqsens report",
        "generated": "2026-11-22T19:30:00Z",
        "command": "cqsens report examples/ --schema examples/hospital/schema.sql --epsilon 1",
        "options": {"schema": "examples/hospital/schema.sql", "neighbor": "add-remove",
                    "epsilon": 1.0, "delta": 1e-6},
        "summary": {
            "total": len(rows),
            "bounded": sum(1 for r in ok if r["upper"] != "inf"),
            "unbounded": sum(1 for r in ok if r["upper"] == "inf"),
            "errors": 1,
            "timed_out": 1,
            "tight": sum(1 for r in ok if r["tight"]),
            "bounds": buckets,
        },
        "rows": rows,
    }


@pytest.fixture(scope="module")
def batch() -> dict[str, Any]:
    return _make_batch()


@pytest.fixture(scope="module")
def page(batch: dict[str, Any]) -> str:
    return to_html(batch)


class _Collector(HTMLParser):
    """Start tags (with attributes) and text of an HTML document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: str) -> _Collector:
    parser = _Collector()
    parser.feed(page)
    parser.close()
    return parser


def _classes(attrs: dict[str, str | None]) -> set[str]:
    return set((attrs.get("class") or "").split())


def _ok_rows(batch: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in batch["rows"] if r["status"] == "ok"]


# ----------------------------------------------------------------------------- drawing


def _structure(query: str, **kw: Any) -> dict[str, Any]:
    return cqsens.analyze(query, **kw).to_dict()["structure"]


def test_drawing_shapes_follow_the_kinds_of_elements() -> None:
    structure = _structure(str(HOSPITAL / "oncology.sql"), schema=str(SCHEMA))
    svg = draw_structure(structure)
    kinds = [e["kind"] for e in structure["elements"]]
    assert svg.count('<rect class="element free"') == kinds.count("free")
    assert svg.count('<polygon class="element constant"') == kinds.count("constant")
    assert svg.count('<circle class="element existential"') == kinds.count("existential")
    # the unbounded Pat atom (a 4-ary box) is red, and so is the free variable it misses
    assert svg.count('class="atom unbounded"') == len(structure["unbounded"]) == 1
    assert "Doc_id: free (unreachable from an unbounded atom)" in svg


def test_drawing_highlights_the_steps_behind_the_bound() -> None:
    structure = _structure("Q(x,w) :- R(x,y), S(y,z), T(z,w), V(x,w)",
                           cds=["R[1->2]<=2", "S[1->2]<=3", "T[1->2]<=4", "V[2->1]<=5"])
    svg = draw_structure(structure)
    unique = {(s["relation"], s["from"], s["to"]) for s in structure["steps"]}
    assert svg.count('<g class="step">') == len(unique) == 3
    for relation, weight in (("S", 3), ("T", 4), ("V", 5)):
        assert f"{relation} ×{weight}" in svg
    assert 'class="atom unbounded"' not in svg


def test_drawing_dashes_filters_and_escapes_text() -> None:
    structure = _structure(str(HOSPITAL / "patients_per_doctor_link.sql"), schema=str(SCHEMA))
    svg = draw_structure(structure)
    assert '<g class="atom filter">' in svg and "stroke-dasharray" in svg
    assert "p_age &gt;= 65" in svg
    svg = draw_structure(_structure("Q(x) :- R(x, 'a<b&c')"))
    assert "'a<b" not in svg and "&#x27;a&lt;b&amp;c&#x27;" in svg


def test_drawing_of_odd_structures() -> None:
    assert "(no elements)" in draw_structure({"elements": [], "atoms": []})
    one = draw_structure(_structure("Q() :- R(x, x)"), legend=False)
    assert one.count('class="element') == 1 and 'class="legend"' not in one
    with pytest.raises(ValueError, match="too small"):
        draw_structure({"elements": []}, width=10, height=10)


def test_drawing_is_deterministic_across_processes() -> None:
    code = (
        "import cqsens, hashlib; from cqsens.report.drawing import draw_structure;"
        "s = cqsens.analyze('Q(x,w) :- R(x,y), S(y,z), T(z,w), V(x,w, y)').to_dict()['structure'];"
        "print(hashlib.sha256(draw_structure(s).encode()).hexdigest())"
    )
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=ROOT)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


# ----------------------------------------------------------------------------- HTML


def test_html_has_one_row_per_query_with_hooks(batch: dict[str, Any], page: str) -> None:
    doc = _parse(page)
    rows = [a for t, a in doc.tags if t == "tr" and "row" in _classes(a)]
    assert [a["data-file"] for a in rows] == [r["file"] for r in batch["rows"]]
    assert [a["data-status"] for a in rows] == [r["status"] for r in batch["rows"]]
    verdicts = [a["data-verdict"] for a in rows]
    assert verdicts.count("bounded") == batch["summary"]["bounded"]
    assert verdicts.count("unbounded") == batch["summary"]["unbounded"]
    assert verdicts.count("error") == 1 and verdicts.count("timeout") == 1
    sections = [a["id"] for t, a in doc.tags if t == "section" and "query" in _classes(a)]
    assert sections == [f"q-{i}" for i in range(1, len(batch["rows"]) + 1)]


def test_html_has_one_drawing_per_ok_row(batch: dict[str, Any], page: str) -> None:
    svgs = re.findall(r'<svg class="drawing"', page)
    assert len(svgs) == len(_ok_rows(batch))
    for i, row in enumerate(batch["rows"], start=1):
        section = page.split(f'id="q-{i}"', 1)[1].split("</section>", 1)[0]
        assert section.count('<svg class="drawing"') == (1 if row["status"] == "ok" else 0)
    assert page.count('<svg class="bounds-chart"') == 1


def test_html_shows_summary_reasons_and_errors(batch: dict[str, Any], page: str) -> None:
    doc = _parse(page)
    text = "".join(doc.text)
    cards = {next(c for c in _classes(a) if c != "card"): a["data-count"]
             for t, a in doc.tags if t == "div" and "card" in _classes(a)}
    summary = batch["summary"]
    assert cards == {k: str(summary[k]) for k in
                     ("total", "bounded", "unbounded", "errors", "timed_out", "tight")}
    bars = {a["data-bucket"]: int(a["data-count"] or 0) for t, a in doc.tags
            if t == "g" and "bar" in _classes(a)}
    assert bars == summary["bounds"]
    assert text.count(ERROR_TEXT) == 2  # in the table and in its section
    assert "timed out after 10 s" in text
    for row in _ok_rows(batch):
        headline, steps = split_reason(row["reason"])  # the reason, its steps folded under it
        assert headline in text and all(step in text for step in steps)
        assert row["analysis"]["cq"] in text
        for sentence in row["analysis"]["explanation"]:
            assert sentence in text
        if row["suggestion"]:
            assert row["suggestion"] in text
    assert "Laplace b = " in text and "Gaussian σ = " in text
    assert "Δ+_Σ, CDs (Thm 17)" in text


def test_html_escapes_everything_and_loads_nothing(page: str) -> None:
    doc = _parse(page)
    assert [t for t, _ in doc.tags].count("script") == 1
    assert "'a<b'" not in page and "&#x27;a&lt;b&#x27;" in page
    assert "<1>" not in page and "<UNION>" not in page
    assert "T(y, 'a<b')" in "".join(doc.text)
    assert not any(t in ("link", "img", "iframe") for t, _ in doc.tags)
    assert not any("src" in a for _, a in doc.tags)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}


def test_html_is_deterministic(batch: dict[str, Any], page: str) -> None:
    assert to_html(copy.deepcopy(batch)) == page


def test_html_without_summary_counts_from_rows(batch: dict[str, Any]) -> None:
    bare = {"rows": batch["rows"]}
    doc = _parse(to_html(bare))
    cards = {next(c for c in _classes(a) if c != "card"): a["data-count"]
             for t, a in doc.tags if t == "div" and "card" in _classes(a)}
    assert cards["total"] == str(len(batch["rows"]))
    assert cards["errors"] == "1" and cards["timed_out"] == "1"
    assert cards["bounded"] == str(batch["summary"]["bounded"])


# ----------------------------------------------------------------------------- Markdown


def test_markdown_table_and_sections(batch: dict[str, Any]) -> None:
    md = to_markdown(batch)
    lines = md.splitlines()
    header = lines.index("| # | File | Aggregate | Verdict | Upper | Lower | Tight | Reason | "
                         "Suggestion | Noise |")
    table = lines[header + 2: header + 2 + len(batch["rows"])]
    assert all(line.startswith(f"| {i} | ") for i, line in enumerate(table, start=1))
    assert lines[header + 2 + len(batch["rows"])] == ""
    # every row has the same number of cells: "|" inside text is escaped
    for line in table:
        assert len(re.findall(r"(?<!\\)\|", line)) == 11
    assert "`inline/less\\|than.cq`" in md
    assert "**error:** examples/bad&lt;1>.sql:3:7: unsupported construct &lt;UNION> [UNION]" in md
    assert "**timeout:** timed out after 10 s" in md
    assert "```text\n" + ERROR_TEXT + "\n```" in md
    for i in range(1, len(batch["rows"]) + 1):
        assert f"### {i}. " in md
    assert "| 2-10 |" in md and "| ∞ |" in md
    assert "<script>" not in md.replace("`" + NASTY_FILE + "`", "")
    assert to_markdown(copy.deepcopy(batch)) == md


# ----------------------------------------------------------------------------- browser


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


_PROBE_HEAD = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
</script>"""

_PROBE_TAIL = """<script>
(function () {
  var out = {errors: window.__errors};
  try {
    var rows = document.querySelectorAll("#results tbody tr.row");
    out.rows = rows.length;
    out.drawings = [];
    document.querySelectorAll("section.query").forEach(function (s) {
      var svgs = s.querySelectorAll("svg.drawing");
      var box = svgs.length ? svgs[0].getBoundingClientRect() : {width: 0, height: 0};
      out.drawings.push({id: s.id, status: s.dataset.status, count: svgs.length,
                         width: box.width, height: box.height,
                         shapes: svgs.length ? svgs[0].querySelectorAll(".element").length : 0});
    });
    var table = document.getElementById("results");
    out.tableWidth = table.getBoundingClientRect().width;
    function column(name) {
      var ths = table.tHead.rows[0].cells;
      for (var i = 0; i < ths.length; i++) {
        if (ths[i].textContent.trim() === name) { return ths[i]; }
      }
    }
    function read(th) {
      return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
        return r.cells[th.cellIndex].getAttribute("data-sort");
      });
    }
    var upper = column("Upper");
    upper.querySelector("button").click();
    out.upperAsc = read(upper);
    out.upperAscState = upper.getAttribute("aria-sort");
    upper.querySelector("button").click();
    out.upperDesc = read(upper);
    out.upperDescState = upper.getAttribute("aria-sort");
    var file = column("File");
    file.querySelector("button").click();
    out.files = read(file);
    file.querySelector("button").click();
    out.filesDesc = read(file);
  } catch (e) {
    out.errors.push("probe: " + e);
  }
  var pre = document.createElement("pre");
  pre.id = "browser-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return exe


def _run_chromium(exe: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=60,
    )


def _numbers(keys: list[str | None]) -> Iterator[float]:
    for k in keys:
        if k:
            yield float("inf") if k == "Infinity" else float(k)


def test_browser_renders_and_sorts(
    chromium: str, batch: dict[str, Any], page: str, tmp_path: Path
) -> None:
    probed = page.replace("<head>", "<head>" + _PROBE_HEAD, 1).replace(
        "</body>", _PROBE_TAIL + "</body>", 1)
    target = tmp_path / "report.html"
    target.write_text(probed, encoding="utf-8")
    done = _run_chromium(chromium, tmp_path / "profile", "--window-size=1280,2000",
                         "--virtual-time-budget=3000", "--dump-dom", target.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="browser-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:]
    out = json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<")
                     .replace("&gt;", ">").replace("&amp;", "&"))
    assert out["errors"] == []
    n = len(batch["rows"])
    assert out["rows"] == n
    assert out["tableWidth"] > 600
    assert len(out["drawings"]) == n
    for drawing, row in zip(out["drawings"], batch["rows"], strict=True):
        if row["status"] == "ok":
            assert drawing["count"] == 1
            assert drawing["width"] > 200 and drawing["height"] > 100
            assert drawing["shapes"] == len(row["analysis"]["structure"]["elements"])
        else:
            assert drawing["count"] == 0
    # numeric sort: finite bounds ascending, ∞ after them, rows without a bound last
    asc = out["upperAsc"]
    assert out["upperAscState"] == "ascending"
    filled = [k for k in asc if k]
    assert asc[: len(filled)] == filled and all(not k for k in asc[len(filled):])
    assert list(_numbers(asc)) == sorted(_numbers(asc))
    assert filled[-1] == "Infinity"
    desc = out["upperDesc"]
    assert out["upperDescState"] == "descending"
    assert list(_numbers(desc)) == sorted(_numbers(desc), reverse=True)
    assert all(not k for k in desc[len(filled):])
    assert sorted(out["files"]) == sorted(r["file"] for r in batch["rows"])
    assert out["filesDesc"] == out["files"][::-1]


def test_browser_screenshot(chromium: str, page: str, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text(page, encoding="utf-8")
    shot = tmp_path / "report.png"
    done = _run_chromium(chromium, tmp_path / "profile", f"--screenshot={shot}",
                         "--window-size=1280,2000", "--hide-scrollbars", target.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 2000)
    assert len(data) > 50_000  # text, table and drawings, not a blank page


# ----------------------------------------------------------------------------- inputs


@pytest.fixture(scope="module")
def hospital_batch() -> dict[str, Any]:
    """``cqsens report examples/hospital``: each query uses the schema and constraints beside it."""
    from cqsens.batch import analyze_paths

    folder = str(HOSPITAL.relative_to(ROOT))
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return analyze_paths([folder], timeout=None, schema=None, constraints=None,
                             fds=[], cds=[]).as_dict()
    finally:
        os.chdir(cwd)


def test_report_header_lists_the_files_used_per_folder(hospital_batch: dict[str, Any]) -> None:
    page = to_html(hospital_batch)
    assert "schema</b>: per folder (see Inputs)" in page
    assert "constraints</b>: per folder (see Inputs)" in page
    inputs = re.search(r'<table class="inputs" id="inputs">.*?</table>', page, re.S)
    assert inputs is not None
    assert ("<tr><td><code>examples/hospital</code></td>"
            "<td><code>examples/hospital/schema.sql</code></td>"
            "<td><code>examples/hospital/constraints.txt</code></td></tr>") in inputs.group()
    md = to_markdown(hospital_batch)
    assert "schema = `per folder (see Inputs)`" in md
    assert ("| `examples/hospital` | `examples/hospital/schema.sql` | "
            "`examples/hospital/constraints.txt` |") in md


def test_report_without_files_says_none(tmp_path: Path) -> None:
    from cqsens.batch import analyze_paths

    query = tmp_path / "q.sql"
    query.write_text("SELECT COUNT(*) FROM R JOIN S ON R.b = S.b\n")
    batch = analyze_paths([tmp_path], timeout=None, schema=None, constraints=None,
                          fds=[], cds=["S[b->*]<=2"]).as_dict()
    assert batch["rows"][0]["inputs"] == {"schema": None, "constraints": None,
                                          "dependencies": ["S[b->*]<=2"]}
    page = to_html(batch)
    assert "schema</b>: none" in page and "constraints</b>: none" in page
    assert "<dt>options</dt><dd><code>S[b-&gt;*]&lt;=2</code></dd>" in page
    md = to_markdown(batch)
    assert "Inputs: schema `none`, constraints `none`, options `S[b->*]<=2`." in md


def _unspan(text: str) -> str:
    import html as html_module

    return html_module.unescape(re.sub(r"</?span[^>]*>", "", text))


def test_report_details_show_the_users_sql(hospital_batch: dict[str, Any]) -> None:
    page = to_html(hospital_batch)
    rows = hospital_batch["rows"]
    shown = re.findall(r'<pre class="sql">(.*?)</pre>', page, re.S)
    sql_rows = [r for r in rows if r["file"].endswith(".sql")]
    assert len(shown) == len(sql_rows) >= 6
    for text, row in zip(shown, sql_rows, strict=True):
        source = (ROOT / row["file"]).read_text().strip()
        assert _unspan(text) == source
        assert '<span class="kw">SELECT</span>' in text
        assert '<span class="com">--' in text  # every example opens with a comment
    oncology = shown[[r["file"] for r in sql_rows].index("examples/hospital/oncology.sql")]
    assert "Doc.specialty = <span class=\"str\">&#x27;O&#x27;</span>" in oncology
    cq_files = [r for r in rows if r["file"].endswith(".cq")]
    assert len(re.findall(r'<pre class="query">', page)) == len(cq_files) >= 1
    # each section names its schema and constraints, beside the CQ and the core
    for i in range(1, len(rows) + 1):
        section = re.search(rf'<section class="query [a-z]+" id="q-{i}".*?</section>', page, re.S)
        assert section is not None
        body = section.group()
        assert "<dt>schema</dt><dd><code>examples/hospital/schema.sql</code></dd>" in body
        assert ("<dt>constraints</dt><dd><code>examples/hospital/constraints.txt</code></dd>"
                in body)
        assert body.index("<h3>") < body.index('<pre class="cq">')
    md = to_markdown(hospital_batch)
    for row in sql_rows:
        source = (ROOT / row["file"]).read_text().strip()
        assert f"```sql\n{source}\n```" in md
    assert md.count("Inputs: schema `examples/hospital/schema.sql`, constraints "
                    "`examples/hospital/constraints.txt`.") == len(rows)


def test_sql_highlighting_escapes_and_round_trips() -> None:
    from cqsens.report.html import highlight_sql

    nasty = ("SELECT COUNT(*) FROM t -- </pre><script>x</script>\n"
             "WHERE a = 'it''s <b>' AND \"select\" < 3.5 OR b IS NULL")
    out = highlight_sql(nasty)
    assert "<script>" not in out and "<b>" not in out and "</pre>" not in out
    assert _unspan(out) == nasty
    # SELECT COUNT FROM WHERE AND OR IS NULL; the quoted "select" is a name, not a keyword
    assert out.count('<span class="kw">') == 8
    assert '<span class="str">&#x27;it&#x27;&#x27;s &lt;b&gt;&#x27;</span>' in out
    assert '<span class="num">3.5</span>' in out


def test_error_row_shows_its_query(tmp_path: Path) -> None:
    from cqsens.batch import analyze_paths

    (tmp_path / "bad.sql").write_text("SELECT COUNT(*) FROM R UNION SELECT COUNT(*) FROM S "
                                      "EXCEPT SELECT 1\n")
    batch = analyze_paths([tmp_path], timeout=None, schema=None, constraints=None,
                          fds=[], cds=[]).as_dict()
    assert batch["rows"][0]["status"] == "error"
    page = to_html(batch)
    assert '<span class="kw">UNION</span>' in page
    assert "```sql\nSELECT COUNT(*) FROM R UNION SELECT COUNT(*) FROM S" in to_markdown(batch)


_PROBE_SQL = """<script>
(function () {
  var out = {sql: [], kw: 0, inputs: 0};
  document.querySelectorAll("pre.sql").forEach(function (p) {
    out.sql.push({text: p.textContent, height: p.getBoundingClientRect().height,
                  color: getComputedStyle(p.querySelector(".kw")).color});
  });
  out.kw = document.querySelectorAll("pre.sql .kw").length;
  out.inputs = document.querySelectorAll("#inputs tbody tr").length;
  var pre = document.createElement("pre");
  pre.id = "sql-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def test_browser_shows_highlighted_sql(
    chromium: str, hospital_batch: dict[str, Any], tmp_path: Path
) -> None:
    page = to_html(hospital_batch).replace("</body>", _PROBE_SQL + "</body>", 1)
    target = tmp_path / "report.html"
    target.write_text(page, encoding="utf-8")
    done = _run_chromium(chromium, tmp_path / "profile", "--window-size=1280,2000",
                         "--virtual-time-budget=3000", "--dump-dom", target.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="sql-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:]
    out = json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<")
                     .replace("&gt;", ">").replace("&amp;", "&"))
    sql_rows = [r for r in hospital_batch["rows"] if r["file"].endswith(".sql")]
    assert [s["text"] for s in out["sql"]] == [(ROOT / r["file"]).read_text().strip()
                                               for r in sql_rows]
    assert all(s["height"] > 20 and s["color"] == "rgb(29, 78, 216)" for s in out["sql"])
    assert out["kw"] >= 3 * len(sql_rows)
    assert out["inputs"] == 1
