"""Learning from label proportions (expril.rivals.llp, expril.method.training.Bags): the bag loss, the
curator's release and the learner's reading, and a toy problem whose labels it must recover."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from expril.io import load_npz, save_npz
from expril.method import binning, mlp
from expril.method.training import Bags, train_mlps
from expril.plugins import llp as llp_method
from expril.privacy import ledger, mechanisms
from expril.rivals import llp


def _loss(bags, proportions, logits, weights):
    target = Bags(bags, proportions)
    return target.loss(
        torch.tensor(logits, dtype=torch.float32),
        torch.tensor(weights, dtype=torch.float32),
        *map(torch.from_numpy, target.arrays),
    )


def test_bag_loss_is_dllp_on_whole_bags_and_soft_labels_on_single_samples():
    # One network, 4 samples, 2 features: feature 0 puts samples {0, 1} in bag 0 and {2, 3} in bag 1,
    # feature 1 puts each sample in a bag of its own (2..5).
    bags = np.array([[[0, 2], [0, 3], [1, 4], [1, 5]]])
    proportions = np.array([[[0.25, 1.0], [0.25, 0.0], [0.5, 1.0], [0.5, 0.0]]])
    logits, weights = np.array([[0.0, 2.0, -1.0, 1.0]]), np.array([[1.0, 3.0, 2.0, 2.0]])
    p = 1 / (1 + np.exp(-logits[0]))
    w = weights[0]

    def ce(target, prob):
        return -(target * math.log(prob) + (1 - target) * math.log(1 - prob))

    mean0, mean1 = (w[:2] @ p[:2]) / w[:2].sum(), (w[2:] @ p[2:]) / w[2:].sum()
    whole_bags = w[:2].sum() * ce(0.25, mean0) + w[2:].sum() * ce(0.5, mean1)
    soft_labels = sum(w[i] * ce(proportions[0, i, 1], p[i]) for i in range(4))
    assert _loss(bags, proportions, logits, weights).item() == pytest.approx((whole_bags + soft_labels) / 2, rel=1e-6)
    # With every bag a single sample, it is the weighted cross-entropy against soft labels.
    single = np.arange(4).reshape(1, 4, 1)
    soft = F.binary_cross_entropy_with_logits(
        torch.tensor(logits), torch.tensor(proportions[:, :, 0]), weight=torch.tensor(weights), reduction="sum"
    )
    assert _loss(single, proportions[:, :, :1], logits, weights).item() == pytest.approx(soft.item(), rel=1e-6)


def test_weightless_samples_leave_the_loss_and_its_gradient_alone():
    """Padding slots (weight 0) may point at a bag no weighted sample of the batch is in."""
    bags, proportions = np.array([[[0], [1]]]), np.array([[[0.3], [0.9]]])
    logits = torch.tensor([[0.5, -40.0]], requires_grad=True)
    target = Bags(bags, proportions)
    loss = target.loss(logits, torch.tensor([[1.0, 0.0]]), *map(torch.from_numpy, target.arrays))
    loss.backward()
    assert loss.item() == pytest.approx(
        -(0.3 * math.log(1 / (1 + math.exp(-0.5))) + 0.7 * math.log(1 - 1 / (1 + math.exp(-0.5)))), rel=1e-6
    )
    assert torch.isfinite(logits.grad).all() and logits.grad[0, 1] == 0


def test_bad_bags_are_refused():
    with pytest.raises(ValueError, match="proportions must lie in"):
        Bags(np.zeros((1, 2, 1), dtype=int), np.full((1, 2, 1), 1.5))
    with pytest.raises(ValueError, match="non-negative integers"):
        Bags(np.full((1, 2, 1), -1), np.zeros((1, 2, 1)))
    with pytest.raises(ValueError, match="bags per sample"):
        Bags(np.zeros((1, 2), dtype=int), np.zeros((1, 2)))


def toy(n_nets=3, n=1000, q=5):
    """Uniform x in [0, 1]^2, y = [x0 > 0.4]: feature 0's bins hold (nearly) pure bags, feature 1's
    bags all hold the base rate. Each network's bags and exact proportions."""
    r = np.random.default_rng(0)
    x = r.uniform(size=(n_nets, n, 2))
    y = (x[..., 0] > 0.4).astype(np.int8)
    bags, proportions = np.empty(x.shape, dtype=int), np.empty(x.shape)
    for b in range(n_nets):
        edges = binning.make_bins(x[b], q)
        ids = binning.bin_ids(edges, x[b])
        n_bins = binning.bin_counts(edges).sum()
        bags[b], proportions[b] = ids, (binning.bin_sums(ids, n_bins, y[b]) / binning.bin_sums(ids, n_bins))[ids]
    return x, y, bags, proportions


def test_llp_recovers_the_labels_from_exact_proportions():
    x, y, bags, proportions = toy()
    model = train_mlps(
        x, Bags(bags, proportions), np.ones(y.shape), [32, 32], [1, 2, 3], 100, 64, 1e-3, holdout=0.2, patience=10
    )
    assert (mlp.predict(model, x) == y).mean(axis=1).min() > 0.97


