"""ExPriL with Pb. 1 by MMD (docs/synthetic.md) as a plug-in: ExPriL's chain, its steps
(expril.steps) unchanged, with the bin counts query replaced by the mean embedding of the target's
features in the learner's random features, and Pb. 1's weights matching the weighted source's
embedding to it.

Two releases: the embedding (`oracle_embedding`, Pb. 1's query with the bin counts query's share of
the run's budget, accounted as the chain's error queries are: mechanisms.embedding_for their
mechanism, `rff-embedding` beside Laplace's, `zcdp-embedding` beside `gaussian-counts`), then the T
error queries of ExPriL's iterations (`mmd_errors`, one job per iteration and variant) with the
mechanism the run's currency names for C-mmd and I-mmd (ExPriL's `mechanism` as configured, without
a currency). Two reported models from the one chain: C- and I-ExPriL's h_T (`C-mmd`, `I-mmd`), each
tuned on the `mmd` grid (model, bandwidth, and the error queries' bins' snr). Without an IS step the
chain would be plain ExPriL's: there the comparison reads ExPriL's runs (`bases`). The files keep
the layout of ExPriL's runs, eps<e><currency tag>-mmd<setting>/ beside eps<e><currency tag><setting>/
(eps<e>-mmd<setting>/ without a currency), and with it the keys of the queries' noise (a query's key
is its file's place).
"""

import os

import numpy as np

from expril.plugins import gate
from expril.plugins.base import Method, Step
from expril.plugins.registry import register
from expril.privacy import mechanisms
from expril.steps import curator, learner

# The compared methods of the chain, and the variant of ExPriL's iterations each reports.
VARIANTS = {"C-mmd": "C", "I-mmd": "I"}


def iterations(ctx):
    return ctx.config["iterations"]


def variant_dir(variant, t):
    """h_0 and h_1 are the same for C and I (one block of equations): stored once as 'both'."""
    return "both" if t <= 1 else variant


def before_model(ctx):
    """The setting's suffix on the axes a run's files before its first network depend on (all but
    the model): settings that differ in the model alone share them."""
    return ctx.suffix([a for a in ctx.grid["families"][ctx.family] if a != "model"])


def embedding(ctx):
    """Pb. 1's query: the bin counts query's share of the run's budget, accounted as the chain's
    error queries (MMD.mechanism) are, so that the run spends its (eps, delta) once."""
    chain = type(MMD.mechanism(ctx))
    return mechanisms.embedding_for(chain)(ctx.eps, ctx.delta, ctx.n_val, iterations(ctx))


def fields(ctx):
    return ctx.fields["variant"], int(ctx.fields["t"])


def file(ctx, rule, key=None, suffix=None, **values):
    return MMD.output(MMD.step(rule), ctx, key, suffix, **values)


def feature_map(ctx):
    """The learner's random feature map: D as configured, at the setting's bandwidth."""
    return ctx.feature_map(ctx.config["comparison"]["random_features"], ctx.setting["bandwidth"])


def reweighting(ctx, key):
    """Pb. 1's weights (`weights_path`) or the error queries' bins (`bins_out`)."""
    return file(ctx, "mmd_reweight", key)


def model(ctx, variant, t):
    if t == 0:  # ExPriL's h_0 = 1 (rule init_hypothesis)
        return f"{ctx.config['results']}/learner/{ctx.dataset}/{ctx.seeds}/h0.npz"
    return file(ctx, "mmd_train", None, None, variant=variant_dir(variant, t), t=t)


def answers(ctx, variant, t):
    suffix = before_model(ctx) if t == 0 else None
    return file(ctx, "mmd_errors", None, suffix, variant=variant_dir(variant, t), t=t)


def equation_blocks(variant, t):
    """Iterations whose hypotheses enter the label estimate at t: all (C-ExPriL) or the latest (I)."""
    return [t - 1] if variant == "I" else list(range(t))


def previous_ledger(ctx):
    """The ledger of the query before this one in the run's chain: the embedding's before t = 0."""
    variant, t = fields(ctx)
    previous = answers(ctx, variant, t - 1) if t > 0 else file(ctx, "oracle_embedding")
    return f"{os.path.splitext(previous)[0]}.ledger.csv"


def query(ctx):
    """An error query's name in its noise stream and ledger: its file's place in the block's
    folder, as ExPriL's (rules/oracle.smk)."""
    variant, t = fields(ctx)
    folder = os.path.dirname(os.path.dirname(file(ctx, "oracle_embedding", suffix="")))
    return os.path.relpath(os.path.splitext(answers(ctx, variant, t))[0], folder)


def audit_embedding(mechanism, x, y, keys):
    """The embedding release on the gate's records (expril.plugins.gate.audited), in a public
    feature map, each noise key naming the data set in the noise stream."""
    val, maps = gate.audit_block(x, y), [gate.audit_feature_map(x.shape[1])]
    return np.stack([curator.embedding_answers(val, maps, f"audit{k}", mechanism)[0] for k in keys])


def audit_errors(mechanism, x, y, keys):
    """A run's T error queries on the gate's records, on public bins, each of a public hypothesis
    (the sign of feature t), answered as curator.oracle_errors answers them."""
    val, edges = gate.audit_block(x, y), [gate.audit_bins(x.shape[1])]
    errors = [(x[:, t % x.shape[1]] > 0) != y for t in range(mechanism.iterations)]

    def answers(key):
        release = mechanism.release_errors
        return [
            curator.answer_block(val, edges, key, [f"t{t}"], mechanism, release, [e])[0] for t, e in enumerate(errors)
        ]

    return np.stack([np.concatenate(answers(f"audit{k}")) for k in keys])


