"""The empirical DP audit (expril/privacy/audit.py): its statistics, its power, and the oracle's mechanisms."""

import math

import numpy as np
import pytest
from scipy import stats

from expril.privacy import audit, calibration, mechanisms

# Per data set; each half (selection, bound) gets 200k draws, so a bound is within a few % of eps.
SAMPLES = 400_000


def test_clopper_pearson_known_values():
    lower, upper = audit.clopper_pearson([0, 10, 7], 10, 0.05)
    assert lower[0] == 0.0 and upper[1] == 1.0
    assert upper[0] == pytest.approx(1 - 0.05 ** (1 / 10))  # closed form for 0 successes
    assert lower[1] == pytest.approx(0.05 ** (1 / 10))
    assert lower[2] == pytest.approx(stats.beta.ppf(0.05, 7, 4))
    assert upper[2] == pytest.approx(stats.beta.ppf(0.95, 8, 3))


def test_neighbours_differ_by_one_record_in_both_orders():
    pairs = audit.neighbours(3)
    assert len(pairs) == 4 and pairs[2] == pairs[0][::-1] and pairs[3] == pairs[1][::-1]
    for small, large in (sorted(p, key=lambda d: d.size) for p in pairs):
        assert large.size == small.size + 1 and large.errors - small.errors in (0, 1)


@pytest.mark.parametrize(
    "mechanism, answer",
    [
        ("paper", lambda ids, wrong, g: mechanisms.Paper.at_scale(2.0).release_errors(ids, 1, wrong, g)),
        ("counts-bins", lambda ids, wrong, g: mechanisms.Counts.at_scale(2.0).release_counts(ids, 1, g)),
        ("counts-errors", lambda ids, wrong, g: mechanisms.Counts.at_scale(2.0).release_errors(ids, 1, wrong, g)),
    ],
)
def test_sample_is_the_oracle_answer_repeated(mechanism, answer):
    data = audit.BinData(3, 1)
    ids, wrong = data.records()
    drawn = audit.sample(mechanism, data, 2.0, 5, np.random.default_rng(0))
    g = np.random.default_rng(0)
    assert np.allclose(drawn, [answer(ids, wrong, g) for _ in range(5)])


def test_pair_sample_has_independent_noises():
    drawn = audit.sample("counts-pair", audit.BinData(4, 1), 1.0, 100_000, np.random.default_rng(0))
    assert drawn.shape == (100_000, 2)
    assert np.allclose(drawn.mean(axis=0), [4, 1], atol=0.05)
    assert abs(np.corrcoef(drawn.T)[0, 1]) < 0.02


@pytest.mark.parametrize("mechanism", ["counts-bins", "counts-errors", "counts-pair"])
@pytest.mark.parametrize("scale", [1.0, 4.0])
@pytest.mark.parametrize("bin_size", [1, 2])
def test_counts_mechanism_stays_within_its_claim(mechanism, scale, bin_size):
    result = audit.audit(mechanism, scale, bin_size, SAMPLES, seed=0)
    claimed = audit.claimed_epsilon(mechanism, scale)
    assert result["eps_lower"] <= claimed
    # Laplace noise on a count attains its eps, so a powerful audit must come close to it.
    assert result["eps_lower"] >= 0.85 * claimed


@pytest.mark.parametrize(
    "mechanism, actual_scale",
    [
        ("counts-errors", 0.5),  # half the noise the claim needs: true eps 2
        ("counts-pair", 0.5),  # true eps 4
        ("counts-errors", 0.0),  # no noise at all
        ("paper", 0.0),
    ],
)
def test_audit_detects_a_mechanism_with_too_little_noise(mechanism, actual_scale):
    claimed_at_scale_one = audit.claimed_epsilon(mechanism, 1.0)
    result = audit.audit(mechanism, actual_scale, 2, SAMPLES, seed=0)
    assert result["eps_lower"] > 1.5 * claimed_at_scale_one


def test_paper_mechanism_is_audited_and_reported():
    """Eq. 7 on small bins: the bounds are printed (pytest -s) and tabulated in
    docs/privacy_audit.md, not asserted against the Lemma's claim."""
    table = audit.audit_table(["paper"], bin_sizes=(1, 2, 3), scales=(1, 5), n_samples=SAMPLES)
    print(table[["bin_size", "scale", "claimed_eps", "exact_eps", "eps_lower", "event"]])
    assert len(table) == 6
    assert np.isfinite(table[["eps_lower", "p", "q", "p_lower", "q_upper"]].to_numpy()).all()
    assert table[["p", "q"]].stack().between(0, 1).all()
    assert (table.eps_lower <= table.exact_eps).all()  # a lower bound, as it claims to be


