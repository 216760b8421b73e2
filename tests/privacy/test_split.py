"""The budget split of the histogram mechanisms (`counts`, `gaussian-counts`; a tuning axis of ExPriL
and LLP, config/tuning.yaml): the bin counts query spends the split's share of the run's budget,
the error queries the rest equally, the ledger shows each query's cost and the run still spends
exactly its budget; as configured (no split) the plan, its noise and its param are as before."""

import math

import numpy as np
import pytest

from expril.privacy import calibration, ledger, mechanisms, noise
from expril.privacy.histogram import COUNTS_QUERY
from expril.rivals import llp

QUERIES = [COUNTS_QUERY, "eps1/C/errors_t0", "eps1/C/errors_t1"]


def _book(tmp_path, plan, queries=QUERIES):
    book = None
    for query in queries:
        book = ledger.record(tmp_path / "l.csv", book, "A", [0, 1], query, "oracle_errors", plan)
    return book


def test_a_split_sizes_each_laplace_query_and_the_ledger_spends_exactly_eps(tmp_path):
    """d = 4, T = 2, eps = 1, split 0.2: lambda 20 for the bin counts query (eps 0.2), 10 for each
    error query (eps 0.4 each); the run's three rows add up to eps."""
    plan = mechanisms.get("counts")(1.0, 0.0, 4, 2, True, split=0.2)
    assert plan.counts_scale == pytest.approx(20.0) and plan.scale == pytest.approx(10.0)
    book = _book(tmp_path, plan)
    run = book[book.seed == 0]
    assert list(run["query"]) == QUERIES
    assert list(run.scale) == pytest.approx([20.0, 10.0, 10.0])
    assert list(run.eps_spent) == pytest.approx([0.2, 0.4, 0.4])
    assert run.eps_spent.sum() == pytest.approx(1.0, rel=1e-12) and run.eps_total.iloc[-1] <= 1.0 * (1 + 1e-9)
    assert set(book.delta_spent) == {0.0}


@pytest.mark.parametrize("split", [0.1, 0.2, 0.5, 0.9])
@pytest.mark.parametrize("iterations", [1, 2, 3])
def test_every_split_spends_exactly_eps_over_the_ledgers_rows(tmp_path, split, iterations):
    plan = mechanisms.get("counts")(0.3, 0.0, 7, iterations, False, split=split)
    queries = [COUNTS_QUERY] + [f"errors_t{t}" for t in range(iterations)]
    run = _book(tmp_path, plan, queries).query("seed == 0")
    assert run.eps_spent.iloc[0] == pytest.approx(split * 0.3, rel=1e-12)
    assert run.eps_spent.iloc[1:].tolist() == pytest.approx([(1 - split) * 0.3 / iterations] * iterations, rel=1e-12)
    assert run.eps_total.iloc[-1] == pytest.approx(0.3, rel=1e-12)


def test_a_gaussian_split_shares_rho_and_the_run_spends_its_budget(tmp_path):
    """`gaussian-counts` at (1, 1e-5), d = 21, T = 2, split 0.2: the bin counts query's rho is 0.2 of
    the run's rho (0.0305566), each error query's 0.4; the ledger's rows show them and compose to
    the same (eps, delta) as the equal split, within the budget."""
    plan = mechanisms.get("gaussian-counts")(1.0, 1e-5, 21, 2, True, split=0.2)
    equal = mechanisms.get("gaussian-counts")(1.0, 1e-5, 21, 2, True)
    run = _book(tmp_path, plan).query("seed == 0")
    assert list(run.rho) == pytest.approx([0.2 * 0.0305566, 0.4 * 0.0305566, 0.4 * 0.0305566], rel=1e-5)
    assert run.scale.iloc[0] == pytest.approx(math.sqrt(21) / math.sqrt(2 * run.rho.iloc[0]), rel=1e-9)
    assert run.scale.iloc[0] > equal.scale > run.scale.iloc[1]
    total = run.eps_total.iloc[-1]
    assert total <= 1.0 and total == pytest.approx(1.0, rel=1e-9)
    assert run.delta_total.iloc[-1] == 1e-5
    assert plan.compose([equal.cost()] * 3)[0] == pytest.approx(total, rel=1e-9)


