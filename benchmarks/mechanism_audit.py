"""Audit every registered mechanism of the add/remove relation empirically, through the plug-in
release that applies it, as the gate does (expril.plugins.gate.audited: a black-box release, a
canary, expril.privacy.audit.audit_release), at a few eps of the study and more draws than the
gate's, and write the last section of docs/privacy_audit.md.

Run from the repository root: .venv/bin/python -m benchmarks.mechanism_audit  (about 20 minutes on 2
cores); benchmarks.dp_audit keeps this section when it rewrites the rest. Each audit is appended to
ROWS as it ends, and a run resumes from the audits there (delete it to start afresh).
"""

import dataclasses
import functools
import math
import time
from pathlib import Path

import pandas as pd

from expril.io import save_text
from expril.plugins import gate, registry
from expril.plugins.context import Context
from expril.privacy.base import MECHANISMS, RECORD
from expril.workflow import grids
from expril.workflow.config import planned_config
from expril.workflow.currency import Currency

OUTPUT = Path("docs/privacy_audit.md")
MARKER = "## Every registered mechanism"
EPSILONS = ("0.3", "1", "3")
DELTA = 1e-5  # the study's, for the mechanisms that need one
DRAWS = 2  # times each release's gate draws (Step.audit_draws)
ROWS = Path("results/mechanism_audit.csv")
# ROWS's columns: gate.audited's row, where it was audited, and whether it was skipped (LIMIT).
COLUMNS = [
    *["method", "release", "mechanism", "claimed_eps", "claimed_delta", "canary", "n_samples", "eps_lower"],
    *["neighbours", "event", "p", "q", "p_lower", "q_upper", "seconds", "plan", "dataset", "features", "eps"],
    "skipped",
]
# An audit whose releases would take longer than this (timed on one release) is skipped, and said so.
LIMIT = 600
# A release the gate draws fewer of than this (a training or a fit each) is audited at eps 1 only.
DEAR = 1000

INTRO = f"""{MARKER}

Produced by `.venv/bin/python -m benchmarks.mechanism_audit` ({{seconds:.0f}} s of audits on this
project's shared 2-core machine, under a load of about 12 other engineers' processes: an upper
bound); do not edit by hand.

Every registered mechanism of the add/remove-one-record relation, audited as the gate audits a
plug-in's releases ([extending.md](extending.md#the-empirical-audit)): through the release of each
plug-in method that applies it (its `Step.audit`, the code its release step runs), on the gate's
records (100 standard normal records of the dataset's d features and four corner canaries), D' = D
less the canary that moves the release most, {DRAWS} times the gate's draws per data set, Fisher's
statistic and an interval of it selected on half of the draws and bounded on the other half
(Clopper-Pearson, 95 %). The claim is what the plan says a run's queries of that release spend, on
the dataset with the most features where the method runs its own chain, as configured; `gaussian-counts`,
`counts` and `paper` answer the error queries of a chain beside the embedding of ExPriL by MMD
(`rff-embedding` beside the Laplace ones, `zcdp-embedding` beside `gaussian-counts`). A bound
below the claim is consistent with it, no more (extending.md says what this audit cannot catch).
Each mechanism is audited at eps {", ".join(EPSILONS)} where a release is cheap, at eps 1 only where
each draw trains a network or fits a model ({{dear}}; AIM and MST fit on the first 4 features,
`aim.AUDIT_FEATURES`). The seconds are each audit's own. `dirichlet` protects another relation (one
label changed) and is audited under it above, as are the oracle's `paper` and `counts` releases.

"""


def releases(config, method, mechanism, eps):
    """The method's releases under a currency that names `mechanism` for it, at `eps` and delta 0
    (or the study's delta, where the mechanism or a release beside it needs one): gate.claims, with
    the gate's draws times DRAWS; None where the method cannot apply it."""
    cls = MECHANISMS[mechanism]
    if cls.neighbours != RECORD:
        return None
    dataset = gate.audit_dataset(method, config)
    grid = grids.load(config["comparison"]["grid"])
    for delta in [DELTA] if cls.needs_delta else [0.0, DELTA]:
        currency = Currency("audit", delta, RECORD, dict.fromkeys(method.reports, mechanism))
        ctx = Context(config, grid, method.name, dataset, "0-0", eps, "", functools.partial(str), currency)
        try:
            claims = gate.claims(method, ctx)
        except (gate.Refused, ValueError, TypeError):
            continue
        scaled = [(dataclasses.replace(r, audit_draws=DRAWS * r.audit_draws), m, c) for r, m, c in claims]
        return dataset, ctx.features, scaled
    return None


