"""The `gaussian-counts` mechanism: `counts`' releases with Gaussian noise calibrated in zero-concentrated
DP, checked against OpenDP's own measurements and composition, and through the curator's steps and
the ledger."""

import math

import numpy as np
import opendp.prelude as dp
import pytest

from expril.io import load_npz, save_npz
from expril.method import binning, mlp
from expril.plugins import llp as llp_method
from expril.privacy import ledger, mechanisms
from expril.rivals import llp
from expril.steps import curator

dp.enable_features("contrib")
DOMAIN, METRIC = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)


def _plan(eps=1.0, delta=1e-5, d=2, iterations=2, importance_sampling=False):
    return mechanisms.get("gaussian-counts")(eps, delta, d, iterations, importance_sampling)


def _run_eps(std, d, queries, delta):
    """(eps, delta) of `queries` Gaussian releases of std `std` and L2 sensitivity sqrt(d), by
    OpenDP's composition in zCDP and its conversion: independent of the mechanism's arithmetic."""
    composed = dp.c.make_composition([dp.m.make_gaussian(DOMAIN, METRIC, std)] * queries)
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(composed), delta).map(math.sqrt(d))


def _within(spent, eps, delta):
    return spent[0] <= eps and spent[1] == delta


@pytest.mark.parametrize(
    "eps, delta, d, iterations, importance_sampling",
    [(1.0, 1e-5, 21, 2, True), (1.0, 1e-5, 2, 2, False), (0.1, 1e-6, 10, 3, True), (5.0, 1e-5, 25, 2, True)],
)
def test_the_std_is_the_smallest_whose_planned_queries_meet_the_budget(eps, delta, d, iterations, importance_sampling):
    plan = _plan(eps, delta, d, iterations, importance_sampling)
    k = plan.planned_queries
    assert k == iterations + 1  # `counts`' plan: the bin counts query and one error query per h_t
    gaussian = dp.m.make_gaussian(DOMAIN, METRIC, plan.scale)
    assert gaussian.output_measure == dp.zero_concentrated_divergence()
    # One query: sensitivity sqrt(d) maps to its rho, d / (2 sigma^2), which the ledger records.
    assert gaussian.map(math.sqrt(d)) == pytest.approx(d / (2 * plan.scale**2), rel=1e-12)
    assert plan.rho == gaussian.map(math.sqrt(d)) and plan.sensitivity == math.sqrt(d)
    # The run's k queries together are within (eps, delta); a std 1e-9 smaller is not.
    assert _within(_run_eps(plan.scale, d, k, delta), eps, delta)
    assert _run_eps(plan.scale * (1 - 1e-9), d, k, delta)[0] > eps


def test_known_std_at_eps_1():
    """CTG-B's plan (d = 21, T = 2, IS step) at (1, 1e-5): rho = 0.0305566 for the run, a third per
    query, sigma = sqrt(21) / sqrt(2 rho / 3) = 32.1072; `counts` adds Laplace noise of std
    sqrt(2) 63 = 89.1 there."""
    plan = _plan(1.0, 1e-5, 21, 2, True)
    assert plan.rho == pytest.approx(0.0305566 / 3, rel=1e-5)
    assert plan.scale == pytest.approx(32.10723, rel=1e-6)
    assert plan.compose([plan.cost()] * 3) == (pytest.approx(1.0, rel=1e-9), 1e-5)


def test_the_ledger_composes_rho_and_refuses_a_query_more(tmp_path):
    """k = 3 queries: each row holds its std, sensitivity sqrt(d), rho and its own (eps, delta)
    at the run's delta; the totals are the rho summed and converted once, within the budget, far
    below the per-query eps summed, with delta the run's. A fourth query is refused, and so is a
    run whose earlier rows spent more rho than planned."""
    plan = _plan(1.0, 1e-5, 2, 2, True)
    book = None
    for query in ["marginals", "errors_t0", "errors_t1"]:
        book = ledger.record(tmp_path / "l.csv", book, "A", [0, 1], query, "oracle_errors", plan)
    assert list(book.columns) == ledger.COLUMNS and len(book) == 6
    assert set(book.mechanism) == {"gaussian-counts"} and set(book.neighbours) == {mechanisms.RECORD}
    assert set(book.scale) == {plan.scale} and set(book.sensitivity) == {math.sqrt(2)} and set(book.rho) == {plan.rho}
    single = _run_eps(plan.scale, 2, 1, 1e-5)
    assert np.allclose(book.eps_spent, single[0]) and set(book.delta_spent) == {1e-5}
    last = book.groupby("seed").last()
    assert (last.eps_total <= 1.0).all() and np.allclose(last.eps_total, 1.0) and set(last.delta_total) == {1e-5}
    assert 3 * single[0] > 1.3  # basic composition of the same queries would overspend
    with pytest.raises(ledger.BudgetError, match="query 4 of a run planned for 3"):
        ledger.record(tmp_path / "x.csv", book, "A", [0, 1], "errors_t2", "oracle_errors", plan)
    overspent = book.iloc[:2].assign(rho=3 * plan.rho)
    with pytest.raises(ledger.BudgetError, match="above its budget"):
        ledger.record(tmp_path / "x.csv", overspent, "A", [0, 1], "errors_t0", "oracle_errors", plan)


