"""Tests of cqsens.noiseless (accountants for noiseless counts) and ``cqsens noiseless``."""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import assume, given
from hypothesis import strategies as st

from cqsens.cli.noiseless import noiseless
from cqsens.errors import InputError
from cqsens.noiseless import (
    PROPOSITION_27_NOTE,
    binomial_logpmf,
    class_delta,
    class_epsilon,
    closed_form_delta,
    closed_form_epsilon,
    exact_delta,
    exact_delta_by_record,
    exact_epsilon,
    fair_coin_delta,
    histogram_class_delta,
    histogram_class_epsilon,
    parse_probabilities,
    pmf_delta,
    pmf_epsilon,
    poisson_binomial_pmf,
)
from cqsens.noiseless.fair_coin import log_fair_coin_delta, log_fair_coin_deltas

# --------------------------------------------------------------------------- brute force


def brute_pmf(ps: list[float]) -> list[float]:
    """pmf of the sum by enumerating all 2^n outcomes."""
    pmf = [0.0] * (len(ps) + 1)
    for bits in itertools.product((0, 1), repeat=len(ps)):
        prob = 1.0
        for bit, p in zip(bits, ps, strict=True):
            prob *= p if bit else 1.0 - p
        pmf[sum(bits)] += prob
    return pmf


def brute_pair_delta(r: list[float], epsilon: float) -> float:
    """Both directions of the hockey-stick divergence between R+1 and R, from the definition."""
    first = [0.0] + list(r)  # law of S + 1
    second = list(r) + [0.0]  # law of S
    x = math.exp(epsilon)
    forward = sum(max(0.0, a - x * b) for a, b in zip(first, second, strict=True))
    backward = sum(max(0.0, b - x * a) for a, b in zip(first, second, strict=True))
    return max(forward, backward)


def brute_exact(ps: list[float], epsilon: float) -> list[float]:
    return [brute_pair_delta(brute_pmf(ps[:j] + ps[j + 1:]), epsilon) for j in range(len(ps))]


def brute_class_mixture(n: int, lam: float, epsilon: float) -> float:
    """sum_m Bin(n-1, 2 lambda)(m) * delta_m with delta_m by enumeration (small n)."""
    q = 2 * lam
    total = 0.0
    for m in range(n):
        weight = math.comb(n - 1, m) * q**m * (1 - q) ** (n - 1 - m)
        coins = [math.comb(m, s) / 2**m for s in range(m + 1)]
        total += weight * brute_pair_delta(coins, epsilon)
    return total


def histogram_delta(dists: list[list[float]], epsilon: float) -> float:
    """Exact delta of a K-category histogram release, by enumeration: max over j and a != b."""
    k = len(dists[0])
    x = math.exp(epsilon)
    worst = 0.0
    for j in range(len(dists)):
        others = dists[:j] + dists[j + 1:]
        law: dict[tuple[int, ...], float] = defaultdict(float)
        for cats in itertools.product(range(k), repeat=len(others)):
            prob = 1.0
            counts = [0] * k
            for dist, c in zip(others, cats, strict=True):
                prob *= dist[c]
                counts[c] += 1
            law[tuple(counts)] += prob
        for a, b in itertools.permutations(range(k), 2):
            first: dict[tuple[int, ...], float] = defaultdict(float)
            second: dict[tuple[int, ...], float] = defaultdict(float)
            for h, prob in law.items():
                ha, hb = list(h), list(h)
                ha[a] += 1
                hb[b] += 1
                first[tuple(ha)] += prob
                second[tuple(hb)] += prob
            keys = set(first) | set(second)
            worst = max(worst, sum(max(0.0, first[h] - x * second[h]) for h in keys))
    return worst


probabilities = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
epsilons = st.floats(min_value=0.0, max_value=4.0, allow_nan=False)


# --------------------------------------------------------------------------- binomial pmf


