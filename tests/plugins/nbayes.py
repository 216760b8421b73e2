"""Naive Bayes on noisy bin counts: the worked example of docs/extending.md, a whole method in one
module, as a user adds one (copied into expril/plugins/ by tests/plugins/test_extending.py).

The curator releases, on ExPriL's bins as configured, the noisy count of its records and of its
negatives in every bin (two queries of the registered `counts` mechanism planned for one iteration,
the run's eps split between them). The learner reads each bin's share of positives, labels its
source by naive Bayes over the features' bins and trains its network on those labels."""

import numpy as np

from expril.io import save_npz
from expril.method import binning
from expril.plugins import gate
from expril.plugins.base import Method, Step
from expril.plugins.registry import register
from expril.privacy import ledger, mechanisms
from expril.seeds import seed_int
from expril.steps.blocks import answers, load_bins, load_block, pad, train_networks
from expril.steps.curator import answer_block

QUERIES = ("nbayes/counts", "nbayes/negatives")


def release(val_path, bins_path, out_path, ledger_path, name, mechanism):
    """The curator's side: every seed's noisy counts and negatives, each query in the ledger."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    seeds = val["seeds"]
    counts, negatives = noisy_counts(val, load_bins(bins_path, seeds), name, mechanism)
    book = None
    for query in QUERIES:
        book = ledger.record(ledger_path, book, name, seeds, query, "nbayes_release", mechanism)
    (counts, n_bins), (negatives, _) = pad(counts), pad(negatives)
    save_npz(out_path, counts=counts, negatives=negatives, n_bins=n_bins, seeds=seeds)


def noisy_counts(val, edges, name, mechanism):
    """Every seed's noisy counts and negatives, each query from its own noise stream."""
    seeds = val["seeds"]
    counts = answer_block(val, edges, name, [QUERIES[0]] * len(seeds), mechanism, mechanism.release_counts)
    negatives = answer_block(
        val, edges, name, [QUERIES[1]] * len(seeds), mechanism, mechanism.release_errors, val["y"] != 1
    )
    return counts, negatives


def labels(x, edges, counts, negatives, mechanism):
    """Naive Bayes labels of x from each bin's released share of positives."""
    positive = np.clip(1.0 - mechanism.error_rates(negatives, counts), 0.01, 0.99)
    first = binning.bin_counts(edges)[0]
    prior = np.clip(1.0 - negatives[:first].sum() / max(counts[:first].sum(), 1.0), 0.01, 0.99)
    log_odds = np.log(positive / (1 - positive))
    score = log_odds[binning.bin_ids(edges, x)].sum(axis=1) - (x.shape[1] - 1) * np.log(prior / (1 - prior))
    return (score >= 0).astype(np.int8)


def train(source_path, bins_path, release_path, out_path, network, training, mechanism, init_key, device, threads):
    """The learner's side: its source labelled by naive Bayes, the network trained on them."""
    mechanism = mechanisms.from_param(mechanism)
    source = load_block(source_path, ("x",))
    x, seeds = source["x"], source["seeds"]
    edges = load_bins(bins_path, seeds)
    release = load_block(release_path, ("counts", "negatives", "n_bins"), seeds)
    y = np.stack(
        [
            labels(x[b], edges[b], answers(release, b, "counts"), answers(release, b, "negatives"), mechanism)
            for b in range(len(seeds))
        ]
    )
    init_seeds = [seed_int(*init_key, int(s)) for s in seeds]
    model = train_networks(x, y, np.ones(y.shape), network, training, init_seeds, device, threads)
    save_npz(out_path, seeds=seeds, **model)


class NaiveBayes(Method):
    name = "nbayes"
    display = "Naive Bayes"
    steps = (
        Step(
            "nbayes_release",
            release,
            "release.npz",
            {"val_path": "target_val", "bins_path": "configured_bins"},
            release=True,
            axes=(),
            audit=gate.on_public_bins(noisy_counts),
        ),
        Step(
            "nbayes_train",
            train,
            "model.npz",
            {"source_path": "source", "bins_path": "configured_bins", "release_path": "nbayes_release"},
            trains=True,
        ),
    )

    def mechanism(self, ctx):
        return mechanisms.get("counts")(ctx.eps, ctx.delta, ctx.features, 1, ctx.spec["importance_sampling"])


register(NaiveBayes())