def test_as_configured_the_plan_is_as_before_the_split():
    """No split: Eq. 14's lambda = d (T+1) / eps for every query, the same param (no `split` key),
    the same noise stream's key and the same draws."""
    plan = mechanisms.get("counts")(1.0, 0.0, 4, 2, True)
    assert plan.scale == plan.counts_scale == calibration.laplace_scale(4, 2, 1.0) == 12.0
    before = {"name": "counts", "eps": 1.0, "delta": 0.0, "features": 4, "iterations": 2, "importance_sampling": True}
    assert plan.param() == before
    assert mechanisms.from_param(plan.param()).split is None
    for query in (COUNTS_QUERY, "eps1/C/errors_t0/abc"):
        assert plan.query_stream_scale(query) == plan.stream_scale == 12.0
    ids = np.array([[0, 2], [1, 3], [0, 3]])
    released = plan.release_counts(ids, 4, np.random.default_rng(5))
    expected = np.array([2, 1, 1, 2]) + np.random.default_rng(5).laplace(0.0, 12.0, 4)
    assert np.array_equal(released, expected)
    gaussian = mechanisms.get("gaussian-counts")(1.0, 1e-5, 21, 2, True)
    rho = calibration.zcdp_budget(1.0, 1e-5) / 3 * (1 - gaussian.ROUNDING)
    assert gaussian.scale == gaussian.counts_scale == calibration.zcdp_std(rho, math.sqrt(21))
    assert "split" not in gaussian.param()


def test_a_split_draws_each_query_at_its_own_scale_from_its_own_stream():
    plan = mechanisms.get("counts")(1.0, 0.0, 4, 2, True, split=0.2)
    assert mechanisms.from_param(plan.param()).split == 0.2 and plan.param()["split"] == 0.2
    assert plan.query_stream_scale(COUNTS_QUERY) == pytest.approx(20.0)
    assert plan.query_stream_scale("eps1~plan=T1/C/errors_t0/abc") == pytest.approx(10.0)
    ids = np.array([[0, 2], [1, 3], [0, 3]])
    counts = plan.release_counts(ids, 4, np.random.default_rng(5))
    errors = plan.release_errors(ids, 4, np.array([1, 0, 1]), np.random.default_rng(5))
    assert np.allclose(counts - [2, 1, 1, 2], np.random.default_rng(5).laplace(0.0, 20.0, 4))
    assert np.allclose(errors - [2, 0, 1, 1], np.random.default_rng(5).laplace(0.0, 10.0, 4))
    # Another split asks the same bin counts query at another scale: fresh noise, not a rescaled draw.
    edges = [np.array([0.0]), np.array([0.0, 1.0])]
    counts = mechanisms.get("counts")
    plans = [plan, counts(1.0, 0.0, 4, 2, True, split=0.5), counts(1.0, 0.0, 4, 2, True)]
    keys = {noise.stream("s", "A", 0, COUNTS_QUERY, edges, p.query_stream_scale(COUNTS_QUERY)).random() for p in plans}
    assert len(keys) == 3


def test_a_plans_own_counts_query_is_told_apart_and_eps_inf_adds_no_noise():
    """A plug-in's plan names its bin counts query (LLP's: `counts_queries`); nothing else is one,
    whatever its name, so that a query's role is the method's word, not a naming rule."""
    named = mechanisms.get("counts")(1.0, 0.0, 4, 1, False, split=0.3, counts_queries=llp.QUERIES[:1])
    assert [named.is_counts_query(q) for q in llp.QUERIES] == [True, False]
    assert named.query_cost(llp.QUERIES[0]) == pytest.approx((0.3, 0.0))
    assert named.query_cost(llp.QUERIES[1]) == pytest.approx((0.7, 0.0))
    unnamed = mechanisms.get("counts")(1.0, 0.0, 4, 1, False, split=0.3)
    assert not unnamed.is_counts_query(llp.QUERIES[0]) and unnamed.is_counts_query(COUNTS_QUERY)
    assert not named.is_counts_query("eps1/C/errors_t0/counts0")
    assert mechanisms.from_param(named.param()).counts_queries == named.counts_queries
    assert "counts_queries" not in unnamed.param()
    plan = mechanisms.get("counts")(math.inf, 0.0, 4, 1, False, split=0.3)
    assert plan.scale == plan.counts_scale == 0.0 and plan.query_cost(COUNTS_QUERY) == (math.inf, 0.0)


@pytest.mark.parametrize("split, iterations", [(0.0, 2), (1.0, 2), (1.5, 2), (0.3, 0)])
def test_a_split_outside_the_open_unit_interval_or_without_error_queries_is_refused(split, iterations):
    with pytest.raises(ValueError, match="split is the counts query's share of eps"):
        mechanisms.get("counts")(1.0, 0.0, 4, iterations, True, split=split)


def test_the_planned_spend_counts_each_query_at_its_own_cost():
    """What the plug-in gate composes before any job runs: LLP's plan (T = 1) at split 0.3 spends
    0.3 + 0.7 = eps, not twice the error query's 0.7."""
    plan = mechanisms.get("counts")(1.0, 0.0, 4, 1, True, split=0.3)
    assert [c[0] for c in plan.planned_costs()] == pytest.approx([0.3, 0.7])
    assert plan.compose(plan.planned_costs())[0] == pytest.approx(1.0, rel=1e-12)
    paper = mechanisms.get("paper")(1.0, 0.0, 4, 2, False, split=0.2)  # no IS step: no bin counts query
    assert [c[0] for c in paper.planned_costs()] == pytest.approx([0.4, 0.4])