def test_exact_epsilon_of_the_paper_mechanism():
    assert audit.exact_epsilon("paper", 1.0, 2) == pytest.approx(math.log(2) + 0.5)
    assert audit.exact_epsilon("paper", 1.0, 1) == 1.0
    assert audit.exact_epsilon("counts-pair", 2.0, 2) == 1.0


@pytest.mark.parametrize(
    "kind, bin_size, scale",
    [
        ("fallback", 2, 1.0),  # no sigma exists: the Laplace rate, which attains its eps
        ("fallback", 1000, 2.0),
        ("Beta middle", 1000, 1.0),  # both released by the Beta draw, their sigmas nearly equal
    ],
)
def test_dirichlet_stays_within_its_claim_on_fallback_and_middle_pairs(kind, bin_size, scale):
    pairs = audit.dirichlet_pairs(scale, bin_size)[kind]
    result = audit.audit("dirichlet", scale, bin_size, SAMPLES, seed=0, pairs=pairs)
    claimed = audit.claimed_epsilon("dirichlet", scale)
    assert result["claimed_delta"] == audit.DIRICHLET_DELTA and result["eps_lower"] <= claimed
    if kind == "fallback":
        assert result["eps_lower"] >= 0.85 * claimed


@pytest.mark.parametrize("kind", ["switch", "Beta edge"])
def test_dirichlet_claim_is_refuted_where_sigma_depends_on_the_count(kind):
    """N = 100, eps 1: E* = 13 is the smallest count with a sigma; E = 12 falls back and E = 14
    gets a sigma four times larger, so neighbours' answers differ far beyond (eps, delta)
    (docs/privacy_audit.md)."""
    pairs = audit.dirichlet_pairs(1.0, 100)[kind]
    assert {d.errors for pair in pairs for d in pair} == ({12, 13} if kind == "switch" else {13, 14})
    result = audit.audit("dirichlet", 1.0, 100, SAMPLES, seed=0, pairs=pairs)
    assert result["eps_lower"] > 3 * audit.claimed_epsilon("dirichlet", 1.0)


def test_delta_claim_lowers_the_bound():
    """(p - delta) / q: a delta as large as p leaves nothing to bound."""
    plain = audit._log_ratio_bound(5000, 2000, 10_000, 0.025)[0]
    assert audit._log_ratio_bound(5000, 2000, 10_000, 0.025, 0.1)[0] < plain
    assert audit._log_ratio_bound(5000, 2000, 10_000, 0.025, 0.6)[0] == -np.inf


def _cell_log_probs(count, n, scale, width):
    """ln P[r in cell] of r = clip((count + Lap(scale)) / n, 0, 1), from the Laplace CDF alone: the
    atom at 0, the cells [a, a + width) of (0, 1), the atom at 1."""
    edges = np.linspace(0, 1, round(1 / width) + 1)
    cdf = stats.laplace.cdf(edges * n - count, scale=scale)
    return np.log(np.concatenate([[cdf[0]], np.diff(cdf), [1 - cdf[-1]]]))


def _brute_force_counts_loss(counts, removed, scale, width):
    """max over the product cells of the whole q-bin output of |ln P_D[cell] / P_D'[cell]|: a lower
    bound on the exact loss that reaches it as the cells shrink."""
    smaller = list(counts)
    smaller[removed] -= 1
    n = sum(counts)
    ratios = [
        _cell_log_probs(c, n, scale, width) - _cell_log_probs(s, n - 1, scale, width) for c, s in zip(counts, smaller)
    ]
    joint = sum(np.meshgrid(*ratios, indexing="ij", sparse=True))
    return max(joint.max(), (-joint).max())


@pytest.mark.parametrize(
    "counts, scale, width",
    [((1, 1), 1.0, 1e-3), ((1, 2), 2.0, 1e-3), ((3, 0), 0.5, 1e-3), ((1, 1, 1), 1.0, 1e-2), ((2, 1, 3), 1.5, 1e-2)],
)
def test_exact_counts_query_loss_matches_a_brute_force_maximisation(counts, scale, width):
    for removed in (j for j, c in enumerate(counts) if c):
        exact = audit.exact_counts_query_epsilon(counts, removed, scale)
        brute = _brute_force_counts_loss(counts, removed, scale, width)
        assert exact - 0.05 < brute <= exact + 1e-9


