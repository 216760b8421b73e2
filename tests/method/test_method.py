"""Known-answer tests of the method's pieces: bins, oracle noise, Pb. 1 and Pb. 2."""

import numpy as np
import pytest

from expril.method import binning, labels, reweight, solvers
from expril.privacy import mechanisms


def test_discrete_feature_gets_one_bin_per_value_and_no_empty_bin():
    rng = np.random.default_rng(0)
    x = np.stack(
        [
            rng.choice([0.0, 1.0], 500, p=[0.97, 0.03]),  # like CTG's DS
            rng.choice([0.0, 1.0, 2.0], 500),  # like Tendency
            rng.normal(size=500),
        ],
        axis=1,
    )
    edges = binning.make_bins(x, q=8)
    assert list(binning.bin_counts(edges)) == [2, 3, 8]
    counts = binning.bin_sums(binning.bin_ids(edges, x), binning.bin_counts(edges).sum())
    assert (counts > 0).all()


def test_repeated_quantiles_are_merged():
    x = np.concatenate([np.zeros(800), np.linspace(1, 2, 200)])[:, None]
    edges = binning.make_bins(x, q=10)[0]
    assert len(np.unique(edges)) == len(edges)
    assert edges.min() > 0  # no edge at the minimum: the first bin holds the zeros
    ids = binning.bin_ids([edges], x)
    assert (np.bincount(ids[:, 0]) > 0).all()


def test_weighted_quantiles_follow_the_weights():
    x = np.linspace(0, 1, 1000)
    w = np.where(x > 0.5, 3.0, 1.0)  # 3/4 of the mass above 0.5
    edges = binning.feature_edges(x, 4, w)
    assert np.allclose(edges, [0.5, 2 / 3, 5 / 6], atol=0.01)  # unweighted: 1/4, 1/2, 3/4


def test_pack_round_trip():
    rng = np.random.default_rng(1)
    per_seed = [binning.make_bins(rng.normal(size=(50, 3)), q) for q in (3, 5)]
    back = binning.unpack(binning.pack(per_seed))
    for a, b in zip(per_seed, back):
        assert all(np.array_equal(u, v) for u, v in zip(a, b))


def test_incidence_matrix_sums_per_bin_and_bounds_the_curvature():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 4))
    _, n_bins, ids = binned(x, 6)
    values = rng.normal(size=300)
    assert np.allclose(binning.incidence(ids, n_bins) @ values, binning.bin_sums(ids, n_bins, values))
    system = binning.incidence(ids, n_bins, values)
    assert np.allclose(system @ np.ones(300), binning.bin_sums(ids, n_bins, values))
    largest = np.linalg.eigvalsh((system.T @ system).toarray()).max()
    assert largest <= solvers.curvature_bound(system) < 10 * largest


def test_noiseless_oracle_answers_exact_fractions():
    ids = np.array([[0, 2], [0, 3], [1, 3], [1, 3]])
    errors = np.array([1, 0, 1, 1])
    gen = np.random.default_rng(0)
    assert np.allclose(mechanisms.Paper.at_scale(0.0).release_counts(ids, 4, gen), [0.5, 0.5, 0.25, 0.75])
    assert np.allclose(mechanisms.Paper.at_scale(0.0).release_errors(ids, 4, errors, gen), [0.5, 1.0, 1.0, 2 / 3])


def test_oracle_noise_has_laplace_scale_and_is_clipped():
    n_bins, count, scale = 1, 400, 20.0
    ids = np.zeros((count, 1), dtype=int)
    errors = np.zeros(count)
    errors[:200] = 1
    gen = np.random.default_rng(3)
    paper = mechanisms.Paper.at_scale(scale)
    draws = np.array([paper.release_errors(ids, n_bins, errors, gen)[0] for _ in range(20000)])
    assert draws.min() >= 0 and draws.max() <= 1
    # Away from the clip, answer = 0.5 + Lap(scale)/count: median absolute deviation = scale ln2 / count.
    assert np.median(np.abs(draws - 0.5)) == pytest.approx(scale * np.log(2) / count, rel=0.05)
    # A bin of 4 samples, all errors: (4 + Lap(20)) / 4 clips to 1 when the noise is >= 0 (p = 1/2)
    # and to 0 when it is <= -4 (p = exp(-4/20) / 2).
    small = np.array([paper.release_errors(ids[:4], n_bins, errors[:4], gen)[0] for _ in range(20000)])
    assert (small == 1.0).mean() == pytest.approx(0.5, abs=0.015)
    assert (small == 0.0).mean() == pytest.approx(np.exp(-4 / scale) / 2, abs=0.015)


