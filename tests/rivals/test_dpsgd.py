"""DP-SGD (expril.rivals.dpsgd, expril.privacy.dpsgd.DPSGD): the block trainer against Opacus 1.6 run by hand
(GradSampleModule, whose per-sample gradients are materialised, DPOptimizer, DPDataLoader) and
through PrivacyEngine.make_private; its clipping against torch.func's per-sample gradients; each
network's independence of the others in its block, bit for bit; the plan and the ledger against
Opacus's accountant; the curator's step."""

import math

import numpy as np
import pytest
import torch
from opacus import GradSampleModule
from opacus.accountants import RDPAccountant
from opacus.accountants.utils import get_noise_multiplier
from opacus.data_loader import DPDataLoader
from opacus.optimizers import DPOptimizer
from opacus_reference import train_one
from torch.func import functional_call, grad, vmap
from torch.utils.data import TensorDataset

from expril import settings
from expril.io import load_npz, save_npz
from expril.method import mlp
from expril.plugins import dpsgd as dpsgd_method
from expril.privacy import calibration, ledger, mechanisms
from expril.privacy.dpsgd import DPSGD
from expril.rivals import dpsgd

N, D = 120, 5
# Opacus warns of its hooks on a model whose inputs need no gradient, and of its non-secure RNG.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Full backward hook is firing"),
    pytest.mark.filterwarnings("ignore:Secure RNG turned off"),
    pytest.mark.filterwarnings("ignore:Optimal order is the"),
]


