"""Release numerics at their limits: partition selection's δ, discrete half-widths, hostile ε/δ.

Every probability here is computed independently of :mod:`cqsens.release.noise`
(60-digit decimal sums of the probability mass functions) or measured on
OpenDP's own measurements; a measured frequency is compared with a binomial
margin of four standard deviations.
"""

from __future__ import annotations

import functools
import json
import math
import sqlite3
import time
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import cqsens
from cqsens.cli.main import cli
from cqsens.errors import InputError
from cqsens.release import noise

ROOT = Path(__file__).resolve().parents[1]
HOSPITAL_SCHEMA = ROOT / "examples" / "hospital" / "schema.sql"
BIG = 10**30  # beyond SQLite's 64-bit integers (2⁶³ − 1 ≈ 9.2e18)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _dp() -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _margin(p: float, n: int) -> float:
    """Four binomial standard deviations of a frequency of n draws of probability p."""
    return 4.0 * math.sqrt(p * (1.0 - p) / n)


# ----------------------------------------------------------------------------- exact pmfs
# Sums of the pmfs themselves (not the closed forms the module uses), in 60 digits.


def _dlap_upper_tail(scale: float, k: int, terms: int = 4000) -> Decimal:
    """P(Z ≥ k), k ≥ 1, for Z discrete Laplace: Σ_{z≥k} (1−t)/(1+t)·t^z, summed."""
    with localcontext() as ctx:
        ctx.prec = 60
        t = (Decimal(-1) / Decimal(scale)).exp()
        term, total = (1 - t) / (1 + t) * t**k, Decimal(0)
        for _ in range(terms):
            total += term
            term *= t
        return total + term / (1 - t)  # the geometric rest beyond the summed terms


def _dlap_coverage(scale: float, h: int) -> Decimal:
    """P(|Z| ≤ h) for Z discrete Laplace of the given scale, summed over |z| ≤ h."""
    with localcontext() as ctx:
        ctx.prec = 60
        t = (Decimal(-1) / Decimal(scale)).exp()
        norm = (1 - t) / (1 + t)
        total, power = norm, Decimal(1)
        for _ in range(h):
            power *= t
            total += 2 * norm * power
        return total


@functools.lru_cache(maxsize=32)
def _dgauss_weights(sigma: float) -> tuple[Decimal, ...]:
    """e^{−z²/(2σ²)} for z = 0..15σ + 10 (the rest sums to below 1e-48 of the total)."""
    with localcontext() as ctx:
        ctx.prec = 60
        two_var = 2 * Decimal(sigma) ** 2
        return tuple((-Decimal(z * z) / two_var).exp() for z in range(int(15 * sigma) + 11))


def _dgauss_coverages(sigma: float, up_to: int) -> list[Decimal]:
    """P(|Z| ≤ h) for h = 0..up_to, Z discrete Gaussian: the weights normalised by their sum."""
    weights = _dgauss_weights(sigma)
    with localcontext() as ctx:
        ctx.prec = 60
        norm = weights[0] + 2 * sum(weights[1:])
        out, inside = [], weights[0]
        for h in range(up_to + 1):
            if h:
                inside += 2 * weights[h]
            out.append(inside / norm)
        return out


# ----------------------------------------------------------------------------- item 1


def _old_threshold(l1: int, epsilon: float, delta: float) -> int:
    """The threshold the previous calibration chose: OpenDP 0.16's map of
    make_laplace_threshold at distance (l1, l1, l1), bisected."""
    dp = _dp()
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T="i64"))
    metric = dp.l01inf_distance(dp.absolute_distance(T="i64"))
    scale = noise.laplace_scale(l1, epsilon, integer=True)

    def ok(threshold: int) -> bool:
        e, d = dp.m.make_laplace_threshold(domain, metric, scale=scale,
                                           threshold=threshold).map((l1, l1, l1))
        return bool(e <= epsilon and d <= delta)

    return next(t for t in range(l1, 10_000) if ok(t))  # OpenDP refuses t < ℓ∞


def test_threshold_tail_is_the_summed_pmf() -> None:
    """The closed form t^k/(1+t) agrees with the summed pmf to 40 digits."""
    for scale in (0.3, 1.0, 2.0, 7.5, 40.0):
        for k in (1, 2, 5, 17):
            exact = _dlap_upper_tail(scale, k, terms=20000 if scale > 10 else 4000)
            got = noise.threshold_tail(scale, k)
            assert abs(got - exact) <= exact * Decimal("1e-40")
    four = noise.threshold_tail(1.0, 3, keys=4)
    with localcontext() as ctx:
        ctx.prec = 60
        assert abs(four - 4 * _dlap_upper_tail(1.0, 3)) <= four * Decimal("1e-40")


