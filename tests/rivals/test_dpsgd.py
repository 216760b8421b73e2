"""DP-SGD (expril.rivals.dpsgd, mechanisms.DPSGD): the plan, the ledger against Opacus's accountant, and
eps = inf as training without noise or clipping."""

import math

import numpy as np
import pytest
from opacus.accountants import RDPAccountant

from expril import settings
from expril.io import load_npz, save_npz
from expril.method import mlp
from expril.privacy import ledger, mechanisms
from expril.rivals import dpsgd
from expril.steps import curator

N, BATCH, EPOCHS = 64, 16, 2


def _plan(eps, delta=1e-5):
    return mechanisms.DPSGD(eps, delta, settings.sample_rate(N, BATCH), EPOCHS, 1.0)


def _data(seed=0, n_seeds=2):
    r = np.random.default_rng(seed)
    x = r.normal(size=(n_seeds, N, 3)).astype(np.float32)
    return x, (x[..., 0] > 0).astype(np.int8)


def test_the_plan_round_trips_and_follows_opacus_sampling():
    plan = _plan(1.0)
    assert mechanisms.from_param(plan.param() | {"secret_digest": "ignored"}).param() == plan.param()
    assert plan.sample_rate == 1 / 4 and plan.steps == EPOCHS * 4 and plan.planned_queries == 1
    assert settings.sample_rate(65, BATCH) == 1 / 5  # the plain loader's last, smaller batch counts
    with pytest.raises(ValueError, match="delta > 0"):
        _plan(1.0, delta=0.0)


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_the_noise_spends_at_most_eps_and_within_one_percent_of_it(eps):
    spent, delta = _plan(eps).query_cost()
    assert eps * 0.99 <= spent <= eps and delta == 1e-5


def test_the_ledgers_eps_is_the_eps_opacus_accountant_spent(tmp_path):
    """Trained through Opacus's PrivacyEngine, whose accountant watched every step: its eps is the
    ledger's, and so is that of an RDP accountant fed the plan's noise, rate and steps."""
    x, y = _data()
    plan = _plan(1.0)
    _, spent = dpsgd.train_private(x[0], y[0], [8], 1e-3, BATCH, plan, init_seed=1, sampling_seed=2, noise_seed=3)
    save_npz(tmp_path / "val.npz", x=x, y=y, seeds=np.array([0, 1]))
    save_npz(tmp_path / "source.npz", x=x, seeds=np.array([0, 1]))
    curator.train_dpsgd(
        tmp_path / "val.npz",
        tmp_path / "source.npz",
        tmp_path / "model.npz",
        tmp_path / "model.ledger.csv",
        "A",
        [8],
        1e-3,
        BATCH,
        plan.param(),
        ["dpsgd", "A", "1"],
        1,
    )
    book = ledger.load(tmp_path / "model.ledger.csv")
    accountant = RDPAccountant()
    accountant.history = [(book.scale[0] / book.sensitivity[0], plan.sample_rate, plan.steps)]
    assert list(book.eps_spent) == [spent] * 2 == [plan.spent(accountant)] * 2
    assert list(book.delta_spent) == [1e-5] * 2 and spent <= 1.0
    assert set(book.mechanism) == {"dpsgd"} and set(book.neighbours) == {mechanisms.RECORD}
    model = load_npz(tmp_path / "model.npz")
    assert mlp.predict(model, x).shape == y.shape


def test_without_privacy_opacus_is_not_engaged(monkeypatch):
    """eps = inf trains the same network, sampling and optimiser with no PrivacyEngine (no
    clipping, no noise), not at a huge eps; its ledger row spends inf with no noise."""

    def refuse(**_):
        raise AssertionError("a PrivacyEngine at eps = inf")

    monkeypatch.setattr(dpsgd, "PrivacyEngine", refuse)
    x, y = _data()
    plan = _plan(math.inf)
    assert plan.noise_multiplier == 0 and plan.query_cost() == (math.inf, 0.0)
    assert plan.ledger_fields() == {"sensitivity": math.inf, "scale": 0.0}
    first, spent = dpsgd.train_private(x[0], y[0], [8], 1e-2, BATCH, plan, init_seed=1, sampling_seed=2, noise_seed=3)
    other_noise, _ = dpsgd.train_private(x[0], y[0], [8], 1e-2, BATCH, plan, init_seed=1, sampling_seed=2, noise_seed=4)
    assert math.isinf(spent) and all(np.array_equal(a, b) for a, b in zip(first, other_noise))
    with pytest.raises(AssertionError, match="PrivacyEngine"):
        dpsgd.train_private(x[0], y[0], [8], 1e-2, BATCH, _plan(1e6), init_seed=1, sampling_seed=2, noise_seed=3)


def test_a_private_network_learns_an_easy_problem_at_a_large_eps():
    x, y = _data(n_seeds=1)
    x, y = np.repeat(x, 8, axis=1)[0], np.repeat(y, 8, axis=1)[0]
    plan = mechanisms.DPSGD(8.0, 1e-5, settings.sample_rate(len(x), 64), 10, 1.0)
    layers, _ = dpsgd.train_private(x, y, [16], 1e-2, 64, plan, init_seed=1, sampling_seed=2, noise_seed=3)
    model = dpsgd.stack([layers], np.zeros((1, 3), np.float32), np.ones((1, 3), np.float32))
    assert (mlp.predict(model, x[None]) == y).mean() > 0.9


def test_the_network_is_initialised_as_the_batched_training_does():
    from expril.method.training import train_mlps

    x, y = _data(n_seeds=1)
    batched = train_mlps(x, y, np.ones(y.shape), [8], [42], 0, BATCH, 1e-3)
    layers = [p.detach().numpy() for p in dpsgd.network([3, 8, 1], 42).parameters()]
    np.testing.assert_allclose(batched["W0"][0], layers[0].T, atol=1e-7)
    np.testing.assert_allclose(batched["b1"][0], layers[3], atol=1e-7)


def test_a_plan_made_for_another_size_is_refused():
    x, y = _data(n_seeds=1)
    with pytest.raises(ValueError, match="sample rate"):
        dpsgd.train_private(
            x[0, :40], y[0, :40], [8], 1e-3, BATCH, _plan(1.0), init_seed=1, sampling_seed=2, noise_seed=3
        )