def test_a_query_of_another_mechanism_in_the_chain_adds_its_eps_and_delta():
    """A run by MMD asks the embedding query (a Gaussian release at eps / (T+1), the run's delta)
    before the error queries: its row has no rho, so it composes with them by basic composition."""
    plan = _plan(1.0, 1e-5, 2, 2, True)
    embedding = mechanisms.MeanEmbedding(1.0, 1e-5, 500, 2)
    eps, delta = plan.compose([embedding.cost(), plan.cost(), plan.cost()])
    together = _run_eps(plan.scale, 2, 2, 1e-5)
    assert (eps, delta) == (pytest.approx(1 / 3 + together[0]), pytest.approx(2e-5))


def _data(tmp_path, n=300, d=2, seeds=(0,)):
    rng = np.random.default_rng(3)
    x = rng.uniform(size=(len(seeds), n, d))
    save_npz(tmp_path / "val.npz", x=x, y=(x[..., 0] > 0.5).astype(np.int8), seeds=np.array(seeds))
    edges = [binning.make_bins(x[b], 5) for b in range(len(seeds))]
    save_npz(tmp_path / "bins.npz", seeds=np.array(seeds), **binning.pack(edges))
    return x, edges


def _marginals(tmp_path, plan, out="m"):
    curator.oracle_marginals(
        tmp_path / "val.npz", tmp_path / "bins.npz", tmp_path / f"{out}.npz", tmp_path / f"{out}.csv", "A", plan.param()
    )
    return load_npz(tmp_path / f"{out}.npz")


def test_the_released_noise_has_the_planned_std_and_replays_from_its_stream(tmp_path):
    """(released - true) counts over 200 seeds and 10 bins each, 2000 draws: the sample std lies
    within 5 standard errors (sigma / sqrt(2 n)) of sigma; the same query asked again releases the
    same answer, from the oracle's keyed stream."""
    x, edges = _data(tmp_path, n=100, seeds=range(200))
    plan = _plan(1.0, 1e-5, 2, 2, True)
    released = _marginals(tmp_path, plan)
    drawn = np.concatenate(
        [
            released["answers"][b, : released["n_bins"][b]]
            - binning.bin_sums(binning.bin_ids(edges[b], x[b]), released["n_bins"][b])
            for b in range(200)
        ]
    )
    assert drawn.size == 2000
    assert drawn.mean() == pytest.approx(0.0, abs=5 * plan.scale / math.sqrt(drawn.size))
    assert drawn.std() == pytest.approx(plan.scale, rel=5 / math.sqrt(2 * drawn.size))
    again = _marginals(tmp_path, plan, out="again")
    np.testing.assert_array_equal(again["answers"], released["answers"])


def test_without_noise_the_counts_are_exact(tmp_path):
    x, edges = _data(tmp_path)
    plan = _plan(math.inf, 0.0, 2, 2, True)
    assert plan.scale == 0.0 and plan.cost() == (math.inf, 0.0, math.inf)
    released = _marginals(tmp_path, plan)
    ids, n_bins = binning.bin_ids(edges[0], x[0]), released["n_bins"][0]
    np.testing.assert_array_equal(released["answers"][0, :n_bins], binning.bin_sums(ids, n_bins))
    save_npz(tmp_path / "h0.npz", seeds=np.array([0]), **mlp.constant_model(0, 1))
    curator.oracle_errors(
        tmp_path / "val.npz",
        tmp_path / "bins.npz",
        tmp_path / "h0.npz",
        tmp_path / "e.npz",
        tmp_path / "e.csv",
        "A",
        "errors_t0",
        plan.param(),
        previous_ledger=tmp_path / "m.csv",
    )
    errors = load_npz(tmp_path / "e.npz")["answers"][0, :n_bins]
    y = load_npz(tmp_path / "val.npz")["y"][0]
    np.testing.assert_array_equal(errors, binning.bin_sums(ids, n_bins, y != 0))  # h_0 = 0 errs on the 1s
    book = ledger.load(tmp_path / "e.csv")
    assert list(book.eps_total) == [math.inf, math.inf] and list(book.delta_total) == [0.0, 0.0]


def test_a_gaussian_run_needs_delta():
    with pytest.raises(ValueError, match="gaussian-counts: the Gaussian mechanism needs delta > 0"):
        _plan(1.0, 0.0)


def test_llp_release_spends_the_runs_budget_in_two_gaussian_queries(tmp_path):
    """LLP's one release (the bin counts and negatives queries) under `gaussian-counts` planned for
    one iteration, as its plug-in plans `counts`: within (eps, delta), with the rho of both rows."""
    _data(tmp_path, seeds=(3, 4))
    plan = _plan(1.0, 1e-5, 2, 1, False)
    assert plan.planned_queries == 2
    llp_method.oracle_proportions(
        tmp_path / "val.npz", tmp_path / "bins.npz", tmp_path / "r.npz", tmp_path / "r.csv", "A", plan.param()
    )
    book = ledger.load(tmp_path / "r.csv")
    assert list(book["query"]) == [q for q in llp.QUERIES for _ in range(2)] and set(book.rho) == {plan.rho}
    assert (book.groupby("seed").eps_total.max() <= 1.0).all() and set(book.delta_total) == {1e-5}
    assert _within(_run_eps(plan.scale, 2, 2, 1e-5), 1.0, 1e-5)