@given(l1=st.integers(1, 6), epsilon=st.floats(0.05, 5.0),
       delta=st.floats(1e-15, 0.6))
def test_threshold_is_the_smallest_whose_exact_tail_meets_delta(
        l1: int, epsilon: float, delta: float) -> None:
    """ℓ0·P(Z ≥ threshold − ℓ∞) ≤ δ (ℓ0 = ℓ∞ = l1), one less would exceed δ, and the
    scale meets ε by OpenDP's own map of the threshold measurement."""
    calib = noise.threshold_calibration(l1, epsilon, delta)
    over = calib.threshold - l1
    assert over >= 1
    assert l1 * _dlap_upper_tail(calib.scale, over) <= Decimal(delta)
    if over > 1:
        assert l1 * _dlap_upper_tail(calib.scale, over - 1) > Decimal(delta)
    assert calib.tail >= float(l1 * _dlap_upper_tail(calib.scale, over))
    dp = _dp()
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T="i64"))
    metric = dp.l01inf_distance(dp.absolute_distance(T="i64"))
    measurement = dp.m.make_laplace_threshold(domain, metric, scale=calib.scale,
                                              threshold=calib.threshold)
    assert measurement.map((l1, l1, l1))[0] <= epsilon


@pytest.mark.parametrize(("l1", "epsilon", "delta"), [
    (1, 1.0, 0.1), (1, 0.5, 0.05), (2, 1.0, 0.1), (3, 2.0, 0.2),
])
def test_selection_shows_a_key_of_count_l1_at_most_delta(
        l1: int, epsilon: float, delta: float) -> None:
    """OpenDP's make_laplace_threshold, run by select_partitions on 20,000 keys of count
    l1 (a key only one neighbour has): each is shown with frequency at most δ/ℓ0 (the
    union bound over the ℓ0 = l1 such keys), and at the exact tail of the discrete
    Laplace at ``threshold − l1`` (so OpenDP shows a count *equal* to the threshold).

    The previous calibration (OpenDP 0.16's map, issue #2922) fails this test; measured
    on 100,000 keys: (1, 1.0, 0.1) threshold 2 showed 0.26941 (δ 0.1), (1, 0.5, 0.05)
    threshold 6 showed 0.05106 (δ 0.05), (2, 1.0, 0.1) threshold 6 showed 0.08418 per
    key (δ/2 = 0.05), (3, 2.0, 0.2) threshold 6 showed 0.08906 (δ/3 = 0.0667).  The
    new thresholds 3, 7, 8, 7 showed 0.09734, 0.03067, 0.03208, 0.04685.
    """
    n = 20_000
    calib = noise.threshold_calibration(l1, epsilon, delta)
    assert calib.threshold > _old_threshold(l1, epsilon, delta)  # the off-by-one, fixed
    shown = noise.select_partitions({f"k{i}": l1 for i in range(n)}, calib)
    frequency = len(shown) / n
    per_key = delta / l1
    assert frequency <= per_key + _margin(per_key, n)
    exact = float(_dlap_upper_tail(calib.scale, calib.threshold - l1))
    assert abs(frequency - exact) <= _margin(exact, n)
    assert all(v >= calib.threshold for v in shown.values())


def test_small_delta_is_reachable() -> None:
    """δ below 2⁻⁵³, which OpenDP's map cannot report, gets a threshold from the exact tail."""
    calib = noise.threshold_calibration(1, 1.0, 1e-30)
    assert calib.tail <= 1e-30
    assert _dlap_upper_tail(1.0, calib.threshold - 1) <= Decimal(1e-30)
    assert _dlap_upper_tail(1.0, calib.threshold - 2) > Decimal(1e-30)