@pytest.fixture(autouse=True)
def one_thread():
    """One thread unless a test asks for more: with OpenMP's threads waiting on each other, two
    threads on a busy 2-core machine made these tests 30x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _data(n_nets=3, n=N, d=D, seed=0):
    r = np.random.default_rng(seed)
    x = r.normal(size=(n_nets, n, d)).astype(np.float32)
    # Noisy labels, so that the losses' gradients do not vanish.
    return x, (x[..., 0] + x[..., 1] + r.normal(size=(n_nets, n)) > 0).astype(np.int8)


def _train(x, y, hidden=(16,), seeds=(1, 2, 3), **options):
    # n' = the records given, unless a test says otherwise: Opacus's divisor, of the realised count,
    # is then ours (expril.rivals.dpsgd.train divides by the public n').
    defaults = dict(records=x.shape[1], sample_rate=0.25, epochs=2, lr=0.05, max_grad_norm=0.5, noise_multiplier=1.3)
    options = defaults | options
    layers, _ = dpsgd.train(
        x,
        y,
        list(hidden),
        init_seeds=seeds,
        sampling_seeds=[s + 10 for s in seeds],
        noise_seeds=[s + 20 for s in seeds],
        **options,
    )
    return layers


def _opacus(
    x,
    y,
    hidden,
    seed,
    sample_rate,
    epochs,
    lr,
    max_grad_norm,
    noise_multiplier,
    optimizer="adam",
    momentum=0.0,
    activation="relu",
):
    """One network trained by Opacus's own parts, per-sample gradients materialised by hooks, with
    _train's seeds; eps = inf (max_grad_norm inf) without privacy: plain optimiser on the mean loss
    of the same Poisson batches. Layers as expril.rivals.dpsgd returns them."""
    model = dpsgd.network([x.shape[1], *hidden, 1], seed, activation)
    opt = (
        torch.optim.Adam(model.parameters(), lr)
        if optimizer == "adam"
        else torch.optim.SGD(model.parameters(), lr, momentum=momentum)
    )
    if math.isfinite(max_grad_norm):
        model = GradSampleModule(model)
        opt = DPOptimizer(
            opt,
            noise_multiplier=noise_multiplier,
            max_grad_norm=max_grad_norm,
            expected_batch_size=int(len(x) * sample_rate),
            generator=torch.Generator().manual_seed(seed + 20),
        )
    data = TensorDataset(torch.as_tensor(x), torch.as_tensor(y, dtype=torch.float32))
    loader = DPDataLoader(data, sample_rate=sample_rate, generator=torch.Generator().manual_seed(seed + 10))
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.binary_cross_entropy_with_logits(model(xb)[:, 0], yb).backward()
            opt.step()
    linear = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    return [a for m in linear for a in (m.weight.detach().T.numpy(), m.bias.detach().numpy())]


def _close(batched, b, reference, rtol):
    """Network b's layers within rtol of the reference's largest entry (the sums over a batch
    round apart in different orders, so a coordinate near zero has no relative precision)."""
    scale = max(np.abs(want).max() for want in reference)
    for got, want in zip(batched.values(), reference):
        np.testing.assert_allclose(got[b], want, rtol=0, atol=rtol * scale)


def test_one_sgd_step_is_opacus_update():
    """One step (sample rate 0.6: one batch per epoch) of plain SGD moves the parameters by
    -lr x (sum of clipped gradients + noise) / int(n x 0.6), the update Opacus makes from the same
    Poisson batch and noise draws: Adam's first step would hide the gradient's scale. lr = 1000
    makes the update dwarf the initial weights, so float32 measures it to its own precision."""
    x, y = _data()
    options = dict(sample_rate=0.6, epochs=1, lr=1000.0, max_grad_norm=0.5, noise_multiplier=1.3, optimizer="sgd")
    start = _train(x, y, epochs=0)
    moved = _train(x, y, **options)
    for b, seed in enumerate((1, 2, 3)):
        ref = _opacus(x[b], y[b], [16], seed, **options)
        update = {k: moved[k] - start[k] for k in moved}
        _close(update, b, [r - s[b] for r, s in zip(ref, start.values())], 1e-6)


def test_the_noisy_update_depends_on_the_records_through_their_clipped_sum_alone():
    """One full-batch SGD step (rate 1: every record sampled) on D and on D' = D less its last
    record, with the same noise and the same public n': the updates differ by the removed record's
    clipped gradient over int(n' x 1) alone (its update alone, noiseless), so the divisor does not
    move with the realised count (Opacus's, int(len(dataset) x rate), would: n vs n - 1). A
    different n' does change the update: the divisor is the one given."""
    x, y = _data(n=40)
    options = dict(records=40, sample_rate=1.0, epochs=1, lr=1000.0, max_grad_norm=0.5, optimizer="sgd")
    start = _train(x, y, epochs=0)
    full = _train(x, y, **options)
    less = _train(x[:, :-1], y[:, :-1], **options)
    removed = _train(x[:, -1:], y[:, -1:], **options | {"noise_multiplier": 0.0})
    for key in full:
        difference, alone = full[key] - less[key], removed[key] - start[key]
        np.testing.assert_allclose(difference, alone, rtol=0, atol=1e-5 * np.abs(alone).max())
        assert np.abs(alone).max() > 1e-3
    other = _train(x[:, :-1], y[:, :-1], **options | {"records": 39})
    np.testing.assert_allclose(other["W0"] - start["W0"], (less["W0"] - start["W0"]) * 40 / 39, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "optimizer, activation, clip, sigma",
    [
        ("adam", "relu", 0.5, 1.3),
        ("sgd", "tanh", 0.5, 1.3),
        ("adam", "tanh", 0.05, 0.7),
        ("adam", "relu", math.inf, 0.0),
        ("sgd", "relu", math.inf, 0.0),
    ],
)
def test_epochs_of_steps_are_opacus_training(optimizer, activation, clip, sigma):
    """Two epochs (8 steps) of Adam or momentum SGD, with most samples clipped or none, and
    without privacy: every network ends where Opacus takes it."""
    x, y = _data()
    options = dict(
        sample_rate=0.25,
        epochs=2,
        lr=0.05,
        max_grad_norm=clip,
        noise_multiplier=sigma,
        optimizer=optimizer,
        momentum=0.9,
        activation=activation,
    )
    trained = _train(x, y, **options)
    for b, seed in enumerate((1, 2, 3)):
        _close(trained, b, _opacus(x[b], y[b], [16], seed, **options), 1e-6)


def test_a_set_smaller_than_a_slot_group_in_full_batches_is_opacus_training():
    x, y = _data(n=20)
    options = dict(sample_rate=1.0, epochs=3, lr=0.05, max_grad_norm=0.5, noise_multiplier=1.3)
    trained = _train(x, y, **options)
    for b, seed in enumerate((1, 2, 3)):
        _close(trained, b, _opacus(x[b], y[b], [16], seed, **options), 1e-6)


@pytest.mark.parametrize("eps", [1.0, math.inf])
def test_a_block_is_what_opacus_make_private_trains_one_network_at_a_time(eps):
    """Opacus's PrivacyEngine.make_private (ghost clipping) on each network with the same seeds,
    and at eps = inf the same sampling and optimiser without it."""
    x, y = _data()
    plan = DPSGD(eps, 1e-5, settings.sample_rate(N, 32), 2, 1.0)
    trained = _train(
        x,
        y,
        sample_rate=plan.sample_rate,
        epochs=plan.epochs,
        lr=1e-2,
        max_grad_norm=plan.max_grad_norm if plan.private else math.inf,
        noise_multiplier=plan.noise_multiplier,
    )
    for b, seed in enumerate((1, 2, 3)):
        ref = train_one(x[b], y[b], [16], 1e-2, 32, plan, seed, seed + 10, seed + 20)
        _close(trained, b, ref, 1e-6)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_each_sample_gradient_is_clipped_to_the_norm_over_all_parameters(activation):
    """Network b of a block of copies of one network sums the batch made of sample b alone: its
    gradient, clipped. torch.func's per-sample gradients give the norms: those above C come out at
    C, those below unchanged."""
    x, y = _data(n_nets=1, n=40)
    model = dpsgd.network([D, 16, 16, 1], 3, activation)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return torch.nn.functional.binary_cross_entropy_with_logits(functional_call(model, p, (xi[None],))[0, 0], yi)

    xs, ys = torch.as_tensor(x[0]), torch.as_tensor(y[0], dtype=torch.float32)
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    norms = torch.cat([g.flatten(1) for g in per_sample.values()], dim=1).norm(dim=1)
    clip = float(norms.median())
    assert (norms > 1.05 * clip).sum() >= 5 and (norms < clip / 1.05).sum() >= 5
    stacked = [p.expand(40, *p.shape).contiguous() for p in params.values()]
    sums = [torch.zeros_like(p) for p in stacked]
    dpsgd._clipped_sums(
        stacked,
        xs.expand(40, 40, D).contiguous(),
        ys.expand(40, 40).contiguous(),
        torch.eye(40),
        torch.full((40, 1), clip),
        activation,
        sums,
    )
    clipped = torch.cat([s.flatten(1) for s in sums], dim=1)
    expected = (
        torch.cat([g.flatten(1) for g in per_sample.values()], dim=1) * (clip / (norms + 1e-6)).clamp(max=1.0)[:, None]
    )
    torch.testing.assert_close(clipped, expected, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(clipped.norm(dim=1), torch.minimum(norms, torch.tensor(clip)), rtol=1e-5, atol=0)


def _widths(seeds, n, sample_rate, epochs):
    """The padded batch widths of each step for networks sampled with these seeds."""
    generators = [torch.Generator().manual_seed(s + 10) for s in seeds]
    widths = []
    for _ in range(epochs):
        for g in generators:
            torch.empty((), dtype=torch.int64).random_(generator=g)
        for _ in range(int(1 / sample_rate)):
            most = max(int((torch.rand(n, generator=g) < sample_rate).sum()) for g in generators)
            widths.append(-(-most // dpsgd.ALIGN) * dpsgd.ALIGN)
    return widths


HYPER = dict(lr=[0.01, 0.03, 0.02], max_grad_norm=[1.0, 0.5, math.inf], noise_multiplier=[0.8, 1.3, 0.0])


@pytest.mark.parametrize(
    "hidden, d, activation, optimizer", [([32], 25, "tanh", "adam"), ([16, 64, 16], 2, "relu", "sgd")]
)
def test_a_network_does_not_depend_on_its_block(hidden, d, activation, optimizer):
    """Network 2 trained alone and beside others with other data, seeds and hyperparameters (one
    of them without privacy): the same bits, though its batches are padded to other widths in the
    block. Changing network 3's data or lr leaves 1 and 2 alone."""
    x, y = _data(d=d, n=300)
    options = dict(hidden=hidden, activation=activation, optimizer=optimizer, momentum=0.9, sample_rate=0.1, epochs=2)
    assert _widths([1, 2, 3], 300, 0.1, 2) != _widths([2], 300, 0.1, 2)
    block = _train(x, y, seeds=(1, 2, 3), **options, **HYPER)
    alone = _train(x[1:2], y[1:2], seeds=(2,), **options, **{k: v[1:2] for k, v in HYPER.items()})
    assert all(np.array_equal(block[k][1], alone[k][0]) for k in block)
    (x[2],), (y[2],) = _data(n_nets=1, d=d, n=300, seed=9)
    other = _train(x, y, seeds=(1, 2, 3), **options, **(HYPER | {"lr": [0.01, 0.03, 0.5]}))
    assert all(np.array_equal(block[k][:2], other[k][:2]) for k in block)
    assert not np.array_equal(block["W0"][2], other["W0"][2])


def test_the_thread_count_does_not_change_the_networks():
    """Layers of 256 units, so that a batch's activations (3 x 96 x 256) are split between threads."""
    x, y = _data(d=3, n=300)
    options = dict(hidden=[16, 256, 16], sample_rate=0.25, epochs=1, **HYPER)
    one = _train(x, y, **options)
    torch.set_num_threads(2)
    assert all(np.array_equal(a, b) for a, b in zip(one.values(), _train(x, y, **options).values()))


def test_without_privacy_noise_seeds_do_nothing_and_clipping_nothing():
    """max_grad_norm = inf: no noise drawn, no clipping (a huge C that clips nothing but still
    divides by the expected batch size gives other weights)."""
    x, y = _data()
    plain = _train(x, y, max_grad_norm=math.inf, noise_multiplier=0.0)
    reseeded, _ = dpsgd.train(
        x,
        y,
        [16],
        records=N,
        sample_rate=0.25,
        epochs=2,
        lr=0.05,
        max_grad_norm=math.inf,
        noise_multiplier=0.0,
        init_seeds=(1, 2, 3),
        sampling_seeds=(11, 12, 13),
        noise_seeds=(7, 8, 9),
    )
    assert all(np.array_equal(a, b) for a, b in zip(plain.values(), reseeded.values()))
    huge = _train(x, y, max_grad_norm=1e9, noise_multiplier=0.0)
    assert not np.array_equal(plain["W0"], huge["W0"])


def test_bad_arguments_are_refused():
    x, y = _data()
    with pytest.raises(ValueError, match="cannot have noise"):
        _train(x, y, max_grad_norm=math.inf, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="one per network"):
        _train(x, y, lr=[0.1, 0.2])
    with pytest.raises(ValueError, match="seeds"):
        _train(x, y, seeds=(1, 2))
    with pytest.raises(ValueError, match="0 or 1"):
        _train(x, y + 1)
    with pytest.raises(ValueError, match="rounds to none"):
        _train(x, y, sample_rate=0.005)


# --- the plan, its accountant and the curator's step -----------------------------------------------


def _plan(eps, n=64, batch=16, epochs=2, delta=1e-5):
    return DPSGD(eps, delta, settings.sample_rate(n, batch), epochs, 1.0)


def test_the_plan_round_trips_and_follows_opacus_sampling():
    plan = _plan(1.0)
    assert mechanisms.from_param(plan.param() | {"secret_digest": "ignored"}).param() == plan.param()
    assert plan.sample_rate == 1 / 4 and plan.steps == 2 * 4 and plan.planned_queries == 1
    assert settings.sample_rate(65, 16) == 1 / 5  # the plain loader's last, smaller batch counts
    with pytest.raises(ValueError, match="delta > 0"):
        _plan(1.0, delta=0.0)


@pytest.mark.parametrize(
    "sigma, rate, steps, delta", [(0.7, 0.01, 1000, 1e-5), (6.9, 1 / 11, 330, 1e-5), (1.1, 0.5, 200, 1e-6)]
)
def test_the_accountant_is_opacus_rdp_accountant(sigma, rate, steps, delta):
    """Opacus's RDP analysis, loaded without its package, gives RDPAccountant's eps, and the
    search its get_noise_multiplier's sigma, to the last bit."""
    accountant = RDPAccountant()
    accountant.history = [(sigma, rate, steps)]
    assert calibration.dpsgd_epsilon(sigma, rate, steps, delta) == accountant.get_epsilon(
        delta, alphas=calibration.DPSGD_ALPHAS
    )
    assert RDPAccountant.DEFAULT_ALPHAS == calibration.DPSGD_ALPHAS[: -len(calibration.LARGE_ALPHAS)]
    eps = accountant.get_epsilon(delta, alphas=calibration.DPSGD_ALPHAS)
    assert calibration.dpsgd_noise_multiplier(eps, delta, rate, steps) == get_noise_multiplier(
        target_epsilon=eps,
        target_delta=delta,
        sample_rate=rate,
        steps=steps,
        accountant="rdp",
        epsilon_tolerance=0.01 * eps,
        alphas=calibration.DPSGD_ALPHAS,
    )


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_the_noise_spends_at_most_eps_and_within_one_percent_of_it(eps):
    spent, delta = _plan(eps).query_cost()
    assert eps * 0.99 <= spent <= eps and delta == 1e-5


def _step(tmp_path, plan, x, y, source, seeds=(0, 1), setting="", network=None, name="model"):
    save_npz(tmp_path / "val.npz", x=x, y=y, seeds=np.array(seeds))
    save_npz(tmp_path / "source.npz", x=source, seeds=np.array(seeds))
    recipe = {"optimizer": "adam", "momentum": 0.0, "lr": 1e-2}
    dpsgd_method.train_dpsgd(
        tmp_path / "val.npz",
        tmp_path / "source.npz",
        tmp_path / f"{name}.npz",
        tmp_path / f"{name}.ledger.csv",
        "A",
        network or {"hidden": [8], "activation": "relu"},
        recipe,
        plan.param(),
        ["dpsgd", "A", "1"],
        setting,
        x.shape[1],
        1,
    )
    return load_npz(tmp_path / f"{name}.npz"), ledger.load(tmp_path / f"{name}.ledger.csv")


def test_the_steps_ledger_is_the_accountants_and_its_inputs_the_sources_standardisation(tmp_path):
    """The ledger's eps is Opacus's accountant's for the plan's noise, rate and steps; the
    network's inputs are standardised with the public source's statistics, not the private
    validation split's (which would be unaccounted releases)."""
    r = np.random.default_rng(3)
    x = r.normal(size=(2, 64, 3)).astype(np.float32)
    y = (x[..., 0] > 0).astype(np.int8)
    source = (5 + 2 * r.normal(size=(2, 64, 3))).astype(np.float32)
    plan = _plan(1.0)
    model, book = _step(tmp_path, plan, x, y, source)
    accountant = RDPAccountant()
    accountant.history = [(book.scale[0] / book.sensitivity[0], plan.sample_rate, plan.steps)]
    spent = accountant.get_epsilon(1e-5, alphas=calibration.DPSGD_ALPHAS)
    assert list(book.eps_spent) == [spent] * 2 and spent <= 1.0 and list(book.delta_spent) == [1e-5] * 2
    assert set(book.mechanism) == {"dpsgd"} and set(book.neighbours) == {mechanisms.RECORD}
    np.testing.assert_array_equal(model["mean"], mlp.fit_standardisation(source)[0])
    assert not np.allclose(model["mean"], mlp.fit_standardisation(x)[0], atol=1)


@pytest.mark.bitexact
def test_the_steps_networks_depend_on_their_own_seed_and_setting_alone(tmp_path):
    """At a finite eps, a run's network is the same bits whether its seed block is (0, 1) or (1,)
    alone; rerunning gives the same bits; another setting keys other noise."""
    x, y = _data(n_nets=2, n=64, d=3)
    plan = _plan(1.0)
    block, _ = _step(tmp_path, plan, x, y, x)
    again, _ = _step(tmp_path, plan, x, y, x)
    alone, _ = _step(tmp_path, plan, x[1:], y[1:], x[1:], seeds=(1,), name="alone")
    other, _ = _step(tmp_path, plan, x, y, x, setting="~recipe=large", name="other")
    for key in ("W0", "b0", "W1", "b1"):
        np.testing.assert_array_equal(block[key], again[key])
        np.testing.assert_array_equal(block[key][1], alone[key][0])
    assert not np.array_equal(block["W0"], other["W0"])


def test_steps_beyond_the_plan_fail_before_the_release(tmp_path, monkeypatch):
    """The accountant charges the steps the trainer took: one more than planned overspends."""
    train = dpsgd.train

    def one_more(*args, **kwargs):
        layers, taken = train(*args, **kwargs)
        return layers, taken + 1

    monkeypatch.setattr(dpsgd, "train", one_more)
    x, y = _data(n_nets=2, n=64, d=3)
    with pytest.raises(ledger.BudgetError, match="9 DP-SGD steps spend eps"):
        _step(tmp_path, _plan(1.0), x, y, x)
    assert not (tmp_path / "model.npz").exists() and not (tmp_path / "model.ledger.csv").exists()


def test_without_privacy_there_is_no_noise_or_clipping_and_the_ledger_says_so(tmp_path):
    x, y = _data(n_nets=2, n=64, d=3)
    plan = _plan(math.inf)
    assert plan.noise_multiplier == 0 and plan.query_cost() == (math.inf, 0.0)
    assert plan.ledger_fields() == {"sensitivity": math.inf, "scale": 0.0}
    model, book = _step(tmp_path, plan, x, y, x)
    assert list(book.eps_spent) == [math.inf] * 2


def test_a_private_tanh_network_learns_an_easy_problem_and_is_scored_on_fresh_records(tmp_path):
    r = np.random.default_rng(4)
    x = r.normal(size=(1, 2000, 3)).astype(np.float32)
    y = (x[..., 0] + x[..., 1] > 0).astype(np.int8)
    plan = DPSGD(8.0, 1e-5, 0.25, 10, 1.0)
    model, _ = _step(tmp_path, plan, x, y, x, seeds=(0,), network={"hidden": [32], "activation": "tanh"})
    assert str(model["activation"]) == "tanh"
    fresh = r.normal(size=(1, 1000, 3)).astype(np.float32)
    assert (mlp.predict(model, fresh) == (fresh[..., 0] + fresh[..., 1] > 0)).mean() > 0.9


def test_the_network_is_initialised_as_the_batched_training_does():
    from expril.method.training import train_mlps

    x, y = _data(n_nets=1, n=64, d=3)
    batched = train_mlps(x, y, np.ones(y.shape), [16], [42], 0, 16, 1e-3)
    untrained = _train(x, y, hidden=(16,), seeds=(42,), epochs=0)
    for key in ("W0", "b0", "W1", "b1"):
        np.testing.assert_allclose(batched[key], untrained[key], atol=1e-7)


def test_the_noise_multiplier_is_kept_in_the_cache_and_read_back_to_the_bit(tmp_path, monkeypatch):
    """The search's result is written once to EXPRIL_CACHE_DIR and read back by the next job, the
    same float; another Opacus version searches again; an empty EXPRIL_CACHE_DIR turns the cache
    off."""
    monkeypatch.setenv("EXPRIL_CACHE_DIR", str(tmp_path))
    first = calibration.dpsgd_noise_multiplier(2.0, 1e-5, 0.05, 40)
    assert len(list((tmp_path / "dpsgd_sigma").iterdir())) == 1

    def refuse(*args):
        raise AssertionError("searched again")

    monkeypatch.setattr(calibration, "_search_noise_multiplier", refuse)
    assert (
        calibration.dpsgd_noise_multiplier(2.0, 1e-5, 0.05, 40)
        == first
        == get_noise_multiplier(
            target_epsilon=2.0,
            target_delta=1e-5,
            sample_rate=0.05,
            steps=40,
            accountant="rdp",
            epsilon_tolerance=0.02,
            alphas=calibration.DPSGD_ALPHAS,
        )
    )
    with monkeypatch.context() as patch:
        patch.setattr(calibration.importlib.metadata, "version", lambda package: "0.0")
        with pytest.raises(AssertionError, match="searched again"):
            calibration.dpsgd_noise_multiplier(2.0, 1e-5, 0.05, 40)
    monkeypatch.setenv("EXPRIL_CACHE_DIR", "")
    with pytest.raises(AssertionError, match="searched again"):
        calibration.dpsgd_noise_multiplier(2.0, 1e-5, 0.05, 40)
