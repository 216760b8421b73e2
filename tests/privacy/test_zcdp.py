"""The mechanisms accounted in zero-concentrated DP beside `gaussian-counts` (expril.privacy.zcdp):
Pb. 1's embedding query of a run by MMD (`zcdp-embedding`) and AIM / MST in OpenDP's native zCDP
(`aim-zcdp`, `mst-zcdp`), checked against OpenDP's own composition and accounting."""

import math

import numpy as np
import opendp.prelude as dp
import pytest

from expril.method import binning
from expril.privacy import calibration, ledger, mechanisms
from expril.rivals import aim

dp.enable_features("contrib")
DOMAIN, METRIC = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)


def _opendp_run(releases, delta):
    """(eps, delta) of Gaussian releases [(std, L2 sensitivity)] composed by OpenDP in zCDP and
    converted once at `delta`: each release rescaled to sensitivity 1 (std / sensitivity), which
    leaves its rho unchanged."""
    composed = dp.c.make_composition([dp.m.make_gaussian(DOMAIN, METRIC, std / s) for std, s in releases])
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(composed), delta).map(1.0)


@pytest.mark.parametrize("eps, delta, d, n_val, iterations", [(1.0, 1e-5, 10, 2500, 2), (0.1, 1e-5, 21, 700, 3)])
def test_a_run_by_mmd_in_zcdp_spends_its_eps_and_delta_once(tmp_path, eps, delta, d, n_val, iterations):
    """The embedding query and the T `gaussian-counts` error queries of one run: the ledger's total
    is OpenDP's composition of the T + 1 Gaussians (within eps, at the run's delta, not twice it);
    the embedding gets the share of rho the bin counts query would, and a std 1e-9 smaller
    throughout would exceed eps."""
    embedding = mechanisms.get("zcdp-embedding")(eps, delta, n_val, iterations)
    errors = mechanisms.get("gaussian-counts")(eps, delta, d, iterations, True)
    assert embedding.planned_queries == errors.planned_queries == iterations + 1
    assert embedding.rho == pytest.approx(errors.rho, rel=1e-12)
    assert embedding.noise_std == pytest.approx(math.sqrt(1 / (2 * embedding.rho)) / n_val, rel=1e-12)
    book = ledger.record(tmp_path / "e.csv", None, "C", [0, 1], "embedding", "oracle_embedding", embedding)
    for t in range(iterations):
        book = ledger.record(tmp_path / f"{t}.csv", book, "C", [0, 1], f"errors_t{t}", "oracle_errors", errors)
    assert list(book.mechanism.unique()) == ["zcdp-embedding", "gaussian-counts"]
    assert not book.rho.isna().any()
    last = book.groupby("seed").last()
    releases = [(embedding.noise_std, 1 / n_val)] + [(errors.scale, math.sqrt(d))] * iterations
    expected = _opendp_run(releases, delta)
    assert np.allclose(last.eps_total, expected[0], rtol=1e-9) and (last.eps_total <= eps).all()
    assert set(last.delta_total) == {delta}
    assert expected[0] == pytest.approx(eps, rel=1e-9)
    tighter = [(std * (1 - 1e-9), s) for std, s in releases]
    assert _opendp_run(tighter, delta)[0] > eps


def test_the_basic_composition_embedding_beside_gaussian_counts_is_refused(tmp_path):
    """`rff-embedding` has no rho: beside `gaussian-counts` its (eps / (T+1), delta) adds to the
    error queries' converted total, so the first error query brings delta to twice the run's and
    the ledger refuses it. That is why the currencies pair `gaussian-counts` with `zcdp-embedding`."""
    embedding = mechanisms.MeanEmbedding(1.0, 1e-5, 2500, 2)
    errors = mechanisms.get("gaussian-counts")(1.0, 1e-5, 10, 2, True)
    book = ledger.record(tmp_path / "e.csv", None, "C", [0], "embedding", "oracle_embedding", embedding)
    with pytest.raises(ledger.BudgetError, match=r"to \(.*, 2e-05\), above its budget"):
        ledger.record(tmp_path / "0.csv", book, "C", [0], "errors_t0", "oracle_errors", errors)


def test_no_noise_at_eps_inf():
    embedding = mechanisms.get("zcdp-embedding")(math.inf, 1e-5, 2500, 2)
    assert embedding.noise_std == 0.0 and embedding.query_cost() == (math.inf, 0.0)
    assert mechanisms.get("aim-zcdp")(math.inf, 1e-5).budget == ("rho", math.inf)


@pytest.mark.parametrize("name, algorithm", [("aim-zcdp", "aim"), ("mst-zcdp", "mst")])
def test_aim_in_zcdp_gets_the_rho_of_the_runs_eps_and_delta(name, algorithm):
    """All of the run's rho goes to the one release: converted back at delta it is the run's eps
    (to the rounding margin); pure DP's `aim` spends eps and no delta."""
    plan = mechanisms.get(name)(1.0, 1e-5)
    assert plan.algorithm == algorithm and plan.neighbours == mechanisms.RECORD
    assert plan.budget == ("rho", plan.rho) and plan.rho == pytest.approx(0.0305566, rel=1e-5)
    assert plan.rho <= calibration.zcdp_budget(1.0, 1e-5)
    eps, delta = plan.compose([plan.cost()])
    assert eps == pytest.approx(1.0, rel=1e-9) and eps <= 1.0 and delta == 1e-5
    assert mechanisms.get(algorithm)(1.0, 1e-5).budget == ("epsilon", 1.0)
    with pytest.raises(ValueError, match="needs delta > 0"):
        mechanisms.get(name)(1.0, 0.0)


def test_aim_in_zcdp_spends_what_opendp_accounts():
    """OpenDP's AIM with a rho budget measures with Gaussian noise and accounts at most that rho."""
    g = np.random.default_rng(0)
    x = g.normal(size=(300, 2))
    y = (x[:, 0] > 0).astype(int)
    plan = mechanisms.get("aim-zcdp")(1.0, 1e-5)
    model, spent = aim.fit(x, y, binning.make_bins(x, 4), plan.rho, "aim", 1, "rho")
    assert spent <= plan.rho and spent == pytest.approx(plan.rho, rel=1e-6)
    assert set(aim.columns(2)) <= set(model.domain.attrs)
