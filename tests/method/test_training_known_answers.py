"""Batched training (expril.method.training.train_mlps) against an independent reference: each
network trained alone by a plain torch loop (torch.nn.Linear layers, the weighted loss written out,
torch.optim.Adam, no padding, no stacking), from the initial weights, held-out split and batch
orders that train_mlps documents (drawn in that order from the network's own generator). Every
network of a padded block must come out as the plain loop trains it, up to float rounding: a
padded slot that leaks into a mini-batch, another Adam step size or another patience does not."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from expril.method.training import Bags, train_mlps

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="the trainer's CUDA branch needs a CUDA device")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]
# Float32 batched matmuls and fused Adam round differently from nn.Linear and the plain Adam: on
# the CPU the networks below differ from the plain loop's by at most 4e-7 (up to 100 epochs of
# 5 steps). A leaking padded slot, Adam's step size x 1.01 or another patience fail it (docs/testing.md).
TOLERANCE = dict(rtol=1e-4, atol=1e-5)


def label_loss(logits, w, y):
    """The sample-weighted cross-entropy, summed."""
    return -(w * (y * F.logsigmoid(logits) + (1 - y) * F.logsigmoid(-logits))).sum()


def bag_loss(logits, w, bags, proportions):
    """DLLP's loss, one bag at a time: each bag the batch meets adds its weight in the batch times
    the cross-entropy between its proportion and its samples' weighted mean probability; divided by
    the bags per sample."""
    total = logits.new_zeros(())
    for bag in bags.unique():
        member = (bags == bag).any(dim=1)
        weight = w[member].sum()
        if weight == 0:  # met by weightless samples only
            continue
        mean = (w[member] * torch.sigmoid(logits[member])).sum() / weight
        p = proportions[bags == bag][0]
        total = total - weight * (p * torch.log(mean) + (1 - p) * torch.log(1 - mean))
    return total / bags.shape[1]


def reference(x, targets, w, hidden, seed, epochs, batch_size, lr, holdout=0.0, patience=0, activation="relu"):
    """One network trained alone by a plain loop: its parameters {W0, b0, ...} (W as (in, out))
    and its held-out loss after each epoch it trained. `targets`: (y,) for labels, (bags,
    proportions) for bags."""
    n = len(x)
    mean, std = x.mean(axis=0), x.std(axis=0)
    inputs = torch.from_numpy((x.astype(np.float32) - mean.astype(np.float32)) / std.astype(np.float32))
    weights = torch.from_numpy((w / w.sum() * n).astype(np.float32))
    targets = [torch.from_numpy(t) for t in targets]
    loss_of = label_loss if len(targets) == 1 else bag_loss
    g = torch.Generator().manual_seed(seed)
    sizes = [x.shape[1], *hidden, 1]
    linears = [torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
    with torch.no_grad():
        for layer in linears:
            bound = 1 / math.sqrt(layer.in_features)
            layer.weight.uniform_(-bound, bound, generator=g)
            layer.bias.uniform_(-bound, bound, generator=g)
    act = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[activation]
    net = torch.nn.Sequential(*[m for layer in linears[:-1] for m in (layer, act())], linears[-1])
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    m = round(n * holdout) if patience else 0
    order = torch.randperm(n, generator=g) if m else torch.arange(n)
    held, fit = order[:m].sort().values, order[m:].sort().values

    def loss(rows):
        return loss_of(net(inputs[rows])[:, 0], weights[rows], *(t[rows] for t in targets))

    def state():
        return [p.detach().clone() for p in net.parameters()]

    best, best_loss, waited, held_losses = state(), math.inf, 0, []
    for _ in range(epochs):
        shuffled = fit[torch.randperm(len(fit), generator=g)]
        for lo in range(0, len(fit), batch_size):
            rows = shuffled[lo : lo + batch_size]
            optimizer.zero_grad()
            (loss(rows) / len(rows)).backward()
            optimizer.step()
        if not patience:
            continue
        with torch.no_grad():
            held_losses.append(loss(held).item() / m)
        if held_losses[-1] < best_loss:
            best, best_loss, waited = state(), held_losses[-1], 0
        else:
            waited += 1
            if waited == patience:
                break
    final = best if patience else state()
    params = {}
    for i in range(len(linears)):
        params[f"W{i}"], params[f"b{i}"] = final[2 * i].T, final[2 * i + 1]
    return params, held_losses


def labelled(n_nets, n, d, seed):
    """Noisy labels from the first feature, uneven weights with a few exact zeros."""
    r = np.random.default_rng(seed)
    x = r.normal(size=(n_nets, n, d)) * r.uniform(0.5, 3, size=d) + r.normal(size=d)
    y = (x[..., 0] + r.normal(scale=1.0, size=(n_nets, n)) > x[..., 0].mean()).astype(np.float32)
    w = r.uniform(0, 2, size=(n_nets, n)) * (r.uniform(size=(n_nets, n)) > 0.1)
    return x, y, w


def assert_trained_as_reference(model, x, targets, w, hidden, seeds, settings):
    """Each network of the block against the plain loop's, alone; returns the references."""
    found = []
    for b, seed in enumerate(seeds):
        expected, held = reference(x[b], [t[b] for t in targets], w[b], hidden, seed, **settings)
        for key, value in expected.items():
            torch.testing.assert_close(
                torch.from_numpy(model[key][b]),
                value,
                **TOLERANCE,
                msg=lambda m, b=b, key=key: f"network {b}, {key}: {m}",
            )
        found.append((expected, held))
    return found


