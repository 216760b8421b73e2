"""Three deliberately wrong plug-ins, each the mistake a researcher bringing a method makes, each
writing a valid ledger row: the gate's empirical audit (expril.plugins.gate.audited) must stop
them before any of their releases runs (tests/plugins/test_gate_audit.py).

- `nonoise`: the noisy bin counts and negatives of nbayes (tests/plugins/nbayes.py), the noise
  omitted (the exact counts released, `counts` in the ledger);
- `sensone`: the records' features, clipped to [-1, 1], summed over the records and divided by n',
  with the Gaussian noise of `dp-merf` sized for an L2 sensitivity of 1/n', where one record moves
  all d sums: sqrt(d)/n';
- `reuse`: nbayes's two queries answered from one noise stream (one query name for both), so that
  their difference is exact."""

import numpy as np

from expril.io import save_npz
from expril.method import binning
from expril.plugins import gate
from expril.plugins.base import Method, Step
from expril.plugins.registry import register
from expril.privacy import ledger, mechanisms, noise
from expril.privacy.gaussian import DPMERF
from expril.steps.blocks import load_bins, load_block
from expril.steps.curator import answer_block


def exact_counts(val, edges, name, mechanism):
    ids = [binning.bin_ids(e, x) for e, x in zip(edges, val["x"])]
    n_bins = [binning.bin_counts(e).sum() for e in edges]
    counts = [binning.bin_sums(i, n) for i, n in zip(ids, n_bins)]
    return np.stack(
        [np.concatenate([c, binning.bin_sums(i, n, y != 1)]) for c, i, n, y in zip(counts, ids, n_bins, val["y"])]
    )


def one_stream(val, edges, name, mechanism):
    seeds = val["seeds"]
    counts = answer_block(val, edges, name, ["reuse"] * len(seeds), mechanism, mechanism.release_counts)
    negatives = answer_block(
        val, edges, name, ["reuse"] * len(seeds), mechanism, mechanism.release_errors, val["y"] != 1
    )
    return np.stack([np.concatenate(pair) for pair in zip(counts, negatives)])


def clipped_sums(val, edges, name, mechanism):
    secret = noise.secret()
    exact = [np.clip(x, -1, 1).sum(axis=0) / mechanism.n_val for x in val["x"]]
    return np.stack(
        [
            mechanism.release(e, noise.stream(secret, name, int(s), "sums", [], mechanism.stream_scale))
            for e, s in zip(exact, val["seeds"])
        ]
    )


def release_with(answers):
    def release(val_path, bins_path, out_path, ledger_path, name, mechanism):
        mechanism = mechanisms.from_param(mechanism)
        val = load_block(val_path, ("x", "y"))
        released = answers(val, load_bins(bins_path, val["seeds"]), name, mechanism)
        ledger.record(ledger_path, None, name, val["seeds"], "answers", "release", mechanism)
        save_npz(out_path, answers=released, seeds=val["seeds"])

    return release, gate.on_public_bins(answers)


def learn(source_path, release_path, out_path):
    raise AssertionError("never reached: the audit stops the method first")


def wrong(name, answers, mechanism):
    release, audit = release_with(answers)

    class Wrong(Method):
        display = name
        steps = (
            Step(
                f"{name}_release",
                release,
                "release.npz",
                {"val_path": "target_val", "bins_path": "configured_bins"},
                release=True,
                axes=(),
                audit=audit,
            ),
            Step(f"{name}_learn", learn, "model.npz", {"source_path": "source", "release_path": f"{name}_release"}),
        )

        def mechanism(self, ctx):
            return mechanism(ctx)

    Wrong.name = name
    return register(Wrong())


def counts(ctx):
    return mechanisms.get("counts")(ctx.eps, ctx.delta, ctx.features, 1, ctx.spec["importance_sampling"])


NONOISE = wrong("nonoise", exact_counts, counts)
SENSONE = wrong("sensone", clipped_sums, lambda ctx: DPMERF(ctx.eps, ctx.delta, ctx.n_val))
REUSE = wrong("reuse", one_stream, counts)