@pytest.mark.parametrize("n", [1, 7, 40, 333, 2000])
@pytest.mark.parametrize("num,den", [(1, 2), (1, 4), (3, 8)])
def test_binomial_logpmf_matches_integer_arithmetic(n: int, num: int, den: int) -> None:
    # p = num/den is exact in binary, so log(C(n,k) num^k (den-num)^(n-k)) - n log(den)
    # is an exact reference (math.log of a big integer is correctly rounded enough).
    ks = sorted({0, 1, n // 3, n // 2, n - 1, n})
    got = binomial_logpmf(np.array(ks), n, num / den)
    for k, value in zip(ks, got, strict=True):
        ref = math.log(math.comb(n, k) * num**k * (den - num) ** (n - k)) - n * math.log(den)
        assert value == pytest.approx(ref, rel=1e-13, abs=1e-12)


def test_binomial_logpmf_edges() -> None:
    assert binomial_logpmf(-1, 5, 0.3) == -math.inf
    assert binomial_logpmf(6, 5, 0.3) == -math.inf
    assert binomial_logpmf(0, 5, 0.0) == 0.0
    assert binomial_logpmf(5, 5, 1.0) == 0.0
    assert binomial_logpmf(2, 5, 0.0) == -math.inf
    big = np.exp(binomial_logpmf(np.arange(0, 10_001), 10_000, 0.1))
    assert float(big.sum()) == pytest.approx(1.0, abs=1e-12)


# --------------------------------------------------------------------------- exact accountant


@given(st.lists(probabilities, min_size=0, max_size=10))
def test_poisson_binomial_pmf_matches_enumeration(ps: list[float]) -> None:
    got = poisson_binomial_pmf(ps)
    ref = brute_pmf(ps)
    assert got.shape == (len(ps) + 1,)
    assert np.allclose(got, ref, rtol=1e-9, atol=1e-15)


@given(st.lists(probabilities, min_size=2, max_size=8), epsilons)
def test_exact_delta_matches_brute_force(ps: list[float], epsilon: float) -> None:
    got = exact_delta_by_record(ps, epsilon)
    ref = brute_exact(ps, epsilon)
    assert np.allclose(got, ref, rtol=1e-9, atol=1e-14)
    assert exact_delta(ps, epsilon) == pytest.approx(max(ref), rel=1e-9, abs=1e-14)


def test_exact_delta_against_monte_carlo() -> None:
    # An estimate that shares no code with the accountant: sample the other records,
    # build the empirical law of their count, and take the divergence of that law.
    rng = np.random.default_rng(20240601)
    ps = np.array([0.15, 0.3, 0.5, 0.55, 0.8, 0.9])
    epsilon = 0.2
    draws = 400_000
    exact = exact_delta_by_record(ps, epsilon)
    samples = rng.random((draws, ps.size)) < ps
    for j in range(ps.size):
        counts = np.delete(samples, j, axis=1).sum(axis=1)
        empirical = np.bincount(counts, minlength=ps.size) / draws
        estimate = brute_pair_delta(list(empirical), epsilon)
        assert estimate == pytest.approx(exact[j], abs=0.01)
    assert float(exact.max()) > 0.1  # the test is not vacuous


@given(st.lists(st.floats(min_value=0.02, max_value=0.98), min_size=2, max_size=25),
       st.floats(min_value=1e-9, max_value=0.9))
def test_exact_epsilon_is_the_smallest(ps: list[float], delta: float) -> None:
    eps = exact_epsilon(ps, delta)
    if math.isinf(eps):
        assert exact_delta(ps, 700.0) > delta * (1 - 1e-9)
        return
    assert exact_delta(ps, eps) <= delta * (1 + 1e-9) + 1e-15
    if eps > 1e-6:
        assert exact_delta(ps, eps - 1e-6) > delta


def test_pmf_epsilon_and_delta_small_cases() -> None:
    assert pmf_delta([1.0], 3.0) == 1.0
    assert pmf_delta([0.5, 0.5], math.inf) == 0.5
    assert pmf_epsilon([0.25, 0.5, 0.25], 0.3) == pytest.approx(math.log(1.8))  # .25+.5-.25x
    assert pmf_epsilon([0.5, 0.5], 0.4) == math.inf  # the extreme counts carry 1/2 each
    assert exact_delta([1.0, 1.0], 3.0) == 1.0


# --------------------------------------------------------------------------- fair coins


@pytest.mark.parametrize("m", [0, 1, 2, 3, 10, 57, 200])
@pytest.mark.parametrize("epsilon", [0.0, 0.05, 0.5, 1.0, 3.0, 8.0])
def test_fair_coin_delta_both_directions(m: int, epsilon: float) -> None:
    coins = [math.comb(m, s) / 2**m for s in range(m + 1)]
    first = [0.0] + coins
    second = coins + [0.0]
    x = math.exp(epsilon)
    forward = sum(max(0.0, a - x * b) for a, b in zip(first, second, strict=True))
    backward = sum(max(0.0, b - x * a) for a, b in zip(first, second, strict=True))
    assert forward == pytest.approx(backward, rel=1e-9, abs=1e-300)  # symmetric
    assert fair_coin_delta(m, epsilon) == pytest.approx(forward, rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("epsilon", [0.0, 0.01, 0.3, 1.0, 2.5])
def test_fair_coin_recursion_matches_direct_sums(epsilon: float) -> None:
    for lo, hi, step in [(0, 300, 1), (40_000, 41_000, 97)]:
        recursive = log_fair_coin_deltas(lo, hi, epsilon)
        for m in range(lo, hi + 1, step):
            assert recursive[m - lo] == pytest.approx(log_fair_coin_delta(m, epsilon),
                                                      rel=1e-11, abs=1e-11)
        assert np.all(np.diff(recursive) <= 1e-12)  # non-increasing in m


# --------------------------------------------------------------------------- class bound


@st.composite
def class_instances(draw: st.DrawFn) -> tuple[list[float], float]:
    lam = draw(st.sampled_from([0.01, 0.05, 0.1, 0.25, 0.4, 0.5]))
    n = draw(st.integers(min_value=2, max_value=30))
    where = draw(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=n, max_size=n))
    ps = [lam + (1 - 2 * lam) * w for w in where]
    return ps, lam


@given(class_instances(), epsilons)
def test_class_bound_never_below_exact(instance: tuple[list[float], float],
                                       epsilon: float) -> None:
    ps, lam = instance
    assert exact_delta(ps, epsilon) <= class_delta(len(ps), lam, epsilon) * (1 + 1e-9) + 1e-15


@given(st.integers(min_value=2, max_value=14),
       st.sampled_from([0.02, 0.1, 0.3, 0.5]), epsilons)
def test_class_bound_is_the_mixture_sum(n: int, lam: float, epsilon: float) -> None:
    assert class_delta(n, lam, epsilon) == pytest.approx(brute_class_mixture(n, lam, epsilon),
                                                         rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("n", [2, 5, 30, 500])
@pytest.mark.parametrize("epsilon", [0.0, 0.2, 1.0])
def test_class_bound_exact_at_one_half(n: int, epsilon: float) -> None:
    assert class_delta(n, 0.5, epsilon) == pytest.approx(exact_delta([0.5] * n, epsilon),
                                                         rel=1e-9, abs=1e-300)


@given(st.integers(min_value=2, max_value=20_000), st.sampled_from([0.01, 0.05, 0.2, 0.5]),
       epsilons, epsilons)
def test_class_bound_monotone_in_epsilon(n: int, lam: float, e1: float, e2: float) -> None:
    low, high = sorted((e1, e2))
    assert class_delta(n, lam, high) <= class_delta(n, lam, low) * (1 + 1e-9)


@given(st.integers(min_value=2, max_value=5_000), st.integers(min_value=0, max_value=5_000),
       st.sampled_from([0.01, 0.05, 0.2, 0.5]), st.floats(min_value=0.0, max_value=1.5))
def test_class_bound_monotone_in_n(n: int, extra: int, lam: float, epsilon: float) -> None:
    assert class_delta(n + extra, lam, epsilon) <= class_delta(n, lam, epsilon) * (1 + 1e-9)


@given(st.integers(min_value=2, max_value=5_000), st.floats(min_value=0.001, max_value=0.5),
       st.floats(min_value=0.001, max_value=0.5), st.floats(min_value=0.0, max_value=1.5))
def test_class_bound_monotone_in_lambda(n: int, l1: float, l2: float, epsilon: float) -> None:
    low, high = sorted((l1, l2))
    assert class_delta(n, high, epsilon) <= class_delta(n, low, epsilon) * (1 + 1e-9)


def test_class_bound_limit_and_floor() -> None:
    n, lam = 100, 0.05
    assert class_delta(n, lam, 50.0) == pytest.approx((1 - lam) ** (n - 1), rel=1e-12)
    assert class_epsilon(n, lam, 1e-6) == math.inf
    assert class_epsilon(n, lam, 0.9) == 0.0


@given(st.integers(min_value=2, max_value=50_000), st.sampled_from([0.01, 0.05, 0.2, 0.5]),
       st.floats(min_value=1e-12, max_value=0.5))
def test_class_epsilon_inverts_class_delta(n: int, lam: float, delta: float) -> None:
    eps = class_epsilon(n, lam, delta)
    assume(math.isfinite(eps))
    assert class_delta(n, lam, eps) <= delta * (1 + 1e-9)
    if eps > 1e-6:
        assert class_delta(n, lam, eps * (1 - 1e-6)) > delta


def test_class_bound_large_n_is_fast_and_beats_the_closed_form() -> None:
    for n in (10_000, 1_000_000):
        eps = class_epsilon(n, 0.05, 1e-6)
        reference = closed_form_epsilon(n, 0.05, 1e-6)
        assert reference is not None and 0 < eps < reference
    assert 0 < class_delta(10_000, 0.05, 0.3) < 1e-6 < closed_form_delta(10_000, 0.05, 0.3)
    tiny = class_delta(1_000_000, 0.5, 1.0)  # far below the smallest double: an upper bound
    assert 0 < tiny < 1e-300


# --------------------------------------------------------------------------- histograms


@st.composite
def histogram_instances(draw: st.DrawFn) -> tuple[list[list[float]], float]:
    k = 3
    lam = draw(st.sampled_from([0.05, 0.2, 1 / 3]))
    n = draw(st.integers(min_value=2, max_value=5))
    dists = []
    for _ in range(n):
        raw = draw(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=k, max_size=k))
        total = sum(raw)
        share = [r / total for r in raw] if total > 0 else [1 / k] * k
        dists.append([lam + (1 - k * lam) * s for s in share])
    return dists, lam


@given(histogram_instances(), st.floats(min_value=0.0, max_value=3.0))
def test_histogram_bound_never_below_exact(instance: tuple[list[list[float]], float],
                                           epsilon: float) -> None:
    dists, lam = instance
    bound = histogram_class_delta(len(dists), lam, 3, epsilon)
    assert histogram_delta(dists, epsilon) <= bound * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("k", [3, 4])
@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("epsilon", [0.0, 0.4, 1.5])
def test_histogram_reduction_to_two_categories(k: int, n: int, epsilon: float) -> None:
    # The mixture before the reduction: M ~ Bin(n-1, K lambda) uniform records, and the
    # K-category pair (Multinomial(M) + e_a, Multinomial(M) + e_b) by enumeration.
    lam = 0.8 / k
    uniform = [1 / k] * k
    total = 0.0
    for m in range(n):
        weight = math.comb(n - 1, m) * (k * lam) ** m * (1 - k * lam) ** (n - 1 - m)
        total += weight * histogram_delta([uniform] * (m + 1), epsilon)
    assert histogram_class_delta(n, lam, k, epsilon) == pytest.approx(total, rel=1e-9)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_histogram_bound_exact_for_uniform_records(n: int) -> None:
    dists = [[1 / 3] * 3] * n
    for epsilon in (0.0, 0.5, 2.0):
        assert histogram_class_delta(n, 1 / 3, 3, epsilon) == pytest.approx(
            histogram_delta(dists, epsilon), rel=1e-9)


def test_histogram_epsilon_and_validation() -> None:
    assert histogram_class_epsilon(2000, 0.1, 5, 1e-6) == class_epsilon(2000, 0.1, 1e-6)
    with pytest.raises(InputError):
        histogram_class_delta(100, 0.3, 4, 1.0)  # 4 * 0.3 > 1
    with pytest.raises(InputError):
        histogram_class_delta(100, 0.1, 1, 1.0)


# --------------------------------------------------------------------------- references


def test_closed_form_values() -> None:
    n, lam, delta = 10_000, 0.05, 1e-6
    base = lam * (n - 1)
    expected = max(math.sqrt(14 * math.log(1 / delta) / base), 27 / base)
    assert closed_form_epsilon(n, lam, delta) == pytest.approx(expected)
    assert closed_form_delta(n, lam, expected) == pytest.approx(delta)
    assert closed_form_epsilon(100, 0.05, 1e-6) is None  # would need epsilon > 1
    assert closed_form_delta(1_000, 0.05, 0.01) is None  # below 27/(lambda (n-1))
    assert closed_form_delta(n, lam, 5.0) == closed_form_delta(n, lam, 1.0)
    assert "Proposition 27" in PROPOSITION_27_NOTE and "not computed" in PROPOSITION_27_NOTE


@pytest.mark.parametrize("call", [
    lambda: class_delta(1, 0.1, 1.0),
    lambda: class_delta(10, 0.0, 1.0),
    lambda: class_delta(10, 0.6, 1.0),
    lambda: class_delta(10, 0.1, -0.5),
    lambda: class_delta(10, 0.1, float("nan")),
    lambda: class_delta(10.5, 0.1, 1.0),  # type: ignore[arg-type]
    lambda: class_epsilon(10, 0.1, 0.0),
    lambda: class_epsilon(10, 0.1, 1.0),
    lambda: closed_form_epsilon(10, 0.1, 2.0),
    lambda: exact_delta([0.5], 1.0),
    lambda: exact_delta([0.5, 1.5], 1.0),
    lambda: exact_epsilon([0.5, 0.5], 0.0),
    lambda: fair_coin_delta(-1, 1.0),
])
def test_bad_parameters_raise_input_error(call: object) -> None:
    with pytest.raises(InputError):
        call()  # type: ignore[operator]


def test_parse_probabilities() -> None:
    assert parse_probabilities("0.5\n\n# x\n 0.25 # y\n1\n") == [0.5, 0.25, 1.0]
    with pytest.raises(InputError) as info:
        parse_probabilities("0.5\n1.5\n", source="p.txt")
    assert info.value.line == 2 and "p.txt:2" in str(info.value)
    with pytest.raises(InputError):
        parse_probabilities("abc")


# --------------------------------------------------------------------------- CLI


def run(*args: str) -> object:
    return CliRunner().invoke(noiseless, list(args))


def test_cli_epsilon_reports_class_closed_form_and_gain() -> None:
    result = run("--n", "10000", "--lambda", "0.05", "--epsilon", "0.3")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "class bound" in out and "closed form" in out and "gain" in out
    assert f"{class_delta(10_000, 0.05, 0.3):.4e}" in out
    assert f"{closed_form_delta(10_000, 0.05, 0.3):.4e}" in out
    assert "Proposition 27" in out


def test_cli_json_both_directions() -> None:
    result = run("--n", "10000", "--lambda", "0.05", "--epsilon", "0.3", "--delta", "1e-6",
                 "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["at_epsilon"]["delta_class_bound"] == pytest.approx(class_delta(10_000, 0.05, 0.3))
    at = data["at_delta"]
    assert at["epsilon_class_bound"] == pytest.approx(class_epsilon(10_000, 0.05, 1e-6))
    assert at["epsilon_gain"] == pytest.approx(at["epsilon_closed_form"]
                                               / at["epsilon_class_bound"])
    assert at["epsilon_gain"] > 1
    assert data["proposition_27"]["computed"] is False


def test_cli_infinite_epsilon_is_explained() -> None:
    result = run("--n", "100", "--lambda", "0.05", "--delta", "1e-6", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["at_delta"]["epsilon_class_bound"] is None
    assert any("no finite epsilon" in note for note in data["notes"])


def test_cli_histogram() -> None:
    result = run("--n", "5000", "--lambda", "0.1", "--categories", "4", "--epsilon", "0.5")
    assert result.exit_code == 0, result.output
    assert "histogram" in result.output and "4 categories" in result.output
    assert run("--n", "50", "--lambda", "0.3", "--categories", "4",
               "--epsilon", "1").exit_code == 2


def test_cli_probability_file(tmp_path: Path) -> None:
    ps = [0.2, 0.35, 0.5, 0.65, 0.8] * 40
    path = tmp_path / "p.txt"
    path.write_text("# known probabilities\n" + "\n".join(map(str, ps)) + "\n")
    result = run("--p", str(path), "--epsilon", "0.5", "--delta", "1e-3", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n"] == 200 and data["lambda"] == pytest.approx(0.2)
    at = data["at_epsilon"]
    assert at["delta_exact"] == pytest.approx(exact_delta(ps, 0.5))
    assert at["delta_exact"] <= at["delta_class_bound"]
    assert data["at_delta"]["epsilon_exact"] == pytest.approx(exact_epsilon(ps, 1e-3))
    assert run("--p", str(path), "--n", "7", "--epsilon", "1").exit_code == 2
    assert run("--p", str(path), "--lambda", "0.3", "--epsilon", "1").exit_code == 2


@pytest.mark.parametrize("content", ["0.5\nnope\n", "0.5\n1.2\n", "0.5\n"])
def test_cli_bad_probability_file_exits_1(tmp_path: Path, content: str) -> None:
    path = tmp_path / "p.txt"
    path.write_text(content)
    result = run("--p", str(path), "--epsilon", "1")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert f"{path}:" in result.output  # file:line: message


@pytest.mark.parametrize("args", [
    ["--n", "10", "--lambda", "0", "--epsilon", "1"],
    ["--n", "10", "--lambda", "0.7", "--epsilon", "1"],
    ["--n", "10", "--lambda", "-0.1", "--epsilon", "1"],
    ["--n", "1", "--lambda", "0.1", "--epsilon", "1"],
    ["--n", "10", "--lambda", "0.1", "--epsilon", "-1"],
    ["--n", "10", "--lambda", "0.1", "--epsilon", "nan"],
    ["--n", "10", "--lambda", "0.1", "--delta", "0"],
    ["--n", "10", "--lambda", "0.1", "--delta", "1"],
    ["--n", "10", "--lambda", "0.1"],
    ["--lambda", "0.1", "--epsilon", "1"],
    ["--n", "10", "--epsilon", "1"],
    ["--n", "ten", "--lambda", "0.1", "--epsilon", "1"],
    ["--n", "10", "--lambda", "0.1", "--epsilon", "1", "--categories", "1"],
])
def test_cli_bad_parameters_exit_2_without_traceback(args: list[str]) -> None:
    result = CliRunner().invoke(noiseless, args)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "Error" in result.output
