"""`cqsens release` and `cqsens budget`: DP answers from SQLite and PostgreSQL.

The true answers of the test databases are distinctive numbers (48177 rows,
a sum of 337239) so that a test can check that they never appear in any output
or in the ledger.  Statistical tests draw many noisy values in one release (one
coordinate per public key) or from the samplers, and compare them with the
calibration with generous tolerances.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli.main import cli
from cqsens.db import load_sql_file
from cqsens.release import noise
from cqsens.release.keys import key_text, read_keys
from cqsens.release.ledger import Entry, read_ledger, spent, zcdp_dp_epsilon
from tests.postgres import PgServer

ROOT = Path(__file__).resolve().parents[1]
HOSPITAL = ROOT / "examples" / "hospital"
ROWS, SUM = 48177, 48177 * 7

BIG_DDL = """
CREATE TABLE T (id INTEGER PRIMARY KEY, g TEXT NOT NULL, v INTEGER NOT NULL CHECK (v BETWEEN 0 AND 10));
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """48177 rows in groups a/b, every v = 7; its DDL file."""
    folder = tmp_path_factory.mktemp("big")
    path, ddl = folder / "big.db", folder / "big.sql"
    ddl.write_text(BIG_DDL)
    conn = sqlite3.connect(path)
    conn.executescript(BIG_DDL)
    conn.executemany("INSERT INTO T VALUES (?, ?, 7)",
                     [(i, "a" if i % 3 else "b") for i in range(ROWS)])
    conn.commit()
    conn.close()
    return f"sqlite:///{path}", ddl