def test_llp_separates_the_labels_inside_mixed_bags():
    """y = [x0 + x1 > 1] on two bins per feature: every bag holds 20-80 % positives, and the label
    splits two of the four cells the bags cut about in half, so no rule reading a sample's bags alone
    (its proportions, thresholded or not) gets above ~78 %. The bag-trained network, smooth in x,
    puts the boundary inside the cells."""
    r = np.random.default_rng(0)
    x = r.uniform(size=(3, 1000, 2))
    y = (x[..., 0] + x[..., 1] > 1).astype(np.int8)
    bags, proportions = np.empty(x.shape, dtype=int), np.empty(x.shape)
    bayes = []  # the best accuracy of any function of the bags: each cell's majority label
    for b in range(3):
        edges = binning.make_bins(x[b], 2)
        ids = binning.bin_ids(edges, x[b])
        n_bins = binning.bin_counts(edges).sum()
        bags[b], proportions[b] = ids, (binning.bin_sums(ids, n_bins, y[b]) / binning.bin_sums(ids, n_bins))[ids]
        _, cell = np.unique(ids, axis=0, return_inverse=True)
        bayes.append(sum(max(y[b][cell == c].sum(), (1 - y[b][cell == c]).sum()) for c in range(4)) / len(cell))
    assert 0.2 <= proportions.min() and proportions.max() <= 0.8 and max(bayes) < 0.8
    model = train_mlps(
        x, Bags(bags, proportions), np.ones(y.shape), [32, 32], [1, 2, 3], 100, 64, 1e-3, holdout=0.2, patience=10
    )
    assert (mlp.predict(model, x) == y).mean(axis=1).min() > 0.93


@pytest.mark.bitexact
def test_a_network_learning_from_bags_does_not_depend_on_its_block():
    x, _, bags, proportions = toy(n_nets=4, n=300)
    w = np.random.default_rng(1).uniform(0, 2, size=x.shape[:2])
    settings = dict(epochs=3, batch_size=20, lr=1e-2, holdout=0.2, patience=1)
    block = train_mlps(x, Bags(bags, proportions), w, [16, 256, 256, 16], [5, 6, 7, 8], **settings)
    for b in range(4):
        alone = train_mlps(
            x[b : b + 1],
            Bags(bags[b : b + 1], proportions[b : b + 1]),
            w[b : b + 1],
            [16, 256, 256, 16],
            [5 + b],
            **settings,
        )
        for key in block:
            np.testing.assert_array_equal(block[key][b], alone[key][0], err_msg=key)


def _release(tmp_path, eps, d=2, n=400, seeds=(3, 4)):
    """The curator's LLP release on the seeds' toy validation splits; returns the bins, data and
    released file."""
    r = np.random.default_rng(4)
    x = r.uniform(size=(len(seeds), n, d))
    y = (x[..., 0] > 0.5).astype(np.int8)
    save_npz(tmp_path / "val.npz", x=x, y=y, seeds=np.array(seeds))
    edges = [binning.make_bins(x[b], 4) for b in range(len(seeds))]
    save_npz(tmp_path / "bins.npz", seeds=np.array(seeds), **binning.pack(edges))
    plan = mechanisms.Counts(eps, 1e-5, d, 1, False)
    llp_method.oracle_proportions(
        tmp_path / "val.npz",
        tmp_path / "bins.npz",
        tmp_path / "release.npz",
        tmp_path / "release.ledger.csv",
        "A",
        plan.param(),
    )
    return edges, x, y, load_npz(tmp_path / "release.npz"), plan


def test_without_privacy_the_release_is_exact_and_the_learner_reads_the_true_proportions(tmp_path):
    edges, x, y, release, plan = _release(tmp_path, math.inf)
    assert plan.scale == 0.0
    for b in range(2):
        ids = binning.bin_ids(edges[b], x[b])
        n_bins = binning.bin_counts(edges[b]).sum()
        counts, negatives = (release[key][b, : release["n_bins"][b]] for key in ("counts", "negatives"))
        np.testing.assert_array_equal(counts, binning.bin_sums(ids, n_bins))
        np.testing.assert_array_equal(negatives, binning.bin_sums(ids, n_bins, y[b] == 0))
        bags, proportions = llp.bags(edges[b], x[b], plan, counts, negatives)
        np.testing.assert_array_equal(bags, ids)
        np.testing.assert_allclose(
            proportions, (binning.bin_sums(ids, n_bins, y[b]) / binning.bin_sums(ids, n_bins))[ids]
        )


def test_the_release_spends_the_runs_eps_in_two_counts_queries(tmp_path):
    edges, x, y, release, plan = _release(tmp_path, 1.0)
    assert plan.scale == 4.0  # lambda = d (T+1) / eps with T = 1
    book = ledger.load(tmp_path / "release.ledger.csv")
    assert list(book["query"]) == [q for q in llp.QUERIES for _ in range(2)] and set(book.mechanism) == {"counts"}
    assert set(book.neighbours) == {mechanisms.RECORD} and set(book.delta_spent) == {0.0}
    assert list(book.groupby("seed").eps_total.max()) == [1.0, 1.0]
    counts = release["counts"][0, : release["n_bins"][0]]
    assert not np.array_equal(counts, binning.bin_sums(binning.bin_ids(edges[0], x[0]), len(counts)))