def test_partition_selection_release_reports_its_threshold(tmp_path: Path) -> None:
    """`cqsens release` without public keys uses the new threshold and says so."""
    db = tmp_path / "sel.db"
    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE T (id INTEGER PRIMARY KEY, g TEXT NOT NULL);")
    conn.executemany("INSERT INTO T VALUES (?, ?)", [(i, "big") for i in range(500)])
    conn.commit()
    conn.close()
    code, out, err = run("release", "--sql", "SELECT g, COUNT(*) FROM T GROUP BY g",
                         "--db", f"sqlite:///{db}", "--epsilon", "1", "--delta", "0.1",
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    threshold = noise.threshold_calibration(1, 1.0, 0.1).threshold
    assert f"reaches {threshold} " in data["keys"]
    assert [g["group"]["g"] for g in data["groups"]] == ["big"]


# ----------------------------------------------------------------------------- item 2

SCALES = [0.3, 0.5, 1.0, 1.7, 2.5, 3.0, 4.53, 10.0, 33.3, 100.0, 999.0]


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_discrete_laplace_halfwidth_is_the_smallest_that_covers(
        scale: float, confidence: float) -> None:
    """P(|Z| ≤ h) ≥ confidence > P(|Z| ≤ h − 1), from the summed pmf."""
    h = noise.laplace_halfwidth(scale, confidence, integer=True)
    assert h == int(h) >= 0
    c = Decimal(repr(confidence))
    assert _dlap_coverage(scale, int(h)) >= c
    if h > 0:
        assert _dlap_coverage(scale, int(h) - 1) < c


@pytest.mark.parametrize("sigma", [0.3, 0.5, 1.0, 1.5, 2.0, 4.53, 10.0, 50.0, 200.0, 999.0])
@pytest.mark.parametrize("confidence", [0.5, 0.95, 0.99])
def test_discrete_gaussian_halfwidth_is_the_smallest_that_covers(
        sigma: float, confidence: float) -> None:
    """P(|Z| ≤ h) ≥ confidence > P(|Z| ≤ h − 1), from the summed, normalised pmf."""
    h = int(noise.gaussian_halfwidth(sigma, confidence, integer=True))
    coverage = _dgauss_coverages(sigma, h)
    c = Decimal(repr(confidence))
    assert coverage[h] >= c
    if h > 0:
        assert coverage[h - 1] < c


@pytest.mark.parametrize("sigma", [1000.5, 1500.0, 2500.0])
def test_large_discrete_gaussian_halfwidth_covers_and_is_nearly_smallest(sigma: float) -> None:
    """Above σ = 1000 the sums are bounded by integrals: h still covers, and is at most
    one more than the smallest."""
    h = int(noise.gaussian_halfwidth(sigma, integer=True))
    coverage = _dgauss_coverages(sigma, h)
    assert coverage[h] >= Decimal("0.95")
    smallest = next(i for i, p in enumerate(coverage) if p >= Decimal("0.95"))
    assert h - smallest <= 1


def test_continuous_halfwidths_keep_their_closed_form() -> None:
    assert noise.laplace_halfwidth(1.0) == pytest.approx(math.log(20), rel=1e-15)
    assert noise.gaussian_halfwidth(2.0) == pytest.approx(2 * 1.959963984540054, rel=1e-12)


def test_halfwidths_at_the_scale_limits_stay_finite_integers() -> None:
    big = noise.MAX_INTEGER_SCALE
    lap, gau = (noise.laplace_halfwidth(big, integer=True),
                noise.gaussian_halfwidth(big, integer=True))
    assert lap == int(lap) and lap / big == pytest.approx(math.log(20), rel=1e-9)
    assert gau == int(gau) and gau / big == pytest.approx(1.959963984540054, rel=1e-9)
    assert noise.laplace_halfwidth(0.001, integer=True) == 0.0  # e^-1000: no miss at all


def test_discrete_halfwidths_cover_opendp_samples() -> None:
    """50,000 draws of OpenDP's discrete Laplace (scale 1) and discrete Gaussian (σ 1):
    the new half-widths (3 and 2) cover at least 95 %, at their exact coverage, where the
    continuous ones (2.996 and 1.96) covered 92.7 % and 88.3 %."""
    dp = _dp()
    n = 50_000
    space_l1 = dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64")
    space_l2 = dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64")
    for make, half, exact in (
        (dp.m.make_laplace(*space_l1, scale=1.0), noise.laplace_halfwidth(1.0, integer=True),
         lambda h: float(_dlap_coverage(1.0, h))),
        (dp.m.make_gaussian(*space_l2, scale=1.0), noise.gaussian_halfwidth(1.0, integer=True),
         lambda h: float(_dgauss_coverages(1.0, h)[h])),
    ):
        draws = make([0] * n)
        inside = sum(abs(v) <= half for v in draws) / n
        p = exact(int(half))
        assert p >= 0.95
        assert abs(inside - p) <= _margin(p, n)
        assert inside >= 0.95 - _margin(0.95, n)


def test_release_prints_the_discrete_halfwidth(tmp_path: Path) -> None:
    """A count's ± in `cqsens release` is the discrete half-width (an integer)."""
    db = tmp_path / "h.db"
    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE T (id INTEGER PRIMARY KEY);")
    conn.executemany("INSERT INTO T VALUES (?)", [(i,) for i in range(30)])
    conn.commit()
    conn.close()
    for mechanism, expected in (("laplace", noise.laplace_halfwidth(1.0, integer=True)),
                                ("gaussian", None)):
        code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM T", "--db",
                             f"sqlite:///{db}", "--epsilon", "1", "--delta", "1e-6",
                             "--mechanism", mechanism, "--format", "json")
        assert code == 0, err
        data = json.loads(out)
        part = data["parts"][0]
        half = data["groups"][0]["halfwidth_95"] if "halfwidth_95" in data["groups"][0] \
            else data["groups"][0]["values"][0]["halfwidth_95"]
        if expected is None:
            expected = noise.gaussian_halfwidth(part["scale"], integer=True)
        assert half == expected == int(expected)


