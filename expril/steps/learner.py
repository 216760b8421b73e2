"""The learner's steps: they read the source, the bins, the oracle's releases and the learner's
own models, never a curator/ file (expril.privacy.taint)."""

import numpy as np

from expril.io import save_npz
from expril.method import binning, labels, mlp, reweight, rff
from expril.privacy import mechanisms
from expril.rivals import aim, llp
from expril.seeds import rng, seed_int
from expril.steps.blocks import answers, load_bins, load_block, log, timed, train_networks


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
            weights[b] = _importance_weights(x[b], edges[b], answers(marginals, b), mechanism, solver, seeds[b])
    save_npz(weights_path, weights=weights, seeds=seeds)
    if edges is None or not mechanism.uses_counts:
        edges = [binning.make_bins(x[b], q, weights[b]) for b in range(len(seeds))]
    save_npz(bins_out, seeds=seeds, **binning.pack(edges))


def _importance_weights(x, edges, released_counts, mechanism, solver, seed):
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


@timed
def train_hypothesis(source_path, weights_path, labels_path, out_path, network, training, init_key, device, threads):
    """h_t: the network trained on the source with the thresholded estimated labels, weighted by
    the importance weights."""
    source = load_block(source_path, ("x",))
    seeds = source["seeds"]
    weights = load_block(weights_path, ("weights",), seeds)["weights"]
    y = labels.threshold(load_block(labels_path, ("relaxed",), seeds)["relaxed"])
    init_seeds = [seed_int(*init_key, int(s)) for s in seeds]
    model = train_networks(source["x"], y, weights, network, training, init_seeds, device, threads)
    save_npz(out_path, seeds=seeds, **model)


@timed
def train_llp(
    source_path, bins_path, release_path, out_path, network, training, solver, mechanism, init_key, device, threads
):
    """The learner's network trained from LLP's release: on the source, weighted by Pb. 1 from the
    released bin counts where the dataset has an IS step (uniformly otherwise), with the loss of
    label proportions on the bags the bins form."""
    from expril.method.training import Bags  # torch is imported only by the steps that train

    mechanism = mechanisms.from_param(mechanism)
    source = load_block(source_path, ("x",))
    x, seeds = source["x"], source["seeds"]
    edges = load_bins(bins_path, seeds)
    release = load_block(release_path, ("counts", "negatives", "n_bins"), seeds)
    weights = np.ones(x.shape[:2])
    bags, proportions = np.empty(x.shape, dtype=np.int64), np.empty(x.shape)
    for b in range(len(seeds)):
        counts = answers(release, b, "counts")
        if mechanism.importance_sampling:
            weights[b] = _importance_weights(x[b], edges[b], counts, mechanism, solver, seeds[b])
        bags[b], proportions[b] = llp.bags(edges[b], x[b], mechanism, counts, answers(release, b, "negatives"))
    init_seeds = [seed_int(*init_key, int(s)) for s in seeds]
    model = train_networks(x, Bags(bags, proportions), weights, network, training, init_seeds, device, threads)
    save_npz(out_path, seeds=seeds, **model)


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


@timed
def dpmerf_samples(maps_path, release_path, out_path, generator, init_key, rows, device, threads):
    """The learner's side of DP-MERF: a generator trained on the release (expril.rivals.generator,
    with `generator`'s settings) and `rows` records drawn from it."""
    from expril.rivals.generator import generate, train_generators  # torch is imported only by the steps that train

    maps = load_block(maps_path, ("mean", "std", "omega"))
    seeds = maps["seeds"]
    released = load_block(release_path, ("answers",), seeds)["answers"]
    feature_maps = {k: maps[k] for k in ("mean", "std", "omega")}
    keys = [[*init_key, int(s)] for s in seeds]
    generators, loss = train_generators(
        released,
        feature_maps,
        generator["hidden"],
        generator["noise_dim"],
        generator["steps"],
        generator["batch_size"],
        generator["lr"],
        [seed_int("generator", *k) for k in keys],
        device,
        threads,
        log.info,
        balanced=generator["class_weighting"] == "balanced",
    )
    x, y = generate(
        generators,
        feature_maps,
        released,
        rows,
        [seed_int("codes", *k) for k in keys],
        [rng("labels", *k) for k in keys],
    )
    log.info(
        "generators: final loss / |F|^2 median %.4f, max %.4f; positive rate of the samples %.3f",
        np.median(loss),
        loss.max(),
        y.mean(),
    )
    save_npz(out_path, x=x, y=y, seeds=seeds)


@timed
def train_dpmerf(samples_path, out_path, network, training, init_key, device, threads):
    """DP-MERF's final network, trained on the generator's records as h* is on the true records."""
    samples = load_block(samples_path, ("x", "y"))
    keys = [[*init_key, int(s)] for s in samples["seeds"]]
    model = train_networks(
        samples["x"],
        samples["y"],
        np.ones(samples["y"].shape),
        network,
        training,
        [seed_int("network", *k) for k in keys],
        device,
        threads,
    )
    save_npz(out_path, seeds=samples["seeds"], **model)


@timed
def train_aim(source_path, bins_path, release_path, out_path, network, training, init_key, device, threads):
    """The learner's network trained on AIM's (or MST's) records, their bins turned into values by
    drawing source records from the same bins (aim.debin)."""
    source = load_block(source_path, ("x",))
    seeds = source["seeds"]
    edges = load_bins(bins_path, seeds)
    release = load_block(release_path, ("ids", "y"), seeds)
    keys = [[*init_key, int(s)] for s in seeds]
    x = np.stack(
        [aim.debin(release["ids"][b], source["x"][b], edges[b], rng("debin", *keys[b])) for b in range(len(seeds))]
    )
    model = train_networks(
        x,
        release["y"],
        np.ones(release["y"].shape),
        network,
        training,
        [seed_int("network", *k) for k in keys],
        device,
        threads,
    )
    save_npz(out_path, seeds=seeds, **model)
