"""The mechanisms' registry and the dirichlet mechanism (Iyer, Nath, Sarawagi, KDD 2016, Section 3)."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from expril.io import save_npz
from expril.method import binning, mlp
from expril.privacy import calibration, histogram, ledger, mechanisms
from expril.steps import curator
from harness import ROOT


def test_registry_names_every_mechanism():
    """ExPriL's own families come with the registry; a compared method's come with its plug-in,
    which a name not yet registered loads (a fresh process: no plug-in imported before)."""
    code = (
        "import json; from expril.privacy import mechanisms as m; own = sorted(m.MECHANISMS); "
        "found = m.get('dpsgd').__module__; print(json.dumps([own, found, sorted(m.MECHANISMS)]))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    own, found, every = json.loads(out.stdout)
    assert own == sorted(
        ["paper", "counts", "gaussian-counts", "dirichlet", "dp-merf", "rff-embedding", "zcdp-embedding"]
    )
    assert found == "expril.privacy.dpsgd"
    assert set(every) == {*own, "dpsgd", "aim", "mst", "aim-zcdp", "mst-zcdp"}
    assert mechanisms.get("dirichlet") is mechanisms.Dirichlet
    assert mechanisms.Dirichlet.neighbours == mechanisms.LABEL == "change one label"
    with pytest.raises(ValueError, match=r"unknown mechanism 'gauss', expected one of \[.*'dpsgd'"):
        mechanisms.get("gauss")


@pytest.mark.parametrize(
    "sigma, eps, a, b, expected",
    [
        # mpmath at 40 digits (betainc on the small side of the threshold): down to the tails a run's
        # delta share reaches, where sampling cannot check them.
        (0.00371, 0.25, 49, 51, 1.5853728e-6),
        (0.0066, 0.25, 352, 48, 2.4999344e-6),
        (0.02, 0.5, 26, 974, 5.6839617e-172),
        (8e-5, 0.0133, 1101, 1399, 4.8846428e-9),
        (0.5, 0.3, 5, 3, 0.38842387),
    ],
)
def test_delta_of_one_label_change_known_values(sigma, eps, a, b, expected):
    assert calibration._delta_one_way(sigma, eps, a, b) == pytest.approx(expected, rel=1e-6)


def test_delta_matches_the_privacy_loss_of_sampled_answers():
    """Eq. 9 from Gamma functions against the loss ln f_D(theta) - ln f_D'(theta) of Beta draws,
    for both label changes of a set with E = 5 errors and 3 correct records."""
    sigma, eps, e, c = 0.5, 0.3, 5, 3
    theta = np.random.default_rng(0).beta(sigma * e, sigma * c, 400_000)
    density = stats.beta(sigma * e, sigma * c).logpdf(theta)
    loss = [density - stats.beta(sigma * (e + k), sigma * (c - k)).logpdf(theta) for k in (-1, 1)]
    sampled = [np.mean(one > eps) for one in loss]
    assert sampled[0] == pytest.approx(calibration._delta_one_way(sigma, eps, e, c), abs=0.004)
    assert sampled[1] == pytest.approx(calibration._delta_one_way(sigma, eps, c, e), abs=0.004)
    assert calibration.dirichlet_delta(sigma, eps, e, c) == max(
        calibration._delta_one_way(sigma, eps, e, c), calibration._delta_one_way(sigma, eps, c, e)
    )


@pytest.mark.parametrize(
    "eps, delta, errors, size",
    [(1.0, 1e-6, 30, 100), (0.5, 1e-6, 500, 1000), (0.25, 2.5e-6, 48, 400), (0.05, 0.05, 50, 1000)],
)
def test_sigma_search_finds_the_largest_sigma_meeting_delta(eps, delta, errors, size):
    sigma = calibration.search_sigma(eps, delta, [errors], [size - errors])[0]
    assert calibration.dirichlet_delta(sigma, eps, errors, size - errors) <= delta
    assert calibration.dirichlet_delta(sigma * 1.001, eps, errors, size - errors) > delta


def test_no_sigma_for_small_counts_or_zero_delta():
    errors = np.array([0, 1, 2, 5, 1, 999, 500])
    size = np.array([2, 5, 10, 10, 1000, 1000, 1000])
    sigma = calibration.search_sigma(1.0, 1e-6, errors, size - errors)
    assert np.isnan(sigma[:6]).all() and sigma[6] > 0
    assert np.isnan(calibration.search_sigma(1.0, 0.0, [500], [500])).all()


def _one_feature(sizes, errors):
    """Bin ids (n, 1) and error marks for bins of the given sizes and error counts."""
    ids = np.repeat(np.arange(len(sizes)), sizes)[:, None]
    wrong = np.concatenate([np.arange(n) < e for n, e in zip(sizes, errors)]).astype(float)
    return ids, wrong


def test_release_is_unbiased_for_large_counts():
    """400 bins of 1000 records, 300 errors: one Beta draw each, mean 0.3."""
    bins = 400
    ids, wrong = _one_feature([1000] * bins, [300] * bins)
    dirichlet = mechanisms.Dirichlet(1.0, 1e-6, 1, 1, False)
    sigma = calibration.search_sigma(1.0, 1e-6, [300], [700])[0]
    theta = dirichlet.release_errors(ids, bins, wrong, np.random.default_rng(0))
    assert ((theta > 0) & (theta < 1)).all()
    std = math.sqrt(0.3 * 0.7 / (1000 * sigma + 1))  # the Beta's, Section 3.1
    assert abs(theta.mean() - 0.3) < 4 * std / math.sqrt(bins)
    assert theta.std() == pytest.approx(std, rel=0.15)


def test_small_counts_fall_back_to_the_laplace_rate_at_the_bin_share():
    """d = 2 features, T = 2, no counts query: each bin gets (eps / 2 / 2, delta / 2 / 2)."""
    sizes, errors = [2, 5, 10, 1000, 1000], [1, 0, 3, 1, 500]
    ids, wrong = _one_feature(sizes, errors)
    ids = np.column_stack([ids, ids + len(sizes)])  # the second feature bins alike
    dirichlet = mechanisms.Dirichlet(4.0, 4e-6, 2, 2, False)
    assert (dirichlet.bin_eps, dirichlet.bin_delta) == (1.0, 1e-6)
    released = dirichlet.release_errors(ids, 10, wrong, np.random.default_rng(1))
    # The draws' layout: one Beta per bin, then one Laplace per bin.
    replay = np.random.default_rng(1)
    replay.beta(np.ones(10), np.ones(10))
    laplace = histogram.noisy_rate(np.tile(errors, 2), np.tile(sizes, 2), replay.laplace(0.0, 1.0, 10))
    fallback = np.tile([True, True, True, True, False], 2)
    assert np.array_equal(released[fallback], laplace[fallback])
    assert not np.isin(released[~fallback], laplace).any()
    assert ((released >= 0) & (released <= 1)).all()


def test_no_noise_answers_the_exact_fractions_and_spends_no_delta():
    ids, wrong = _one_feature([4, 0, 10], [1, 0, 10])
    exact = mechanisms.Dirichlet(math.inf, 1e-5, 1, 2, False)
    assert np.array_equal(exact.release_errors(ids, 3, wrong, np.random.default_rng(0)), [0.25, 0.0, 1.0])
    assert exact.query_cost("errors_t0") == (math.inf, 0.0)


@pytest.mark.parametrize("importance_sampling", [True, False])
def test_a_dirichlet_run_spends_its_budget_as_its_accountant_composes_it(tmp_path, importance_sampling):
    """A run's oracle steps on 40 records, d = 2, T = 2: the counts query when the IS step asks
    it, then two error queries; the ledger records the label relation and the composed spend."""
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(1, 40, 2))
    save_npz(tmp_path / "val.npz", x=x, y=(x[..., 0] > 0.5).astype(np.int8), seeds=np.array([0]))
    save_npz(tmp_path / "bins.npz", seeds=np.array([0]), **binning.pack([binning.make_bins(x[0], 4)]))
    plan = mechanisms.Dirichlet(1.0, 1e-5, 2, 2, importance_sampling)
    previous = None
    if importance_sampling:
        curator.oracle_marginals(
            tmp_path / "val.npz", tmp_path / "bins.npz", tmp_path / "m.npz", tmp_path / "m.csv", "A", plan.param()
        )
        previous = tmp_path / "m.csv"
    for t in range(2):
        save_npz(tmp_path / f"h{t}.npz", seeds=np.array([0]), **mlp.constant_model(t, 1))
        curator.oracle_errors(
            tmp_path / "val.npz",
            tmp_path / "bins.npz",
            tmp_path / f"h{t}.npz",
            tmp_path / f"q{t}.npz",
            tmp_path / f"q{t}.csv",
            "A",
            f"errors_t{t}",
            plan.param(),
            previous_ledger=previous,
        )
        previous = tmp_path / f"q{t}.csv"
    book = ledger.load(previous)
    assert len(book) == plan.planned_queries and (book.neighbours == "change one label").all()
    costs = list(zip(book.eps_spent, book.delta_spent))
    assert (book.eps_total.iloc[-1], book.delta_total.iloc[-1]) == plan.compose(costs)
    assert book.eps_total.iloc[-1] == pytest.approx(1.0) and book.delta_total.iloc[-1] == pytest.approx(1e-5)
    errors = book[book["query"] != mechanisms.COUNTS_QUERY]
    assert np.allclose(errors.eps_spent, 1 / plan.planned_queries) and np.allclose(errors.delta_spent, 5e-6)
    assert errors[["sensitivity", "scale"]].isna().all().all()
    if importance_sampling:  # the counts query: `paper`'s Laplace release, lambda = d (T + 1) / eps
        counts = book.iloc[0]
        assert (counts.eps_spent, counts.delta_spent, counts.scale) == (pytest.approx(1 / 3), 0.0, 6.0)