# ----------------------------------------------------------------------------- item 3


@pytest.mark.parametrize(("option", "value"), [
    ("--epsilon", "1e-320"), ("--epsilon", "5e-324"), ("--epsilon", "1e-300"),
    ("--epsilon", "1e308"), ("--epsilon", "1e-10"), ("--epsilon", "1001"),
    ("--delta", "1e-320"), ("--delta", "1e-101"),
])
def test_analyze_refuses_hostile_numbers(option: str, value: str) -> None:
    """Refused as a usage error (exit 2) naming the limits, before any work."""
    args = ["analyze", "--sql", "SELECT COUNT(*) FROM Pat", "--schema", str(HOSPITAL_SCHEMA),
            "--epsilon", "1", option, value]
    start = time.monotonic()
    code, out, err = run(*args)
    assert time.monotonic() - start < 5
    assert code == 2 and out == ""
    assert f"Invalid value for '{option}'" in err and "out of range" in err
    name = option.lstrip("-")
    limits = "[1e-09, 1000]" if name == "epsilon" else "[1e-100, 1)"
    assert f"{name} must be a number in {limits}" in err


def test_analyze_at_the_limits_prints_finite_scales() -> None:
    """ε = 1e-9 with δ = 1e-100, and ε = 1000 with δ = 0.5: finite scales, exit 0."""
    for eps, delta, scale in (("1e-9", "1e-100", 1e9), ("1000", "0.5", 1e-3)):
        code, out, err = run("analyze", "--sql", "SELECT COUNT(*) FROM Pat", "--schema",
                             str(HOSPITAL_SCHEMA), "--epsilon", eps, "--delta", delta,
                             "--no-lower", "--format", "json")
        assert code == 0, err
        found = json.loads(out)["noise"]
        assert found["laplace_scale"] == pytest.approx(scale, rel=1e-4)
        assert 0 < found["gaussian_sigma"] < math.inf


@pytest.mark.parametrize(("epsilon", "delta", "construct"), [
    (1e-320, None, "epsilon"), (5e-324, None, "epsilon"), (1e308, None, "epsilon"),
    (float("nan"), None, "epsilon"), (1.0, 1e-320, "delta"), (None, 1e-320, "delta"),
])
def test_api_refuses_hostile_numbers(epsilon: float | None, delta: float | None,
                                     construct: str) -> None:
    with pytest.raises(InputError) as info:
        cqsens.analyze("Q(x) :- R(x, y)", epsilon=epsilon, delta=delta)
    assert info.value.construct == construct
    assert "docs/model.md, Limits and safety" in info.value.message


def test_config_file_numbers_are_checked_too(tmp_path: Path) -> None:
    """ε from cqsens.toml skips the option types; it is still refused (exit 1)."""
    query = tmp_path / "q.sql"
    query.write_text("SELECT COUNT(*) FROM Pat")
    (tmp_path / "cqsens.toml").write_text(f'schema = "{HOSPITAL_SCHEMA}"\nepsilon = 1e-320\n')
    code, out, err = run("analyze", str(query))
    assert code == 1 and "epsilon must be a number in [1e-09, 1000]" in err
    db = tmp_path / "p.db"
    sqlite3.connect(db).executescript(HOSPITAL_SCHEMA.read_text())
    code, out, err = run("release", str(query), "--db", f"sqlite:///{db}")
    assert code == 1 and out == "" and "epsilon must be a number in [1e-09, 1000]" in err


