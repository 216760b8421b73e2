"""Batched MLP training (expril.method.training) and numpy scoring (expril.method.mlp)."""

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from expril import io
from expril.method import mlp
from expril.method.training import Adam, forward, resolve_device, train_mlps
from harness import ROOT

DEEP, SHALLOW = [16, 256, 256, 16], [32, 32]


def problem(n_nets, n, d, seed=0):
    """Noisy labels from the first feature, random weights with a few exact zeros."""
    r = np.random.default_rng(seed)
    x = r.normal(size=(n_nets, n, d)) * r.uniform(0.5, 3, size=d) + r.normal(size=d)
    y = (x[..., 0] + r.normal(scale=0.5, size=(n_nets, n)) > x[..., 0].mean()).astype(int)
    w = r.uniform(0, 2, size=(n_nets, n)) * (r.uniform(size=(n_nets, n)) > 0.1)
    return x, y, w


def train(x, y, w, hidden, seeds, epochs=2, batch_size=64, lr=1e-3, **kw):
    return train_mlps(x, y, w, hidden, seeds, epochs, batch_size, lr, **kw)


def assert_same_network(model, b, other, c):
    for key in model:
        if model[key].ndim:
            np.testing.assert_array_equal(model[key][b], other[key][c], err_msg=key)
        else:
            assert model[key] == other[key], key


# Scalar-code tails (see training.ALIGN) are where a network's rounding could change with the
# block: a batch of 20 gives a network alone a tail (20 = 16 + 4 on AVX2) that it does not have
# in the block, and with 9 networks the output biases fill a vector plus a tail. The third case
# runs 400 steps, enough for fused Adam's rarer tail roundings to show. All cases fail without
# the padding.
@pytest.mark.bitexact
@pytest.mark.parametrize("hidden, n, d, epochs", [(DEEP, 300, 3, 2), (SHALLOW, 500, 25, 2), (SHALLOW, 40, 2, 200)])
def test_network_does_not_depend_on_its_block(hidden, n, d, epochs):
    x, y, w = problem(9, n, d)
    seeds = list(range(11, 20))
    settings = dict(epochs=epochs, batch_size=20, lr=1e-2)
    block = train(x, y, w, hidden, seeds, **settings)
    for b in range(9):
        alone = train(x[b : b + 1], y[b : b + 1], w[b : b + 1], hidden, seeds[b : b + 1], **settings)
        assert_same_network(block, b, alone, 0)


@pytest.mark.bitexact
@pytest.mark.parametrize("hidden, n, d", [(DEEP, 300, 3), (SHALLOW, 500, 25)])
def test_thread_count_does_not_change_the_networks(hidden, n, d):
    x, y, w = problem(9, n, d)
    one, two = (train(x, y, w, hidden, list(range(9)), batch_size=20, threads=t) for t in (1, 2))
    for b in range(9):
        assert_same_network(one, b, two, b)


def test_same_seeds_give_the_same_model_and_other_seeds_do_not():
    x, y, w = problem(2, 200, 4)
    first, again = (train(x, y, w, DEEP, [5, 6]) for _ in range(2))
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    other = train(x, y, w, DEEP, [7, 6])
    assert not np.array_equal(first["W1"][0], other["W1"][0])
    assert_same_network(first, 1, other, 1)


def test_adam_step_is_torch_fused_adam():
    g = torch.Generator().manual_seed(0)
    start = torch.randn(3, 64, generator=g)
    mine, ref = start.clone().requires_grad_(), start.clone().requires_grad_()
    mine_opt, optimizer = Adam([mine], lr=0.01), torch.optim.Adam([ref], lr=0.01, fused=True)
    for _ in range(5):
        grad = torch.randn(3, 64, generator=g)
        mine_opt.step([grad])
        ref.grad = grad
        optimizer.step()
    assert torch.equal(mine_opt.params[0], ref)


def test_initialisation_is_nn_linear_default():
    x, y, w = problem(1, 10, 3)
    model = train(x, y, w, [8], [42], epochs=0)
    torch.manual_seed(42)
    layers = [torch.nn.Linear(3, 8), torch.nn.Linear(8, 1)]
    for i, layer in enumerate(layers):
        np.testing.assert_allclose(model[f"W{i}"][0], layer.weight.detach().numpy().T, atol=1e-7)
        np.testing.assert_allclose(model[f"b{i}"][0], layer.bias.detach().numpy(), atol=1e-7)