class ExPriLByMMD(Method):
    name = "mmd"
    display = "ExPriL (MMD)"
    bases = {"C-mmd": "C", "I-mmd": "I"}
    repeats_note = "ExPriL by MMD, which repeats plain ExPriL without an IS step"
    own_runs_note = "ExPriL by MMD: of those with an IS step"
    noise_knobs = frozenset({"snr"})  # its error queries' bins' signal-to-noise target
    steps = (
        Step(
            "oracle_embedding",
            curator.oracle_embedding,
            "embedding.npz",
            {"val_path": "target_val", "maps_path": feature_map},
            release=True,
            axes=("bandwidth",),
            mechanism=lambda ctx: embedding(ctx),
            queries=lambda ctx: 1,
            audit=audit_embedding,
        ),
        Step(
            "mmd_reweight",
            learner.reweight_source,
            {"weights_path": "weights.npz", "bins_out": "error_bins.npz"},
            {"source_path": "source", "embedding_path": "oracle_embedding", "maps_path": feature_map},
            axes=("bandwidth", "snr"),  # the feature map's and the bins': shared by the models
            params=lambda ctx: {"q": ctx.bins_per_feature(ctx.snr(), iterations(ctx), type(MMD.mechanism(ctx)))},
        ),
        Step(
            "mmd_errors",
            curator.oracle_errors,
            "{variant}/errors_t{t}.npz",
            {
                "val_path": "target_val",
                "bins_path": lambda ctx: reweighting(ctx, "bins_out"),
                "model_path": lambda ctx: model(ctx, *fields(ctx)),
                "previous_ledger": previous_ledger,
            },
            release=True,
            params=lambda ctx: {"query": query(ctx)},
            queries=iterations,
            audit=audit_errors,
        ),
        Step(
            "mmd_labels",
            learner.estimate_labels,
            "{variant}/labels_t{t}.npz",
            {
                "source_path": "source",
                "weights_path": lambda ctx: reweighting(ctx, "weights_path"),
                "bins_path": lambda ctx: reweighting(ctx, "bins_out"),
                "model_paths": lambda ctx: [
                    model(ctx, ctx.fields["variant"], b) for b in equation_blocks(*fields(ctx))
                ],
                "answer_paths": lambda ctx: [
                    answers(ctx, ctx.fields["variant"], b) for b in equation_blocks(*fields(ctx))
                ],
            },
            params=lambda ctx: {"solver": ctx.config["labels"], "n_val": ctx.n_val},
        ),
        Step(
            "mmd_train",
            learner.train_hypotheses,
            "{variant}/model_t{t}.npz",
            {
                "source_path": "source",
                "weights_path": lambda ctx: reweighting(ctx, "weights_path"),
                "labels_path": lambda ctx: file(
                    ctx, "mmd_labels", None, before_model(ctx) if fields(ctx)[1] == 1 else None
                ),
            },
            params=lambda ctx: {"init_key": ["learner", ctx.dataset, ctx.eps_text, *fields(ctx)]},
            trains=True,
            per_run=("weights_path", "labels_path", "out_path", "init_key"),
        ),
    )

    @property
    def reports(self):
        return {"C-mmd": "C-ExPriL (MMD)", "I-mmd": "I-ExPriL (MMD)"}

    def field_values(self, step, ctx):
        """A run's h_t, t = 1..T: h_1 shared by C and I, then each variant's."""
        if step.rule != "mmd_train":
            return super().field_values(step, ctx)
        t_max = iterations(ctx)
        return [
            {"variant": v, "t": str(t)} for t in range(1, t_max + 1) for v in sorted({variant_dir(v, t) for v in "CI"})
        ]

    def folder(self, step, results, dataset, seeds, eps_folder, suffix):
        """Beside ExPriL's run of the same eps and currency: eps1@approx-mmd~snr=16/."""
        part = "oracle" if step.release else "learner"
        return f"{results}/{part}/{dataset}/{seeds}/eps{eps_folder}-mmd{suffix}"

    def model(self, ctx, report):
        """C's or I's h_T."""
        return model(ctx, VARIANTS[report], iterations(ctx))

    def ledger(self, ctx, report=None):
        """The ledger of C's or I's last error query, which holds the run's embedding and queries."""
        t = iterations(ctx) - 1
        return f"{os.path.splitext(answers(ctx, VARIANTS[report], t))[0]}.ledger.csv"

    def repeats_on(self, spec):
        """Without an IS step there is no Pb. 1: the run is plain ExPriL's."""
        return not spec["importance_sampling"]

    def spends(self, mechanism):
        """The error queries' mechanism and the embedding's that goes with it."""
        return {mechanism, mechanisms.embedding_for(mechanisms.get(mechanism)).name}

    def mechanism(self, ctx):
        """ExPriL's plan for the error queries (Eq. 14: lambda = d (T+1) / eps), with the bin counts
        query's share of the budget left to the embedding: the mechanism the run's currency names
        for C-mmd and I-mmd (one chain, one mechanism), ExPriL's `mechanism` without a currency."""
        name = ctx.mechanism_for(list(self.reports)) if ctx.currency else ctx.config["mechanism"]
        return mechanisms.get(name)(ctx.eps, ctx.delta, ctx.features, iterations(ctx), ctx.spec["importance_sampling"])


MMD = register(ExPriLByMMD())