@pytest.fixture
def hospital_db(tmp_path: Path) -> str:
    db = tmp_path / "h.db"
    conn = sqlite3.connect(db)
    conn.executescript(HOSPITAL_SCHEMA.read_text())
    conn.close()
    return f"sqlite:///{db}"


@pytest.mark.parametrize("args", [
    ("--epsilon", "1e-320"), ("--epsilon", "1e308"), ("--epsilon", "1", "--delta", "1e-320"),
    ("--epsilon", "1", "--epsilon-part", "COUNT(*)=1e-12"),
])
def test_release_refuses_hostile_numbers(hospital_db: str, args: tuple[str, ...]) -> None:
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM Pat", "--db", hospital_db,
                         *args)
    assert code == 2 and out == ""
    assert "must be a number in" in err or "with ε in [1e-09, 1000]" in err


def _table(tmp_path: Path, high: int) -> tuple[str, Path]:
    """A table t whose x is declared in [0, high]: its SQLite URL (empty) and DDL file."""
    ddl = (f"CREATE TABLE t (id INTEGER PRIMARY KEY, "
           f"x INTEGER CHECK (x BETWEEN 0 AND {high}));")
    folder = tmp_path / f"t{len(str(high))}"
    folder.mkdir()
    path = folder / "t.sql"
    path.write_text(ddl)
    db = folder / "t.db"
    sqlite3.connect(db).executescript(ddl)
    return f"sqlite:///{db}", path


def test_release_refuses_noise_beyond_floats(tmp_path: Path) -> None:
    """A sum whose scale is over 1e300 (or whose ℓ1 is over the largest float) is refused."""
    url, ddl = _table(tmp_path, 10**295)
    code, out, err = run("release", "--sql", "SELECT SUM(x) FROM t", "--db", url,
                         "--schema", str(ddl), "--epsilon", "1e-9")
    assert code == 1 and out == "" and "the largest noise cqsens samples on floats" in err
    url, ddl = _table(tmp_path, 10**400)
    code, out, err = run("release", "--sql", "SELECT SUM(x) FROM t", "--db", url,
                         "--schema", str(ddl), "--epsilon", "1")
    assert code == 1 and out == "" and "beyond the largest float" in err


def test_release_refuses_integer_noise_beyond_64_bits(hospital_db: str) -> None:
    """A count of ℓ1 2,000,000 at ε = 1e-9 needs scale 2e15 > 1e15: refused; 1,000,000 is
    at the limit and released."""
    base = ["release", "--sql", "SELECT COUNT(*) FROM Pat", "--db", hospital_db,
            "--epsilon", "1e-9", "--format", "json"]
    code, out, err = run(*base, "--contributions", "2000000")
    assert code == 1 and out == "" and "64-bit integers" in err
    code, out, err = run(*base, "--contributions", "1000000")
    assert code == 0, err
    data = json.loads(out)
    assert data["parts"][0]["scale"] == 1e15
    assert abs(data["groups"][0]["value"]) < 2**62


def test_values_beyond_sqlite_integers_keep_the_exact_upper_bound(tmp_path: Path) -> None:
    """SUM(x) with x ≤ 10^30: exit 0, the exact upper bound 10^30, no witness (SQLite
    cannot store the values), and the reason."""
    _, ddl = _table(tmp_path, BIG)
    code, out, err = run("analyze", "--sql", "SELECT SUM(x) FROM t", "--schema", str(ddl),
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["sensitivity"]["upper"] == BIG and data["sensitivity"]["lower"] is None
    assert "64-bit integers" in data["lower_note"]
    # a COUNT over the same table still gets its witness (its values fit)
    code, out, err = run("analyze", "--sql", "SELECT COUNT(*) FROM t", "--schema", str(ddl),
                         "--format", "json")
    assert code == 0, err
    assert json.loads(out)["sensitivity"]["lower"] == 1


def test_check_that_forces_huge_values_skips_the_witness(tmp_path: Path) -> None:
    """A CHECK that allows only values beyond 2⁶³ − 1: the count witness is skipped, exit 0."""
    ddl = tmp_path / "far.sql"
    ddl.write_text(f"CREATE TABLE t (id INTEGER PRIMARY KEY, "
                   f"x INTEGER CHECK (x BETWEEN {BIG} AND {BIG + 5}));")
    code, out, err = run("analyze", "--sql", "SELECT COUNT(*) FROM t", "--schema", str(ddl),
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["sensitivity"]["upper"] == 1 and data["sensitivity"]["lower"] is None
    assert "64-bit integers" in data["lower_note"]