def test_empty_bin_does_not_divide_by_zero():
    ids = np.array([[0], [0]])
    out = mechanisms.Paper.at_scale(1.0).release_errors(ids, 2, np.array([1, 0]), np.random.default_rng(0))
    assert np.isfinite(out).all() and 0 <= out[1] <= 1


def binned(x, q):
    """Source-quantile bins of x: (edges, number of bins, bin index array)."""
    edges = binning.make_bins(x, q)
    return edges, binning.bin_counts(edges).sum(), binning.bin_ids(edges, x)


def test_reweighting_recovers_a_known_shift():
    rng = np.random.default_rng(0)
    source = rng.uniform(size=(20000, 2))
    # Target density 2 x_1 on [0, 1]: the ideal weight of a source point is 2 x_1.
    target = np.stack([np.sqrt(rng.uniform(size=20000)), rng.uniform(size=20000)], axis=1)
    edges, n_bins, ids = binned(source, 10)
    p = binning.bin_sums(binning.bin_ids(edges, target), n_bins) / len(target)
    w, _ = reweight.importance_weights(ids, n_bins, p, ridge=0.01, steps=2000, tol=1e-5)
    assert np.allclose(binning.bin_sums(ids, n_bins, w) / len(source), p, atol=2e-3)
    top, bottom = source[:, 0] > 0.9, source[:, 0] < 0.1
    assert w[top].mean() == pytest.approx(1.9, abs=0.1)
    assert w[bottom].mean() == pytest.approx(0.1, abs=0.1)
    assert w.min() >= 0


def test_label_estimation_recovers_labels_from_exact_error_marginals():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(600, 3))
    _, n_bins, ids = binned(x, 6)
    truth = (np.isin(ids[:, 0], [1, 2, 4])).astype(float)  # labels set by feature 0's bin
    h0 = np.ones(600)
    q0 = mechanisms.Paper.at_scale(0.0).release_errors(ids, n_bins, h0 != truth, rng)
    w = np.ones(600)
    relaxed, _ = labels.estimate_labels(ids, n_bins, w, [(h0, q0)], ridge=1e-3, steps=2000, tol=1e-5)
    assert np.array_equal(labels.threshold(relaxed), truth)


def test_cumulative_system_is_fitted_by_the_truth_and_beats_a_single_block():
    rng = np.random.default_rng(2)
    x = rng.uniform(size=(800, 2))
    _, n_bins, ids = binned(x, 8)
    truth = ((x[:, 0] - 0.5) * (x[:, 1] - 0.5) > 0).astype(float)  # not additive: XOR-like
    w = np.ones(800)
    h0, h1 = np.ones(800), (x[:, 0] > 0.5).astype(float)
    blocks = [(h, mechanisms.Paper.at_scale(0.0).release_errors(ids, n_bins, h != truth, rng)) for h in (h0, h1)]
    for h, q in blocks:  # the truth solves every block exactly
        matrix, rhs = labels.equation_block(ids, n_bins, w, h, q)
        assert np.allclose(matrix @ truth, rhs)
    acc = {
        name: (labels.threshold(labels.estimate_labels(ids, n_bins, w, b, 1e-3, 2000, 1e-5)[0]) == truth).mean()
        for name, b in {"I": blocks[1:], "C": blocks}.items()
    }
    assert acc["C"] >= acc["I"] and acc["C"] > 0.7