def test_learns_a_separable_problem_and_numpy_agrees_with_torch():
    r = np.random.default_rng(1)
    x = r.uniform(-5, 5, size=(2, 600, 2))
    y = (x[..., 1] > np.sin(x[..., 0])).astype(int)
    model = train(x, y, np.ones(y.shape), DEEP, [1, 2], epochs=30, lr=3e-3)
    labels = mlp.predict(model, x)
    assert labels.dtype == np.int8
    assert (labels == y).mean(axis=1).min() > 0.95

    params = [torch.from_numpy(model[f"{kind}{i}"]) for i in range(len(DEEP) + 1) for kind in "Wb"]
    with torch.no_grad():
        logits = forward(params, torch.from_numpy(mlp.standardise(x, model["mean"], model["std"])))
    np.testing.assert_allclose(mlp.logits(model, x), logits.numpy(), atol=1e-5, rtol=1e-5)
    clear = logits.abs().numpy() >= 1e-5
    assert (labels == (logits >= 0).numpy())[clear].all()


@pytest.mark.bitexact
@pytest.mark.parametrize("hidden, activation", [([32], "tanh"), ([], "relu")])
def test_the_model_familys_small_networks_learn_and_numpy_scores_them_as_torch(hidden, activation):
    """The comparison's model family (docs/comparison.md, Tuning): one tanh layer of 32, and
    logistic regression (no hidden layer); each network is independent of its block."""
    r = np.random.default_rng(2)
    x = r.normal(size=(3, 400, 3))
    y = (x[..., 0] + 0.5 * x[..., 1] > 0).astype(int)
    model = train(x, y, np.ones(y.shape), hidden, [1, 2, 3], epochs=40, lr=3e-2, activation=activation)
    assert ("activation" in model) == (activation != "relu") and len([k for k in model if k[0] == "W"]) == len(
        hidden
    ) + 1
    assert (mlp.predict(model, x) == y).mean(axis=1).min() > 0.95
    params = [torch.from_numpy(model[f"{kind}{i}"]) for i in range(len(hidden) + 1) for kind in "Wb"]
    with torch.no_grad():
        logits = forward(params, torch.from_numpy(mlp.standardise(x, model["mean"], model["std"])), activation)
    np.testing.assert_allclose(mlp.logits(model, x), logits.numpy(), atol=1e-5, rtol=1e-5)
    alone = train(x[1:2], y[1:2], np.ones((1, 400)), hidden, [2], epochs=40, lr=3e-2, activation=activation)
    assert_same_network(mlp.select(model, [1]), 0, alone, 0)


def test_zero_weights_make_points_ignored():
    """Two contradicting rules on one input set: each network follows the one it weights."""
    r = np.random.default_rng(2)
    x = r.uniform(-1, 1, size=(2, 800, 2))
    half = np.arange(800) < 400
    y = np.where(half, x[..., 0] > 0, x[..., 1] > 0).astype(int)
    w = np.stack([half, ~half]).astype(float)  # network 0 sees rule x0 > 0, network 1 rule x1 > 0
    labels = mlp.predict(train(x, y, w, SHALLOW, [3, 4], epochs=20, lr=1e-2), x)
    assert (labels[0] == (x[0, :, 0] > 0)).mean() > 0.95
    assert (labels[1] == (x[1, :, 1] > 0)).mean() > 0.95


def test_only_relative_weights_matter():
    x, y, _ = problem(1, 150, 2)
    w = np.random.default_rng(3).choice([0.5, 1.0, 2.0], size=y.shape)
    base, scaled = train(x, y, w, SHALLOW, [9]), train(x, y, 8 * w, SHALLOW, [9])
    assert_same_network(base, 0, scaled, 0)


