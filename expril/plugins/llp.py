"""Learning from label proportions (LLP; expril.rivals.llp, docs/comparison.md) as a plug-in: the
learner's bins, the curator's one release (the noisy counts and negatives of every bin, the bin
counts query and the error query on h_0 = 1 of `counts` planned for one iteration, lambda = 2d/eps),
and the learner's network trained on the bags. The bins depend on the setting's snr alone, the
release on its snr and its budget split."""

import numpy as np

from expril.io import save_npz
from expril.plugins import gate
from expril.plugins.base import Method, Step
from expril.plugins.registry import register
from expril.privacy import ledger, mechanisms
from expril.rivals import llp
from expril.seeds import seed_int
from expril.steps.blocks import answers, load_bins, load_block, pad, save_runs, timed, train_networks
from expril.steps.curator import answer_block
from expril.steps.learner import bin_matched_weights, make_bins


@timed
def oracle_proportions(val_path, bins_path, out_path, ledger_path, name, mechanism):
    """LLP's one release (expril.rivals.llp): the noisy counts and negatives of every bin, the bin counts
    query and the error query on h_0 = 1, accounted as the run's two queries."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    seeds = val["seeds"]
    counts, negatives = proportions(val, load_bins(bins_path, seeds), name, mechanism)
    book = None
    for query in llp.QUERIES:
        book = ledger.record(ledger_path, book, name, seeds, query, "oracle_proportions", mechanism)
    (counts, n_bins), (negatives, _) = pad(counts), pad(negatives)
    save_npz(out_path, counts=counts, negatives=negatives, n_bins=n_bins, seeds=seeds)


def proportions(val, edges, name, mechanism):
    """The release's two answers for every seed of the block: the noisy counts and negatives."""
    seeds = val["seeds"]
    counts = answer_block(val, edges, name, [llp.QUERIES[0]] * len(seeds), mechanism, mechanism.release_counts)
    negatives = answer_block(
        val, edges, name, [llp.QUERIES[1]] * len(seeds), mechanism, mechanism.release_errors, val["y"] != 1
    )
    return counts, negatives


@timed
def train_llp(runs, source_path, network, training, solver, device, threads):
    """The learner's networks trained from LLP's release, each run's (`runs`: its bins, release,
    plan, key and file; one run, or the calibration's runs of one network shape as one block): on
    the source, weighted by Pb. 1 from the released bin counts where the dataset has an IS step
    (uniformly otherwise), with the loss of label proportions on the bags the bins form."""
    from expril.method.training import Bags  # torch is imported only by the steps that train

    source = load_block(source_path, ("x",))
    x, seeds = source["x"], source["seeds"]
    weights = np.ones((len(runs),) + x.shape[:2])
    bags, proportions = np.empty((len(runs),) + x.shape, dtype=np.int64), np.empty((len(runs),) + x.shape)
    for r, run in enumerate(runs):
        mechanism = mechanisms.from_param(run["mechanism"])
        edges = load_bins(run["bins_path"], seeds)
        release = load_block(run["release_path"], ("counts", "negatives", "n_bins"), seeds)
        for b in range(len(seeds)):
            counts = answers(release, b, "counts")
            if mechanism.importance_sampling:
                weights[r, b] = bin_matched_weights(x[b], edges[b], counts, mechanism, solver, seeds[b])
            negatives = answers(release, b, "negatives")
            bags[r, b], proportions[r, b] = llp.bags(edges[b], x[b], mechanism, counts, negatives)
    init_seeds = [seed_int(*run["init_key"], int(s)) for run in runs for s in seeds]
    flat = (len(runs) * len(seeds),)
    model = train_networks(
        np.concatenate([x] * len(runs)),
        Bags(bags.reshape(flat + x.shape[1:]), proportions.reshape(flat + x.shape[1:])),
        weights.reshape(flat + x.shape[1:2]),
        network,
        training,
        init_seeds,
        device,
        threads,
    )
    save_runs([run["out_path"] for run in runs], seeds, model)


class LLP(Method):
    name = "llp"
    display = "LLP"
    # Cheap, its noise keyed by the oracle's secret, its networks bitwise reproducible on a host of
    # the same kind and other draws of the same training on another (expril.reports.published).
    checks_published = True
    noise_knobs = frozenset({"snr", "split"})  # its bins' signal-to-noise target, its budget's split
    steps = (
        Step(
            "llp_bins",
            make_bins,
            "bins.npz",
            {"source_path": "source"},
            axes=("snr",),
            params=lambda ctx: {"q": ctx.bins_per_feature(ctx.snr(), iterations=1)},
        ),
        Step(
            "oracle_proportions",
            oracle_proportions,
            "proportions.npz",
            {"val_path": "target_val", "bins_path": "llp_bins"},
            release=True,
            axes=("snr", "split"),
            audit=gate.on_public_bins(proportions),
        ),
        Step(
            "train_llp",
            train_llp,
            "model.npz",
            {"source_path": "source", "bins_path": "llp_bins", "release_path": "oracle_proportions"},
            trains=True,
            per_run=("bins_path", "release_path", "out_path", "mechanism", "init_key"),
        ),
    )

    def mechanism(self, ctx):
        """The currency's counts mechanism (`counts`, `gaussian-counts`) planned for one iteration:
        its bin counts query and its error query on h_0 = 1 spend the run's budget (`counts`:
        lambda = 2d/eps as configured; the setting's split shares it otherwise, its first query
        being the bin counts query)."""
        split = ctx.knob("split", None)
        shares = {"counts_queries": llp.QUERIES[:1]} | ({} if split is None else {"split": split})
        return mechanisms.get(ctx.mechanism)(
            ctx.eps, ctx.delta, ctx.features, 1, ctx.spec["importance_sampling"], **shares
        )


register(LLP())