def test_the_released_noise_is_laplace_of_the_planned_scale(tmp_path):
    """(released - true) over 400 seeds, 8 bins each and both queries: 6400 draws from Laplace(0, 4).
    |Laplace(0, b)| is exponential of mean b and std b: the mean absolute deviation lies within
    b +- 6 b / 80 but for a chance below 1e-8, and a scale 20 % off lies outside; the KS test
    tells the planned scale from one 25 % off. Counts and negatives, on the same bins, draw from
    streams of their own."""
    seeds = range(400)
    edges, x, y, release, plan = _release(tmp_path, 1.0, n=100, seeds=seeds)
    drawn = {"counts": [], "negatives": []}
    for b in range(len(seeds)):
        ids, n_bins = binning.bin_ids(edges[b], x[b]), release["n_bins"][b]
        assert n_bins == 8
        drawn["counts"].append(release["counts"][b, :n_bins] - binning.bin_sums(ids, n_bins))
        drawn["negatives"].append(release["negatives"][b, :n_bins] - binning.bin_sums(ids, n_bins, y[b] == 0))
    counts, negatives = (np.concatenate(drawn[key]) for key in ("counts", "negatives"))
    noise = np.concatenate([counts, negatives])
    assert np.abs(noise).mean() == pytest.approx(plan.scale, abs=6 * plan.scale / math.sqrt(noise.size))
    assert stats.kstest(noise, stats.laplace(scale=plan.scale).cdf).pvalue > 1e-3
    for wrong in (0.75 * plan.scale, 1.25 * plan.scale):
        assert stats.kstest(noise, stats.laplace(scale=wrong).cdf).pvalue < 1e-3
    assert abs(np.corrcoef(counts, negatives)[0, 1]) < 6 / math.sqrt(counts.size)


def test_the_learner_reads_noisy_counts_as_clipped_proportions():
    """positive proportion = 1 - clip(negatives / max(counts, 1), 0, 1): a bin with a count below 1
    (empty, or noise gone negative) is divided by 1; more negatives than counts read as no
    positives, negative negatives as all positives; every proportion lies in [0, 1], as Bags asks."""
    edges = [np.array([0.5]), np.array([0.3, 0.6])]
    x = np.array([[0.2, 0.1], [0.7, 0.4], [0.9, 0.95]])
    counts = np.array([10.0, 4.0, 0.4, -3.0, 5.0])
    negatives = np.array([4.0, 7.0, 0.2, 2.0, -1.0])
    bags, proportions = llp.bags(edges, x, mechanisms.Counts(1.0, 0.0, 2, 1, False), counts, negatives)
    np.testing.assert_array_equal(bags, [[0, 2], [1, 3], [1, 4]])
    np.testing.assert_allclose(proportions, [[0.6, 0.8], [0.0, 0.0], [0.0, 1.0]])
    Bags(bags[None], proportions[None])


TRAINING = {"epochs": 100, "batch_size": 64, "lr": 1e-3, "holdout": 0.2, "patience": 10}


def test_the_train_llp_step_learns_the_labels_from_the_release(tmp_path):
    """Curator and learner steps end to end without noise: the target and the source are draws of
    the same mixed-bag problem (y = [x0 + x1 > 1], two bins per feature); each seed's network,
    trained on the source from the released counts, labels fresh draws far better than the bags
    could (about 75 %, test_llp_separates_the_labels_inside_mixed_bags)."""
    r = np.random.default_rng(7)
    seeds = np.array([5, 6])
    source, target, test = (r.uniform(size=(2, 1000, 2)) for _ in range(3))
    save_npz(tmp_path / "val.npz", x=target, y=(target.sum(axis=2) > 1).astype(np.int8), seeds=seeds)
    save_npz(tmp_path / "source.npz", x=source, seeds=seeds)
    save_npz(tmp_path / "bins.npz", seeds=seeds, **binning.pack([binning.make_bins(s, 2) for s in source]))
    plan = mechanisms.Counts(math.inf, 0.0, 2, 1, False).param()
    paths = [tmp_path / f for f in ("val.npz", "bins.npz", "release.npz", "release.ledger.csv")]
    llp_method.oracle_proportions(*paths, "A", plan)
    run = {
        "bins_path": tmp_path / "bins.npz",
        "release_path": tmp_path / "release.npz",
        "out_path": tmp_path / "model.npz",
        "mechanism": plan,
        "init_key": ["llp", "A", "inf"],
    }
    llp_method.train_llp([run], tmp_path / "source.npz", {"hidden": [32, 32]}, TRAINING, None, "cpu", 1)
    model = load_npz(tmp_path / "model.npz")
    np.testing.assert_array_equal(model["seeds"], seeds)
    accuracy = (mlp.predict(model, test) == (test.sum(axis=2) > 1)).mean(axis=1)
    assert accuracy.shape == (2,) and accuracy.min() > 0.93