def test_bad_training_inputs_are_refused():
    x, y, w = problem(2, 20, 2)
    with pytest.raises(ValueError, match="all-zero weights"):
        train(x, y, w * [[1], [0]], SHALLOW, [1, 2])
    with pytest.raises(ValueError, match="non-negative"):
        train(x, y, -w, SHALLOW, [1, 2])
    with pytest.raises(ValueError, match="init seeds"):
        train(x, y, w, SHALLOW, [1])
    with pytest.raises(ValueError, match="must all be"):
        train(x, y[:, :10], w, SHALLOW, [1, 2])
    with pytest.raises(ValueError, match="'cpu', 'cuda' or 'auto'"):
        train(x, y, w, SHALLOW, [1, 2], device="gpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="cuda"):
            train(x, y, w, SHALLOW, [1, 2], device="cuda")


def test_auto_device_trains_where_torch_sees_a_device():
    """`device: auto` takes CUDA when torch sees it, and then trains the same networks as the CPU
    up to float rounding (the initialisation, split and batch order are drawn on the CPU);
    without CUDA it is the CPU, bit for bit."""
    cuda = torch.cuda.is_available()
    assert resolve_device("auto").type == ("cuda" if cuda else "cpu")
    x, y, w = problem(2, 100, 3)
    auto, cpu = train(x, y, w, SHALLOW, [4, 5], device="auto"), train(x, y, w, SHALLOW, [4, 5])
    for b in range(2):
        if cuda:
            for key in cpu:
                np.testing.assert_allclose(auto[key][b], cpu[key][b], rtol=1e-3, atol=1e-5, err_msg=key)
        else:
            assert_same_network(auto, b, cpu, b)


def test_constant_model():
    model = mlp.constant_model(1, 3)
    assert mlp.n_models(model) == 3
    labels = mlp.predict(model, np.zeros((3, 5, 4)))
    assert labels.dtype == np.int8 and labels.shape == (3, 5) and (labels == 1).all()
    assert mlp.n_models(mlp.select(model, [0, 2])) == 2
    with pytest.raises(ValueError, match="3 networks but x has 2 sets"):
        mlp.predict(model, np.zeros((2, 5, 4)))


def test_select_save_load_and_shape_errors(tmp_path):
    x, y, w = problem(3, 100, 4)
    model = train(x, y, w, SHALLOW, [1, 2, 3], epochs=1)
    io.save_npz(tmp_path / "m.npz", **model)
    loaded = io.load_npz(tmp_path / "m.npz")
    labels = mlp.predict(loaded, x)
    np.testing.assert_array_equal(labels, mlp.predict(model, x))
    picked = mlp.select(loaded, [2, 0])
    np.testing.assert_array_equal(mlp.predict(picked, x[[2, 0]]), labels[[2, 0]])
    with pytest.raises(ValueError, match="3 networks but x has 2 sets"):
        mlp.predict(model, x[:2])
    with pytest.raises(ValueError, match="expects 4 features, x has 3"):
        mlp.predict(model, x[..., :3])


EARLY = dict(epochs=60, batch_size=20, lr=1e-2, holdout=0.25, patience=3)


@pytest.mark.bitexact
def test_early_stopping_does_not_depend_on_the_block():
    # Networks stop at different epochs and leave the batch; the others must not notice.
    x, y, w = problem(5, 120, 3)
    seeds = [3, 1, 4, 1, 5]
    block = train(x, y, w, SHALLOW, seeds, **EARLY)
    for b in (0, 2, 4):
        alone = train(x[b : b + 1], y[b : b + 1], w[b : b + 1], SHALLOW, seeds[b : b + 1], **EARLY)
        assert_same_network(block, b, alone, 0)


def test_early_stopping_keeps_the_best_epoch_and_saves_work():
    x, y, w = problem(3, 200, 3)
    logs = []
    stopped = train(x, y, w, SHALLOW, [1, 2, 3], log=logs.append, **EARLY)
    assert any("0 of 3 networks training" in line for line in logs)  # all stopped before 60
    # A run with patience beyond the 60 epochs trains them all and returns its best epoch. On
    # this small noisy problem the held-out loss never improves again after the early stop, so
    # both return the same epoch's parameters; returning the last epoch instead would differ.
    longer = train(x, y, w, SHALLOW, [1, 2, 3], **(EARLY | {"patience": 1000}))
    for key in stopped:
        np.testing.assert_array_equal(stopped[key], longer[key], err_msg=key)


def test_holdout_is_ignored_without_patience():
    x, y, w = problem(2, 100, 3)
    plain = train(x, y, w, SHALLOW, [1, 2], epochs=3)
    ignored = train(x, y, w, SHALLOW, [1, 2], epochs=3, holdout=0.5, patience=0)
    np.testing.assert_array_equal(plain["W0"], ignored["W0"])


def test_early_stopping_without_held_out_samples_fails():
    # Otherwise every network would "stop" after `patience` epochs of NaN losses, untrained.
    x, y, w = problem(2, 100, 3)
    with pytest.raises(ValueError, match="holds out none"):
        train(x, y, w, SHALLOW, [1, 2], holdout=0.001, patience=3)


def pages_handed_back(trained):
    """Resident pages a fresh process (as a job is) gives up when it frees a 200 MB tensor, after a
    training call or without one."""
    code = f"""if True:
        import sys
        import torch
        sys.path[:0] = ["tests", "tests/method"]
        from test_training import DEEP, problem, train
        def resident_pages():
            with open("/proc/self/statm") as statm:
                return int(statm.read().split()[1])
        if {trained}:
            x, y, w = problem(4, 50, 2)
            train(x, y, w, DEEP, list(range(4)))
        tensor = torch.ones(50_000_000)
        held = resident_pages()
        del tensor
        print(held - resident_pages())"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallopt"), reason="tunes glibc's malloc only")
def test_training_keeps_freed_memory_for_reuse():
    # With glibc's defaults the tensor is mmap-ed and handed back to the kernel when freed, so a
    # block's next step faults on fresh pages (23,948 faults for the second call of a
    # [16,256,256,16] block). Once training has run, the process keeps it. Counted in resident
    # pages, not page faults: whether a later tensor fits the freed chunk depends on the heap's
    # layout, which varies between processes (the fault count did, 0 to 17,000).
    assert pages_handed_back(trained=False) >= 200_000_000 // os.sysconf("SC_PAGE_SIZE")
    assert pages_handed_back(trained=True) == 0