# A block of 3 networks, batches of 20 (padded to 32 slots, the last of 11 samples), 2 layers.
PLAIN = dict(epochs=4, batch_size=20, lr=1e-2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("hidden, activation", [([16, 8], "relu"), ([8], "tanh")])
def test_a_padded_block_trains_each_network_as_a_plain_loop_alone(hidden, activation, device):
    x, y, w = labelled(3, 91, 3, seed=0)
    seeds = [7, 8, 9]
    model = train_mlps(x, y, w, hidden, seeds, **PLAIN, activation=activation, device=device)
    assert_trained_as_reference(model, x, [y], w, hidden, seeds, PLAIN | {"activation": activation})


# On this noisy problem with a large step the held-out loss goes down and up: networks stop at
# different epochs (the block shrinks), and one patience fewer or more returns another epoch.
EARLY = dict(epochs=40, batch_size=20, lr=0.02, holdout=0.3, patience=3)


def assert_patience_matters(x, targets, w, hidden, seeds, found, settings):
    """The test's premise: the block's networks stop at different epochs, some before the last,
    and patience one fewer or one more returns other parameters for at least one of them."""
    stopped = [len(held) for _, held in found]
    assert len(set(stopped)) > 1 and min(stopped) < settings["epochs"], stopped
    for other in (settings["patience"] - 1, settings["patience"] + 1):
        changed = False
        for b, (expected, _) in enumerate(found):
            params, _ = reference(
                x[b], [t[b] for t in targets], w[b], hidden, seeds[b], **settings | {"patience": other}
            )
            changed |= any(not torch.equal(expected[key], params[key]) for key in expected)
        assert changed, f"patience {other} returns the networks patience {settings['patience']} does"


@pytest.mark.parametrize("device", DEVICES)
def test_early_stopping_keeps_each_networks_best_epoch_as_a_plain_loop(device):
    x, y, w = labelled(6, 120, 3, seed=2)
    seeds = [1, 2, 3, 4, 5, 6]
    model = train_mlps(x, y, w, [16], seeds, **EARLY, device=device)
    found = assert_trained_as_reference(model, x, [y], w, [16], seeds, EARLY)
    assert_patience_matters(x, [y], w, [16], seeds, found, EARLY)


def bagged(n_nets, n, d, bins, seed):
    """Samples in d overlapping bags (their bin of each feature, global ids), the bags'
    proportions of positives, uneven weights."""
    r = np.random.default_rng(seed)
    x = r.uniform(size=(n_nets, n, d))
    bags = (np.minimum(x * bins, bins - 1) + bins * np.arange(d)).astype(np.int64)
    proportions = r.uniform(size=(n_nets, d * bins)).astype(np.float32)
    proportions = np.stack([p[b] for p, b in zip(proportions, bags)])
    return x, bags, proportions, r.uniform(0.2, 2, size=(n_nets, n))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("settings", [PLAIN, EARLY], ids=["plain", "early-stopping"])
def test_label_proportions_train_each_network_as_a_plain_loop_on_dllps_loss(settings, device):
    x, bags, proportions, w = bagged(6, 100, 2, 4, seed=1)
    seeds = [1, 2, 3, 4, 5, 6]
    model = train_mlps(x, Bags(bags, proportions), w, [8], seeds, **settings, activation="tanh", device=device)
    found = assert_trained_as_reference(model, x, [bags, proportions], w, [8], seeds, settings | {"activation": "tanh"})
    if settings.get("patience"):
        assert_patience_matters(x, [bags, proportions], w, [8], seeds, found, settings | {"activation": "tanh"})