def test_exact_counts_query_loss_known_values():
    # (1, 1), lambda 1: removal peaks at r = (1/2, 1/2), 2 ln 2 + 2 (2 - 1) / 2; addition, 2/lambda.
    assert audit.exact_counts_query_epsilon((1, 1), 0, 1.0) == pytest.approx(2 * math.log(2) + 1)
    # (1, 1, 1), lambda 1: the atoms r_j = 0 and r_k = 1 (k != j) under D', q / lambda = 3.
    assert audit.exact_counts_query_epsilon((1, 1, 1), 2, 1.0) == pytest.approx(3.0)
    assert audit.exact_counts_query_epsilon((1, 1, 1), 2, 1.0, bins=(0, 1)) == pytest.approx(2.0)
    # CTG at eps = 1: n' = 700, d = 21, q = 2, lambda = 63; the Lemma claims 21/63 = 1/3.
    ctg = audit.worst_counts_query_epsilon(2, 700, 63.0, features=21)
    assert ctg == pytest.approx(21 * (2 * math.log(700 / 699) + 2 * 699 / (700 * 63))) and ctg == pytest.approx(
        0.7258, abs=1e-4
    )
    # One bin holds every record: max(ln(n / (n - 1)), 1 / lambda).
    assert audit.worst_counts_query_epsilon(1, 10, 2.0) == pytest.approx(0.5)
    assert audit.exact_epsilon("paper-counts", 1.0, (1, 1, 1)) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        audit.exact_counts_query_epsilon((1, 0), 1, 1.0)


def test_paper_counts_sample_is_the_oracle_answer_on_its_first_two_bins():
    data = audit.FeatureData((1, 2, 0))
    ids, _ = data.records()
    drawn = audit.sample("paper-counts", data, 2.0, 5, np.random.default_rng(0))
    g = np.random.default_rng(0)
    assert np.allclose(drawn, [mechanisms.Paper.at_scale(2.0).release_counts(ids, 3, g)[:2] for _ in range(5)])


@pytest.mark.parametrize("counts, scale", [((1, 1), 1.0), ((1, 1, 1), 2.0)])
def test_paper_counts_query_exceeds_the_lemmas_claim(counts, scale):
    """Removing one record changes the divisor n of every bin: the atoms {r_j = 0, r_k = 1} are
    e^(1/lambda) more likely per bin under D' than under D, so two bins alone reach 2/lambda."""
    result = audit.audit("paper-counts", scale, counts, SAMPLES, seed=0)
    claimed = audit.claimed_epsilon("paper-counts", scale)
    assert result["eps_lower"] > 1.5 * claimed
    assert result["eps_lower"] <= result["exact_eps"]


# --- the black-box path (audit.audit_release): any release, a canary, one statistic ---------------

D_FEATURES, EPS, DELTA = 16, 1.0, 1e-5


def _records():
    """100 ordinary records and four corner canaries, both labels at +3 and -3 in every feature."""
    r = np.random.default_rng(0)
    x = np.vstack([r.normal(size=(100, D_FEATURES)), np.full((2, D_FEATURES), 3.0), np.full((2, D_FEATURES), -3.0)])
    return x, np.r_[r.integers(0, 2, 100), [1, 0, 1, 0]], np.arange(100, 104)


def _sums(sensitivity, noise=True):
    """Per-feature sums of features clipped to [-1, 1] (L2 sensitivity sqrt(d)), with Gaussian
    noise sized for `sensitivity`, or none."""
    std = calibration.gaussian_noise_std(EPS, DELTA, sensitivity)
    return lambda x, y, keys: np.stack(
        [np.clip(x, -1, 1).sum(0) + noise * np.random.default_rng(k).normal(0, std, x.shape[1]) for k in keys]
    )


def _shared_noise(x, y, keys):
    """Two counts (records, negatives), each sized for half the budget, one noise draw for both."""
    std = calibration.gaussian_noise_std(EPS / 2, DELTA / 2, 1.0)
    return np.array([[len(x) + z, (y == 0).sum() + z] for z in (np.random.default_rng(k).normal(0, std) for k in keys)])


def test_a_correct_gaussian_release_stays_below_its_claim():
    x, y, candidates = _records()
    result = audit.audit_release(_sums(math.sqrt(D_FEATURES)), x, y, candidates, EPS, DELTA, 2000, seed=0)
    assert result["eps_lower"] < EPS and result["canary"] in candidates and result["n_samples"] == 2000


@pytest.mark.parametrize(
    "release, at_least",
    [
        (_sums(math.sqrt(D_FEATURES), noise=False), 5.0),  # noise omitted: 2000 draws, no overlap
        (_sums(1.0), EPS),  # noise sized for sensitivity 1 where one record moves 16 sums
        (_shared_noise, 2.0),  # their difference is exact
    ],
    ids=["noise omitted", "sensitivity 1 not sqrt(d)", "one draw for two queries"],
)
def test_wrong_releases_are_refuted(release, at_least):
    x, y, candidates = _records()
    assert audit.audit_release(release, x, y, candidates, EPS, DELTA, 2000, seed=0)["eps_lower"] > at_least


def test_the_canary_moves_the_release_most_in_its_noise_metric():
    """With one draw shared by two counts, removing a negative moves both alike (along the
    noise), a positive only the first: the positive one is the canary, although it moves the
    release less in plain L2."""
    x, y, candidates = _records()
    chosen = audit.canary(_shared_noise, x, y, candidates, np.arange(100))
    assert y[chosen] == 1