def audits(config):
    """Every audit, those ROWS holds read back, the others run and appended to it."""
    done = pd.read_csv(ROWS, dtype={"eps": str}) if ROWS.exists() else pd.DataFrame(columns=["method", "plan", "eps"])
    for method in registry.methods().values():
        for mechanism in MECHANISMS:
            for eps in EPSILONS:
                found = releases(config, method, mechanism, eps)
                if found is None or (eps != "1" and min(r.audit_draws for r, _, _ in found[2]) < DEAR):
                    continue
                if ((done.method == method.name) & (done.plan == mechanism) & (done.eps == eps)).any():
                    continue
                dataset, features, plans = found
                where = {"method": method.name, "plan": mechanism, "dataset": dataset, "features": features, "eps": eps}
                needed = max(_cost(plans, features))
                if needed > LIMIT:
                    rows = pd.DataFrame([where | {"mechanism": mechanism, "seconds": needed, "skipped": True}])
                else:
                    audited = gate.audited(method, plans, features)
                    rows = pd.DataFrame([row | where | {"skipped": False} for row in audited])
                rows = rows.reindex(columns=COLUMNS)
                rows.to_csv(ROWS, mode="a", header=not ROWS.exists(), index=False)
                print(rows[["mechanism", "eps", "eps_lower", "seconds", "skipped"]].to_string(header=False), flush=True)
                done = pd.concat([done, rows])
    return done.reset_index(drop=True)


def _cost(plans, features):
    """Each release's audit's time, estimated from one release: its draws of D and D', the pilot
    (a quarter of them) and the canaries' (audit.canary: 2 keys each). Where that says too long,
    from a call of 16 keys too, as a time per call (the imports, a block trainer's steps) and one
    per key: DP-SGD trains its keys' networks as one block, in 3 calls and one per canary."""
    x, y, candidates = gate.audit_records(features)
    for release, mechanism, _ in plans:
        draws = 2 * release.audit_draws + max(2, release.audit_draws // 4) + 2 * len(candidates)
        one = _timed(release, mechanism, x, y, [0])
        if one * draws > LIMIT:
            per_key = max(0.0, (_timed(release, mechanism, x, y, list(range(16))) - one) / 15)
            one = min(one * draws, (3 + len(candidates)) * (one - per_key) + per_key * draws) / draws
        yield one * draws


def _timed(release, mechanism, x, y, keys):
    start = time.perf_counter()
    release.audit(mechanism, x, y, keys)
    return time.perf_counter() - start


def markdown(table):
    out = table.assign(
        claim=[f"({e:.3f}, {d:g})" for e, d in zip(table.claimed_eps, table.claimed_delta)],
        bound=[f"{b:.3f}" if math.isfinite(b) else "-inf" for b in table.eps_lower],
        event=[f"`{e}`" for e in table.event],
        where=[f"{d} (d = {f})" for d, f in zip(table.dataset, table.features)],
        seconds=[f"{s:.0f}" for s in table.seconds],
        canary=table.canary.astype(int),
        n_samples=table.n_samples.astype(int),
    ).sort_values(["mechanism", "release", "claimed_eps"])
    columns = {
        "mechanism": "mechanism",
        "release": "release (plug-in step)",
        "where": "dataset",
        "claim": "claimed (eps, delta)",
        "bound": "eps lower (95 %)",
        "event": "event S (t: Fisher's statistic)",
        "canary": "canary",
        "n_samples": "draws per data set",
        "seconds": "seconds",
    }
    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in out[list(columns)].itertuples(index=False)]
    return "\n".join(lines) + "\n"


def summary(table):
    above = table[table.eps_lower > table.claimed_eps * gate.SLACK]
    audited = sorted(set(table.mechanism))
    return (
        f"{len(audited)} mechanisms audited ({', '.join(audited)}), {len(table)} releases: "
        f"{len(above)} bound{'s' if len(above) != 1 else ''} above the claim"
        + (f" ({', '.join(sorted(set(above.mechanism)))})" if len(above) else "")
        + f"; the largest bound is {table.eps_lower.max():.3f}, the largest ratio of bound to claim "
        f"{(table.eps_lower / table.claimed_eps).max():.2f}.\n"
    )


def not_audited(skipped):
    if skipped.empty:
        return ""
    each = [f"`{m}` at eps {e} (about {s / 60:.0f} min)" for m, e, s in zip(skipped.plan, skipped.eps, skipped.seconds)]
    return (
        f"Not audited, their audit estimated from one release above {LIMIT / 60:.0f} min on this machine: "
        f"{', '.join(each)}; the gate still runs their releases' small audit "
        "([extending.md](extending.md#the-empirical-audit)).\n"
    )


def main():
    import torch

    torch.set_num_threads(1)  # as a job of one thread; two on a busy 2-core machine are many times slower
    table = audits(planned_config())
    skipped = table[table.skipped.astype(bool)]
    audited = table[~table.skipped.astype(bool)]
    seconds = audited.seconds.sum()
    dear = sorted({m for m, n in zip(audited.mechanism, audited.n_samples) if n < DEAR})
    text = OUTPUT.read_text()
    kept = text[: text.index(MARKER)] if MARKER in text else text.rstrip("\n") + "\n\n"
    section = INTRO.format(seconds=seconds, dear=", ".join(dear)) + summary(audited) + not_audited(skipped)
    section += "\n" + markdown(audited)
    save_text(OUTPUT, kept + section)
    print(f"wrote {OUTPUT} in {seconds:.0f} s")


if __name__ == "__main__":
    main()
