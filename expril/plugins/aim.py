"""Marginal-based synthetic data, AIM or MST from OpenDP (expril.rivals.aim, docs/synthetic.md), as a
plug-in: the curator's one release, records drawn from a graphical model fitted on its validation
split discretised on ExPriL's bins as configured (the learner's first query's), in pure DP or in
zCDP as the currency says; the learner's network trained on them. The release depends on the
setting's AIM knobs (`oneway`, the one-way marginals' share of the budget, and `rounds`, AIM's
rounds per column: config/tuning.yaml), the learner's network on its model too."""

import numpy as np

from expril.io import save_npz
from expril.method import binning
from expril.plugins import gate
from expril.plugins.base import Method, Step
from expril.plugins.registry import register
from expril.privacy import ledger, mechanisms, noise, synthesis  # noqa: F401 (synthesis registers aim, mst)
from expril.rivals import aim
from expril.seeds import rng
from expril.steps.blocks import load_bins, load_block, log, save_runs, timed, train_on_records


@timed
def aim_release(val_path, bins_path, out_path, ledger_path, history_path, name, mechanism, rows, threads, knobs=None):
    """Marginal-based synthetic data (expril.rivals.aim): the curator's validation split
    discretised on the learner's bins, a graphical model fitted by AIM or MST (the mechanism's
    algorithm) with the run's budget in the mechanism's measure (pure DP's eps or zCDP's rho),
    and `rows` labelled records (bin indices) drawn from it and released. OpenDP's noise is not
    seeded: every release is also appended to the split's history (`history_path`), reruns
    included. `knobs`: the setting's AIM knobs (aim.fit), none as configured."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    seeds = val["seeds"]
    edges = load_bins(bins_path, seeds)
    secret, ids, y = noise.secret(), [], []
    measure, budget = mechanism.budget
    for b, seed in enumerate(seeds):
        generator = rng("synthesis", secret, name, int(seed), repr(mechanism.eps))
        records, spent = synthetic(val["x"][b], val["y"][b], edges[b], mechanism, rows, generator, threads, knobs)
        if not spent <= budget:
            raise ledger.BudgetError(
                f"{name} seed {seed}: OpenDP accounts {measure} {spent} for {mechanism.name}, above the run's {budget}"
            )
        log.info(
            "seed %d: %s model, %s %.6g accounted; positive rate of the records %.3f",
            seed,
            mechanism.name,
            measure,
            spent,
            records[1].mean(),
        )
        ids.append(records[0])
        y.append(records[1])
    ledger.record(ledger_path, None, name, seeds, mechanism.name, "aim_release", mechanism, history_path)
    save_npz(out_path, ids=np.stack(ids), y=np.stack(y), seeds=seeds)


def synthetic(x, y, edges, mechanism, rows, generator, threads=1, knobs=None):
    """One seed's release: a model fitted by the mechanism's algorithm on (x, y) discretised on
    `edges`, within its budget, and `rows` records drawn from it by `generator`; (the records,
    what OpenDP accounts for the fit)."""
    measure, budget = mechanism.budget
    model, spent = aim.fit(x, y, edges, budget, mechanism.algorithm, threads, measure, knobs)
    return aim.synthesize(model, binning.bin_counts(edges).tolist() + [2], rows, generator), spent


def audit_synthesis(mechanism, x, y, keys):
    """The release on the gate's records (expril.plugins.gate.audited), on public bins, as each bin's
    count of synthetic records and of their positives (OpenDP's noise is its own: the key seeds
    the drawing of the records alone), on its first AUDIT_FEATURES features."""
    x = x[:, :AUDIT_FEATURES]
    edges = gate.audit_bins(x.shape[1])
    n_bins, offsets = binning.bin_counts(edges).sum(), np.cumsum([0, *binning.bin_counts(edges)[:-1]])
    out = []
    for k in keys:
        (ids, labels), _ = synthetic(x, y, edges, mechanism, len(x), rng("audit", int(k)))
        out.append(np.concatenate([binning.bin_sums(ids + offsets, n_bins, v) for v in (None, labels)]))
    return np.stack(out)


@timed
def train_aim(runs, source_path, network, training, device, threads):
    """The learner's networks trained on AIM's (or MST's) records, each run's (`runs`: its bins,
    release, key and file; one run, or the calibration's runs of one network shape as one block),
    their bins turned into values by drawing source records from the same bins (aim.debin)."""
    source = load_block(source_path, ("x",))
    seeds = source["seeds"]
    x, y, keys = [], [], []
    for run in runs:
        edges = load_bins(run["bins_path"], seeds)
        release = load_block(run["release_path"], ("ids", "y"), seeds)
        own = [[*run["init_key"], int(s)] for s in seeds]
        x += [aim.debin(release["ids"][b], source["x"][b], edges[b], rng("debin", *own[b])) for b in range(len(seeds))]
        y.append(release["y"])
        keys += own
    model = train_on_records(np.stack(x), np.concatenate(y), keys, network, training, device, threads)
    save_runs([run["out_path"] for run in runs], seeds, model)


# AIM's own knobs that a setting may set (config/tuning.yaml: the one-way marginals' share of eps,
# the rounds per column); OpenDP's defaults as configured.
KNOBS = ("oneway", "rounds")
# Each audit release fits a model (2 to 4 s on 4 features): far fewer than the gate's default, too
# few to refute any claim (docs/extending.md, "The empirical audit"); docs/privacy_audit.md audits
# the mechanism with more. On the first AUDIT_FEATURES features only: the fit's time grows with d,
# its privacy does not (the mechanism's budget is the run's, whatever the columns).
AUDIT_DRAWS, AUDIT_FEATURES = 6, 4


def aim_knobs(ctx):
    """The knobs the job's setting sets, {} as configured."""
    return {k: v for k in KNOBS if (v := ctx.knob(k, None)) is not None}


class AIM(Method):
    name = "aim"
    display = "AIM"
    noise_knobs = frozenset(KNOBS)  # how its budget is shared among its measurements
    steps = (
        Step(
            "aim_release",
            aim_release,
            "records.npz",
            {"val_path": "target_val", "bins_path": "configured_bins"},
            release=True,
            axes=KNOBS,
            params=lambda ctx: {"knobs": knobs} if (knobs := aim_knobs(ctx)) else {},
            audit=audit_synthesis,
            audit_draws=AUDIT_DRAWS,
        ),
        Step(
            "train_aim",
            train_aim,
            "model.npz",
            {"source_path": "source", "bins_path": "configured_bins", "release_path": "aim_release"},
            trains=True,
            per_run=("bins_path", "release_path", "out_path", "init_key"),
        ),
    )

    def mechanism(self, ctx):
        """One release with the run's budget, in the currency's accounting: pure DP (`aim`, `mst`:
        its delta unspent) or zCDP (`aim-zcdp`, `mst-zcdp`: the rho of its (eps, delta))."""
        return mechanisms.get(ctx.mechanism)(ctx.eps, ctx.delta)


register(AIM())
