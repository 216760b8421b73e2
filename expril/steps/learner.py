"""The learner's steps: they read the source, the bins, the oracle's releases and the learner's
own models, never a curator/ file (expril.privacy.taint)."""

import numpy as np

from expril.io import save_npz
from expril.method import binning, labels, mlp, reweight, rff
from expril.privacy import mechanisms
from expril.seeds import rng, seed_int
from expril.steps.blocks import answers, load_bins, load_block, log, save_runs, timed, train_networks


@timed
def make_bins(source_path, out_path, q):
    source = load_block(source_path, ("x",))
    save_npz(out_path, seeds=source["seeds"], **binning.pack([binning.make_bins(x, q) for x in source["x"]]))


@timed
def reweight_source(
    source_path,
    weights_path,
    bins_out,
    q,
    solver,
    mechanism,
    bins_path=None,
    marginals_path=None,
    embedding_path=None,
    maps_path=None,
):
    """Pb. 1 when the target was queried for the IS step (its bin marginals, or its features'
    mean embedding in the runs by MMD, eps<e>-mmd/), else uniform weights; then the error-query
    bins: quantiles of the weighted source, so each holds about n'/q target samples, or, for a
    mechanism whose rates divide by released counts, the bins whose counts were released."""
    mechanism = mechanisms.from_param(mechanism)
    source = load_block(source_path, ("x",))
    x, seeds = source["x"], source["seeds"]
    weights = np.ones(x.shape[:2])
    edges = load_bins(bins_path, seeds) if bins_path else None
    if embedding_path is not None:
        released = load_block(embedding_path, ("answers",), seeds)["answers"]
        maps = load_block(maps_path, ("mean", "std", "omega"), seeds)
        for b in range(len(seeds)):
            features = rff.features(rff.unstack(maps, b), x[b])
            weights[b], taken = reweight.mmd_weights(features, released[b], **solver)
            _log_weights(seeds[b], taken, weights[b])
    if marginals_path is not None:
        marginals = load_block(marginals_path, ("answers", "n_bins"), seeds)
        for b in range(len(seeds)):
            weights[b] = bin_matched_weights(x[b], edges[b], answers(marginals, b), mechanism, solver, seeds[b])
    save_npz(weights_path, weights=weights, seeds=seeds)
    if edges is None or not mechanism.uses_counts:
        edges = [binning.make_bins(x[b], q, weights[b]) for b in range(len(seeds))]
    save_npz(bins_out, seeds=seeds, **binning.pack(edges))


def bin_matched_weights(x, edges, released_counts, mechanism, solver, seed):
    """Pb. 1 for one seed: the source's weights matching the target's bin masses, as the
    mechanism reads them from its bin counts release."""
    counts = binning.bin_counts(edges)
    masses = mechanism.bin_masses(released_counts, counts)
    weights, taken = reweight.importance_weights(binning.bin_ids(edges, x), counts.sum(), masses, **solver)
    _log_weights(seed, taken, weights)
    return weights


def _log_weights(seed, taken, weights):
    log.info(
        "seed %d: %d solver steps, weights min %.3g max %.3g, effective sample size %.0f of %d",
        seed,
        taken,
        weights.min(),
        weights.max(),
        weights.sum() ** 2 / (weights**2).sum(),
        len(weights),
    )


@timed
def init_hypothesis(out_path, seeds):
    """h_0 = 1 everywhere (Algorithm 1)."""
    save_npz(out_path, seeds=np.array(seeds), **mlp.constant_model(1, len(seeds)))


@timed
def estimate_labels(
    source_path,
    weights_path,
    bins_path,
    model_paths,
    answer_paths,
    out_path,
    solver,
    mechanism,
    counts_path=None,
    n_val=None,
):
    """Pb. 2 from the submitted hypotheses and their error answers (one block of equations each),
    read as error rates by the mechanism (with the released bin counts where it divides by them;
    where none were released, as in the runs by MMD, with the weighted source's bin masses
    times n', the configured target size)."""
    mechanism = mechanisms.from_param(mechanism)
    source = load_block(source_path, ("x",))
    x, seeds = source["x"], source["seeds"]
    weights = load_block(weights_path, ("weights",), seeds)["weights"]
    edges = load_bins(bins_path, seeds)
    predictions = [mlp.predict(load_block(p, (), seeds), x) for p in model_paths]
    releases = [load_block(p, ("answers", "n_bins"), seeds) for p in answer_paths]
    counts = load_block(counts_path, ("answers", "n_bins"), seeds) if counts_path else None
    relaxed = np.empty(x.shape[:2])
    for b in range(len(seeds)):
        n_bins = binning.bin_counts(edges[b]).sum()
        ids = binning.bin_ids(edges[b], x[b])
        released_counts = None if counts is None else answers(counts, b)
        if released_counts is None and mechanism.uses_counts:
            released_counts = n_val * binning.bin_sums(ids, n_bins, weights[b]) / weights[b].sum()
        rates = [mechanism.error_rates(answers(a, b), released_counts) for a in releases]
        blocks = [(h[b].astype(float), r) for h, r in zip(predictions, rates)]
        relaxed[b], taken = labels.estimate_labels(ids, n_bins, weights[b], blocks, **solver)
        log.info(
            "seed %d: %d blocks, %d solver steps, estimated positive rate %.3f",
            seeds[b],
            len(blocks),
            taken,
            labels.threshold(relaxed[b]).mean(),
        )
    save_npz(out_path, relaxed=relaxed, seeds=seeds)


def train_hypothesis(source_path, weights_path, labels_path, out_path, network, training, init_key, device, threads):
    """h_t: the network trained on the source with the thresholded estimated labels, weighted by
    the importance weights."""
    run = {"weights_path": weights_path, "labels_path": labels_path, "out_path": out_path, "init_key": init_key}
    train_hypotheses([run], source_path, network, training, device, threads)


@timed
def train_hypotheses(runs, source_path, network, training, device, threads):
    """The h_t of runs of one seed block whose networks have one shape (`runs`: each one's weights,
    labels, key and file; the calibration's eps, settings and variants, rules/stacked.smk), trained
    as one block: each run's file is the one it gets alone (train_hypothesis), since no network's
    arithmetic depends on the others in its block."""
    source = load_block(source_path, ("x",))
    seeds = source["seeds"]
    weights = [load_block(run["weights_path"], ("weights",), seeds)["weights"] for run in runs]
    y = [labels.threshold(load_block(run["labels_path"], ("relaxed",), seeds)["relaxed"]) for run in runs]
    init_seeds = [seed_int(*run["init_key"], int(s)) for run in runs for s in seeds]
    x = np.concatenate([source["x"]] * len(runs))
    model = train_networks(
        x, np.concatenate(y), np.concatenate(weights), network, training, init_seeds, device, threads
    )
    save_runs([run["out_path"] for run in runs], seeds, model)


@timed
def feature_maps(source_path, out_path, name, n_features, bandwidth=1.0):
    """The learner's random Fourier feature map of each run (expril.method.rff), from its source
    and a public stream, at `bandwidth` times the median heuristic: handed to the curator as the
    bins are."""
    source = load_block(source_path, ("x",))
    maps = [
        rff.make_map(x, n_features, rng("rff", name, int(s)), bandwidth) for x, s in zip(source["x"], source["seeds"])
    ]
    save_npz(out_path, seeds=source["seeds"], **rff.stack(maps))