@pytest.fixture(scope="module")
def hospital(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("hospital") / "hospital.db"
    url = f"sqlite:///{path}"
    load_sql_file(url, HOSPITAL / "schema.sql", HOSPITAL / "data.sql")
    return url


# ----------------------------------------------------------------------------- end to end


def test_count_release_text_json_csv(big: tuple[str, Path], tmp_path: Path) -> None:
    url, ddl = big
    ledger = tmp_path / "ledger.sqlite"
    base = ["release", "--sql", "SELECT COUNT(*), SUM(v) FROM T", "--db", url,
            "--schema", str(ddl), "--epsilon", "0.002", "--ledger", str(ledger)]
    outputs = []
    for fmt in ("text", "json", "csv"):
        code, out, err = run(*base, "--format", fmt)
        assert code == 0, err
        outputs.append(out + err)
    data = json.loads(outputs[1])
    assert [p["label"] for p in data["parts"]] == ["COUNT(*)", "SUM(v)"]
    count_part, sum_part = data["parts"]
    assert count_part["mechanism"] == "discrete Laplace" and sum_part["mechanism"] == "Laplace"
    # ε split evenly: 0.001 each; COUNT has ℓ1 1, SUM ℓ1 10 (CHECK v in [0, 10])
    assert count_part["epsilon"] == pytest.approx(0.001) and count_part["scale"] == 1000.0
    assert sum_part["scale"] == 10000.0
    values = data["groups"][0]["values"]
    assert isinstance(values[0]["value"], int) and isinstance(values[1]["value"], float)
    # the count's discrete Laplace: the smallest integer h with P(|Z| ≤ h) ≥ 95 %,
    # P(|Z| > h) = 2t^(h+1)/(1 + t), t = e^(-1/1000)
    h, t = values[0]["halfwidth_95"], math.exp(-1 / 1000)
    assert h == int(h) and 2 * t ** (h + 1) / (1 + t) <= 0.05 < 2 * t**h / (1 + t)
    assert values[1]["halfwidth_95"] == pytest.approx(10000 * math.log(20))
    assert outputs[2].splitlines()[0] == "label,value,halfwidth_95"
    # the true answers appear nowhere: not in any output, not in the ledger
    blob = "\n".join(outputs) + ledger.read_bytes().decode("latin-1")
    assert str(ROWS) not in blob and str(SUM) not in blob
    entries = read_ledger(ledger)
    assert len(entries) == 3 and all(e.epsilon == 0.002 for e in entries)
    assert spent(entries).epsilon == pytest.approx(0.006)


def test_analyze_shows_the_scales_release_uses(big: tuple[str, Path]) -> None:
    url, ddl = big
    sql = "SELECT g, COUNT(*) FROM T GROUP BY g"
    code, out, err = run("analyze", "--sql", sql, "--schema", str(ddl), "--epsilon", "0.5",
                         "--delta", "1e-6", "--format", "json", "--no-lower")
    assert code == 0, err
    analysed = json.loads(out)["noise"]
    keys = Path(ddl.parent / "keys.csv")
    keys.write_text("g\na\nb\n")
    for mechanism, field in (("laplace", "laplace_scale"), ("gaussian", "gaussian_sigma")):
        code, out, err = run("release", "--sql", sql, "--db", url, "--schema", str(ddl),
                             "--epsilon", "0.5", "--delta", "1e-6", "--keys", str(keys),
                             "--mechanism", mechanism, "--format", "json")
        assert code == 0, err
        released = json.loads(out)["parts"][0]["scale"]
        assert released == pytest.approx(analysed[field], rel=1e-6)


def test_statistics_of_a_release_over_many_public_keys(tmp_path: Path) -> None:
    """300 groups of 40 rows each: one release draws 300 discrete Laplace samples."""
    path = tmp_path / "many.db"
    conn = sqlite3.connect(path)
    conn.executescript(BIG_DDL)
    conn.executemany("INSERT INTO T VALUES (?, ?, 1)", [(i, f"k{i % 300}") for i in range(12000)])
    conn.commit()
    conn.close()
    keys = tmp_path / "keys.csv"
    keys.write_text("g\n" + "\n".join(f"k{i}" for i in range(300)) + "\nzero\n")
    ddl = tmp_path / "t.sql"
    ddl.write_text(BIG_DDL)
    code, out, err = run("release", "--sql", "SELECT g, COUNT(*) FROM T GROUP BY g", "--db",
                         f"sqlite:///{path}", "--schema", str(ddl), "--epsilon", "0.25",
                         "--keys", str(keys), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert "public keys" in data["keys"]
    groups = {g["group"]["g"]: g for g in data["groups"]}
    assert set(groups) == {f"k{i}" for i in range(300)} | {"zero"}  # zeros included
    errors = [groups[f"k{i}"]["value"] - 40 for i in range(300)]
    b = 4.0  # Δ1 = 1 at ε = 0.25
    assert data["parts"][0]["scale"] == b
    assert abs(sum(errors) / len(errors)) < 6 * b * math.sqrt(2) / math.sqrt(300)
    assert 0.6 * b < sum(abs(e) for e in errors) / len(errors) < 1.4 * b  # E|X| ≈ b
    inside = sum(abs(e) <= groups["k0"]["halfwidth_95"] for e in errors) / len(errors)
    assert 0.9 <= inside <= 1.0


@pytest.mark.parametrize("integer", [True, False])
def test_laplace_sampler_statistics(integer: bool) -> None:
    """20000 draws: mean 0, mean |X| = b, 95 % inside b·ln 20, integers for counts."""
    out, scale = noise.sample_laplace([100] * 20000, l1=3, epsilon=0.5, integer=integer)
    assert scale == 6.0
    errors = [v - 100 for v in out]
    assert all(isinstance(v, int) for v in out) == integer
    assert abs(sum(errors) / len(errors)) < 0.3
    assert sum(abs(e) for e in errors) / len(errors) == pytest.approx(6.0, rel=0.06)
    inside = sum(abs(e) <= noise.laplace_halfwidth(scale) for e in errors) / len(errors)
    assert inside == pytest.approx(0.95, abs=0.01)


@pytest.mark.parametrize("integer", [True, False])
def test_gaussian_sampler_statistics(integer: bool) -> None:
    """20000 draws: standard deviation σ, 95 % inside 1.96σ, ρ = Δ²/(2σ²)."""
    out, sigma, rho = noise.sample_gaussian([0] * 20000, l2=2, epsilon=1.0, delta=1e-6,
                                            integer=integer)
    assert sigma == pytest.approx(noise.gaussian_sigma(2, 1.0, 1e-6), rel=1e-9)
    assert rho == pytest.approx(4 / (2 * sigma**2))
    sd = math.sqrt(sum(v * v for v in out) / len(out))
    assert sd == pytest.approx(sigma, rel=0.04)
    inside = sum(abs(v) <= noise.gaussian_halfwidth(sigma) for v in out) / len(out)
    assert inside == pytest.approx(0.95, abs=0.01)


def test_quantile_sampler_is_near_the_median_on_large_data() -> None:
    values = [float(v % 101) for v in range(5000)]  # median 50
    got = [noise.sample_quantile(values, candidates=[float(c) for c in range(101)], alpha=0.5,
                                 rows=1, epsilon=1.0)[0] for _ in range(30)]
    assert all(40 <= g <= 60 for g in got)


# ----------------------------------------------------------------------------- keys


def test_partition_selection_never_shows_a_small_group(tmp_path: Path) -> None:
    """200 groups of one row and one of 2000: across 10 releases at δ = 1e-9 the
    threshold lets no single-row group through and always shows the large one."""
    path = tmp_path / "sel.db"
    conn = sqlite3.connect(path)
    conn.executescript(BIG_DDL)
    rows = [(i, f"tiny{i}") for i in range(200)] + [(200 + i, "big") for i in range(2000)]
    conn.executemany("INSERT INTO T VALUES (?, ?, 1)", rows)
    conn.commit()
    conn.close()
    ddl = tmp_path / "t.sql"
    ddl.write_text(BIG_DDL)
    calib = noise.threshold_calibration(1, 1.0, 1e-9)
    assert calib.threshold > 10
    for _ in range(10):
        code, out, err = run("release", "--sql", "SELECT g, COUNT(*) FROM T GROUP BY g",
                             "--db", f"sqlite:///{path}", "--schema", str(ddl),
                             "--epsilon", "1", "--delta", "1e-9", "--format", "json")
        assert code == 0, err
        data = json.loads(out)
        assert "partition selection" in data["keys"]
        shown = [g["group"]["g"] for g in data["groups"]]
        assert shown == ["big"]
        assert data["parts"][0]["mechanism"].startswith("Laplace threshold")


def test_partition_selection_of_sums_uses_a_noisy_count(big: tuple[str, Path]) -> None:
    url, ddl = big
    code, out, err = run("release", "--sql", "SELECT g, SUM(v) FROM T GROUP BY g", "--db", url,
                         "--schema", str(ddl), "--epsilon", "1", "--delta", "1e-6",
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert sorted(g["group"]["g"] for g in data["groups"]) == ["a", "b"]
    assert data["budget_split"].startswith("ε split evenly over 2")
    assert data["parts"][-1]["label"] == "COUNT(*) (partition selection)"


def test_group_keys_need_delta_or_a_public_domain(big: tuple[str, Path]) -> None:
    url, ddl = big
    code, out, err = run("release", "--sql", "SELECT g, COUNT(*) FROM T GROUP BY g", "--db", url,
                         "--schema", str(ddl), "--epsilon", "1")
    assert code == 1 and out == ""
    assert "partition selection" in err and "--delta" in err and "--keys" in err


def test_keys_file_zeros_and_unlisted_groups(hospital: str, tmp_path: Path) -> None:
    keys = tmp_path / "k.csv"
    keys.write_text("sex\nF\nX\n")
    code, out, err = run("release", "--sql", "SELECT sex, COUNT(*) FROM Pat GROUP BY sex",
                         "--db", hospital, "--schema", str(HOSPITAL / "schema.sql"),
                         "--epsilon", "1", "--keys", str(keys), "--format", "csv")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "sex,label,value,halfwidth_95"
    assert [line.split(",")[0] for line in lines[1:]] == ["F", "X"]  # M is not listed


def test_public_table_gives_the_keys(hospital: str) -> None:
    sql = "SELECT h.loc, COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id GROUP BY h.loc"
    code, out, err = run("release", "--sql", sql, "--db", hospital, "--schema",
                         str(HOSPITAL / "schema.sql"), "--public", "Hos", "--epsilon", "1",
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert "public table Hos" in data["keys"]
    con = sqlite3.connect(hospital.removeprefix("sqlite:///"))
    locs = sorted(r[0] for r in con.execute("SELECT DISTINCT loc FROM Hos"))
    assert sorted(g["group"]["loc"] for g in data["groups"]) == locs


def test_read_keys_errors(tmp_path: Path) -> None:
    f = tmp_path / "k.csv"
    f.write_text("other\nx\n")
    with pytest.raises(Exception, match="no column 'sex'"):
        read_keys(f, ["sex"])
    f.write_text("")
    with pytest.raises(Exception, match="empty"):
        read_keys(f, ["sex"])
    f.write_text("Sex,age\nF,3\nF,3\n")
    assert read_keys(f, ["sex"]) == [key_text(["F"])]


# ----------------------------------------------------------------------------- several aggregates


def test_avg_and_arithmetic_from_noisy_parts(hospital: str) -> None:
    sql = "SELECT AVG(age), 100 * SUM(age) / COUNT(*) AS pct, COUNT(*) FROM Pat"
    code, out, err = run("release", "--sql", sql, "--db", hospital, "--schema",
                         str(HOSPITAL / "schema.sql"), "--epsilon", "3", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert [p["label"] for p in data["parts"]] == ["SUM(age)", "COUNT(age)", "COUNT(*)"]
    assert data["budget_split"] == "ε split evenly over 3 measurements: 1 each"
    labels = [v["label"] for v in data["groups"][0]["values"]]
    assert labels == ["AVG(age)", "pct", "COUNT(*)"]


def test_epsilon_per_part(hospital: str) -> None:
    sql = "SELECT SUM(age), COUNT(*) FROM Pat"
    code, out, err = run("release", "--sql", sql, "--db", hospital, "--schema",
                         str(HOSPITAL / "schema.sql"), "--epsilon", "1",
                         "--epsilon-part", "COUNT(*)=0.2", "--format", "json")
    assert code == 0, err
    parts = {p["label"]: p["epsilon"] for p in json.loads(out)["parts"]}
    assert parts == {"SUM(age)": pytest.approx(0.8), "COUNT(*)": pytest.approx(0.2)}
    code, _, err = run("release", "--sql", sql, "--db", hospital, "--schema",
                       str(HOSPITAL / "schema.sql"), "--epsilon", "1",
                       "--epsilon-part", "AVG(x)=0.2")
    assert code == 1 and "not a released aggregate" in err


def test_median_by_the_exponential_mechanism(hospital: str) -> None:
    code, out, err = run("release", str(HOSPITAL / "median_adult_age.sql"), "--db", hospital,
                         "--schema", str(HOSPITAL / "schema.sql"), "--epsilon", "1",
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["parts"][0]["mechanism"].startswith("exponential mechanism over 103 candidates")
    assert 18 <= data["groups"][0]["value"] <= 120


# ----------------------------------------------------------------------------- refusals


def test_unbounded_query_is_refused_with_advice(hospital: str, tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    code, out, err = run("release", str(HOSPITAL / "oncology.sql"), "--db", hospital,
                         "--schema", str(HOSPITAL / "schema.sql"), "--epsilon", "1",
                         "--ledger", str(ledger))
    assert code == 1 and out == ""
    assert "unbounded" in err and "Advice" in err and "PatDoc[pat->doc]" in err
    assert read_ledger(ledger) == []


def test_budget_is_refused_with_what_is_left(hospital: str, tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    args = ["release", str(HOSPITAL / "oncology.sql"), "--db", hospital, "--constraints",
            str(HOSPITAL / "constraints.txt"), "--ledger", str(ledger), "--budget", "1.5",
            "--epsilon", "1"]
    code, out, err = run(*args)
    assert code == 0, err
    assert "budget ε 1.5, 0.5 left" in out
    code, out, err = run(*args)
    assert code == 1 and out == ""
    assert "0.5 left" in err and "nothing was released" in err
    assert len(read_ledger(ledger)) == 1
    code, out, err = run("budget", "--ledger", str(ledger), "--budget", "1.5", "--format", "json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["epsilon_spent"] == 1.0 and shown["epsilon_left"] == 0.5
    assert shown["releases"][0]["privacy_unit"] == "add-remove, 1 row per person"


def test_crash_between_ledger_and_print_still_charges(hospital: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The release is committed to the ledger before it is rendered: a failure there
    (standing in for a kill) leaves the budget charged."""
    import cqsens.cli.release as release_cli

    def crash(*args: object, **kwargs: object) -> str:
        raise KeyboardInterrupt  # as a kill: no handler turns it into output

    monkeypatch.setattr(release_cli, "render_text", crash)
    ledger = tmp_path / "l.sqlite"
    result = CliRunner().invoke(cli, [
        "release", str(HOSPITAL / "oncology.sql"), "--db", hospital, "--constraints",
        str(HOSPITAL / "constraints.txt"), "--ledger", str(ledger), "--epsilon", "0.7"])
    assert result.exit_code != 0 and result.stdout == ""
    entries = read_ledger(ledger)
    assert [e.epsilon for e in entries] == [0.7]


def test_ledger_composition_rules() -> None:
    lap = Entry("t", "h", 0.5, 0.0, None, "discrete Laplace", "u", "db")
    gauss = Entry("t", "h", 1.0, 1e-6, 0.0124, "Gaussian", "u", "db")
    assert spent([lap, lap]).epsilon == 1.0
    total = spent([lap, gauss, gauss])
    assert total.delta == pytest.approx(2e-6)
    assert total.epsilon == pytest.approx(0.5 + zcdp_dp_epsilon(0.0248, 2e-6), rel=1e-12)
    assert zcdp_dp_epsilon(0.0248, 2e-6) < noise.zcdp_epsilon(0.0248, 2e-6)
    assert total.epsilon < 2.5 and "zCDP" in total.rule


def test_ledger_may_not_be_the_database(hospital: str) -> None:
    code, _, err = run("release", str(HOSPITAL / "oncology.sql"), "--db", hospital,
                       "--constraints", str(HOSPITAL / "constraints.txt"), "--epsilon", "1",
                       "--ledger", hospital.removeprefix("sqlite:///"))
    assert code == 2 and "must not be the --db" in err


def test_the_database_is_not_written(hospital: str) -> None:
    path = Path(hospital.removeprefix("sqlite:///"))
    before = path.read_bytes()
    code, _, err = run("release", "--sql", "SELECT COUNT(*) FROM Pat", "--db", hospital,
                       "--schema", str(HOSPITAL / "schema.sql"), "--epsilon", "1")
    assert code == 0, err
    assert path.read_bytes() == before


# ----------------------------------------------------------------------------- PostgreSQL


def test_postgres_release(pg_server: PgServer, tmp_path: Path) -> None:
    """The same release against PostgreSQL (skipped without its binaries, as the profile tests)."""
    import sqlalchemy as sa

    server = pg_server
    engine = sa.create_engine(server.url(scheme="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text("DROP DATABASE IF EXISTS release_test"))
        conn.execute(sa.text("CREATE DATABASE release_test"))
    engine.dispose()
    url = server.url("release_test")
    load_sql_file(url, HOSPITAL / "schema.sql", HOSPITAL / "data.sql")
    keys = tmp_path / "k.csv"
    keys.write_text("sex\nF\nM\n")
    ledger = tmp_path / "l.sqlite"
    code, out, err = run("release", "--sql", "SELECT sex, COUNT(*), AVG(age) FROM Pat GROUP BY sex",
                         "--db", url, "--schema", str(HOSPITAL / "schema.sql"), "--epsilon", "1",
                         "--keys", str(keys), "--ledger", str(ledger), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert [g["group"]["sex"] for g in data["groups"]] == ["F", "M"]
    assert server.password not in out + err and "***" in data["database"]
    assert read_ledger(ledger)[0].database == data["database"]


def test_metadata_file_names_the_ledger_and_budget(hospital: str, tmp_path: Path) -> None:
    (tmp_path / "q.sql").write_text("SELECT COUNT(*) FROM Pat")
    (tmp_path / "cqsens.toml").write_text(
        f'schema = "{HOSPITAL / "schema.sql"}"\nledger = "spent.sqlite"\nbudget = 1.5\n'
        "epsilon = 1.0\n")
    code, out, err = run("release", str(tmp_path / "q.sql"), "--db", hospital)
    assert code == 0, err
    assert len(read_ledger(tmp_path / "spent.sqlite")) == 1 and "0.5 left" in out
    code, out, err = run("release", str(tmp_path / "q.sql"), "--db", hospital)
    assert code == 1 and "0.5 left" in err


def test_release_plan_formulas() -> None:
    from cqsens.frontend.release_sql import release_plan
    from cqsens.releasing.post import _evaluate

    plan = release_plan("SELECT g, ROUND(-SUM(v) / (COUNT(*) - 2), 1) AS r FROM T GROUP BY 1",
                        None)
    assert plan.keys == ("g",) and [p.kind for p in plan.parts] == ["sum", "count"]
    formula = plan.items[0].formula
    assert _evaluate(formula, [10.0, 6]) == -2.5
    assert _evaluate(formula, [10.0, 2]) is None  # division by a noisy zero gives NULL
    assert "ORDER" not in release_plan("SELECT COUNT(*) FROM T ORDER BY 1 LIMIT 3",
                                       None).parts_sql("sqlite")
