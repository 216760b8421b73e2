"""The gate a plug-in method passes (docs/extending.md, "What the gate checks"): the platform checks
a method's privacy instead of trusting the eps it says it spends. Before any job runs, the
workflow refuses a method whose releases write no ledger row, whose planned spend (each release's,
and all of a run's releases composed) exceeds the run's eps or delta, whose learner steps read the
curator's data, or that has no tuning entry; once a release has run, the job fails unless its
ledger holds every seed's row within the run's budget. Each release is also audited empirically, once
per version of the method's code, before any of the method's releases runs (`audited`): a release
whose privacy loss is provably above what it plans to spend is refused.
The taint audit (expril.privacy.taint) checks the same plan from Snakemake's jobs."""

import inspect
import math
import os
import re
import time

import numpy as np

from expril.plugins.base import CURATOR_INPUTS, FROM_JOB, PROVIDED, SHARED
from expril.privacy.base import MECHANISMS, Mechanism

NAME = re.compile(r"[a-z][a-z0-9]*")
# The empirical audit (`audited`): at one eps of the study, on AUDIT_RECORDS ordinary records and
# four canaries, a bound that a release within its claim exceeds with probability 5 % at most.
AUDIT_EPS = "1"
AUDIT_RECORDS = 100
AUDIT_CONFIDENCE = 0.95
# Room for the accountants' rounding, as the ledger's own check allows (expril.privacy.ledger).
SLACK = 1 + 1e-9


class Refused(ValueError):
    """A plug-in method the workflow will not run."""


def refuse(method, why):
    raise Refused(f"plug-in method {method.name!r} ({type(method).__module__}) refused: {why} (docs/extending.md)")


def declared(method, grid):
    """Refuse `method` for what it declares: its name, its steps' wiring, its tuning entry."""
    if not isinstance(getattr(method, "name", None), str) or not NAME.fullmatch(method.name):
        refuse(method, "its name must be lower-case letters and digits, starting with a letter")
    if not any(s.release for s in method.steps):
        refuse(method, "it has no release step: the curator's data reach a method through releases only")
    known = set(SHARED)
    for step in method.steps:
        arguments = step.arguments()
        if step.release and not {"mechanism", "ledger_path"} <= set(arguments):
            refuse(
                method,
                f"its release {step.rule} writes no ledger row: its function must take `mechanism` and "
                "`ledger_path` and record the release with expril.privacy.ledger.record",
            )
        for source in step.inputs.values():
            if not step.release and source in CURATOR_INPUTS:
                refuse(method, f"its learner step {step.rule} reads {source}, the curator's data: only its release may")
            if isinstance(source, str) and source not in known:
                refuse(method, f"step {step.rule} reads {source!r}, neither a shared file nor an earlier step")
        if step.release and step.audit is None:
            refuse(
                method,
                f"its release {step.rule} gives no audit release: its Step must name `audit`, the release "
                "on given records once per noise key, which the gate audits empirically",
            )
        if step.per_run and (step.release or "runs" not in inspect.signature(step.run).parameters):
            refuse(
                method,
                f"step {step.rule} names per-run arguments: only a learner step may, whose function takes `runs`",
            )
        given = {*step.inputs, *FROM_JOB, *PROVIDED, *step.files, "mechanism"}
        missing = [a for a in _required(step) if a not in given]
        if missing and step.params is None:
            refuse(method, f"step {step.rule}'s function needs {', '.join(missing)}, which nothing gives it")
        known.add(step.rule)
    if method.name not in grid["families"]:
        refuse(
            method,
            f"it has no tuning entry: add `{method.name}:` under `families:` in the tuning grid "
            "(config/tuning.yaml), or give its Method a `grid` (`model: [configured]` alone if it has nothing to tune)",
        )


def _required(step):
    named = inspect.signature(step.run).parameters.items()
    return [n for n, p in named if p.default is inspect.Parameter.empty and n != "runs"] + list(step.per_run)


def planned(method, ctx, step=None):
    """The plan of `step` (a release's own mechanism, else the method's) for the job `ctx`, once
    the run's whole plan passes: every release's mechanism registered, one the job's currency lets
    the method spend (Method.spends of the mechanism it names for the method's reports) under the
    currency's neighbour relation, and neither any of them nor all a run asks of them composed
    (each release's planned queries at their own costs, Mechanism.planned_costs, the last `queries`
    of them where the release says how many a run asks; composed by the last release's
    accountant, as its ledger composes them) above the run's (eps, delta)."""
    plans = [(release, _mechanism(method, release, ctx)) for release in method.releases]
    several = len(plans) > 1
    for release, mechanism in plans:
        which = f"its release {release.rule}" if several else "its release"
        if not isinstance(mechanism, Mechanism) or MECHANISMS.get(mechanism.name) is not type(mechanism):
            refuse(method, f"{which} applies {mechanism!r}, not a registered mechanism (expril.privacy.mechanisms)")
        if ctx.currency is None:
            continue
        named = ctx.mechanism_for(list(method.reports))
        if mechanism.name not in method.spends(named):
            refuse(
                method,
                f"{which} applies {mechanism.name!r} where currency {ctx.currency.name!r} names "
                f"{named!r} for it (config: comparison: currencies)",
            )
        if mechanism.neighbours != ctx.currency.relation:
            refuse(
                method,
                f"{which} protects neighbours that {mechanism.neighbours}, not currency "
                f"{ctx.currency.name!r}'s ({ctx.currency.relation})",
            )
    costs = [cost for release, mechanism in plans for cost in _costs(release, mechanism, ctx)]
    composed = plans[-1][1].compose(costs)
    budget = (ctx.eps, ctx.delta)
    spends = [(f"its release {r.rule} plans", (m.eps, m.delta)) for r, m in plans]
    spends.append(
        ("its releases' queries in a run compose", composed) if len(plans) > 1 else ("its release plans", composed)
    )
    for what, spent in spends:
        if not _within(spent, budget):
            refuse(
                method,
                f"on {ctx.dataset} at eps {ctx.eps_text} {what} to spend (eps, delta) = "
                f"({spent[0]:.6g}, {spent[1]:.3g}), above the run's ({budget[0]:.6g}, {budget[1]:.3g})",
            )
    return _mechanism(method, step, ctx) if step is not None and step.release else method.mechanism(ctx)


def _mechanism(method, step, ctx):
    return method.mechanism(ctx) if step.mechanism is None else step.mechanism(ctx)


def _costs(release, mechanism, ctx):
    """The costs of the queries a run asks of `release`: all its mechanism plans, or the last
    `queries(ctx)` of them (ExPriL by MMD's error queries, without the bin counts query that its
    embedding release replaces)."""
    costs = mechanism.planned_costs()
    if release.queries is None:
        return costs
    asked = release.queries(ctx)
    # more than it plans: the error queries' cost for each one beyond the plan
    return costs[max(0, len(costs) - asked) :] + [mechanism.cost()] * max(0, asked - len(costs))


def _within(spent, budget):
    return all(s <= b * SLACK or math.isinf(b) for s, b in zip(spent, budget))


def tainted_read(method, step, path, results):
    """Refuse a learner step that is given a file under the results' curator/ (a callable input: a
    path or a list of paths)."""
    for one in [path] if isinstance(path, str | os.PathLike) else path:
        if not step.release and str(one).startswith(f"{results}/curator/"):
            refuse(method, f"its learner step {step.rule} reads {one}, the curator's data: only its releases may")


def recorded(method, ledger_path, seeds, eps, delta):
    """Fail the release's job unless its ledger has a row for every seed of the block, each run's
    total within the run's (eps, delta)."""
    import pandas as pd  # here: a plug-in's learner steps never read a ledger

    try:
        book = pd.read_csv(ledger_path)
    except (FileNotFoundError, pd.errors.EmptyDataError):
        book = pd.DataFrame(columns=["seed", "eps_total", "delta_total"])
    missing = sorted(set(seeds) - set(book.seed))
    if missing:
        refuse(method, f"its release wrote no ledger row for seeds {missing} in {ledger_path}")
    over = book[[not _within(spent, (eps, delta)) for spent in zip(book.eps_total, book.delta_total)]]
    if len(over):
        row = over.iloc[0]
        refuse(
            method,
            f"its ledger {ledger_path} records (eps, delta) = ({row.eps_total:.6g}, {row.delta_total:.3g}) for "
            f"seed {row.seed}, above the run's ({eps:.6g}, {delta:.3g})",
        )


def claims(method, ctx):
    """[(release, its mechanism, what one run's queries of it spend, (eps, delta))] once the run's
    whole plan passes (`planned`): each release's planned queries composed by its accountant."""
    planned(method, ctx)
    plans = [(release, _mechanism(method, release, ctx)) for release in method.releases]
    return [(r, m, m.compose(_costs(r, m, ctx))) for r, m in plans]


def audit_dataset(method, config):
    """The dataset a method's releases are audited on: of those configured where it runs its own
    chain (Method.repeats_on), the one with the most features, where a sensitivity that grows with
    d shows most (the first of them on a tie)."""
    from expril import settings

    specs = config["benchmarks"]
    own = [d for d in config["datasets"] if not method.repeats_on(specs[d])] or config["datasets"]
    return max(own, key=lambda d: settings.feature_count(specs[d]))


def audit_records(features, seed=0):
    """The gate's D: AUDIT_RECORDS records of `features` standard normal features, labels 0 or 1
    at random, then four canary candidates (indices returned), each label at +3 and at -3 in every
    feature: the removal of a canary moves most releases most."""
    from expril.seeds import rng

    r = rng("gate-audit", features, seed)
    corners = np.repeat([3.0, -3.0], 2)[:, None] * np.ones(features)
    x = np.vstack([r.standard_normal((AUDIT_RECORDS, features)), corners])
    y = np.concatenate([r.integers(0, 2, AUDIT_RECORDS), [1, 0, 1, 0]])
    return x, y, np.arange(AUDIT_RECORDS, AUDIT_RECORDS + 4)


def audit_bins(features, q=4):
    """Public bins for a release audited on `audit_records`: each feature cut at the standard
    normal's q-quantiles (the edges format of expril.method.binning)."""
    from scipy import stats

    return [stats.norm.ppf(np.arange(1, q) / q) for _ in range(features)]


def audit_block(x, y):
    """The gate's records as a seed block of one (the steps' load_block format), seed 0."""
    return {"x": x[None], "y": y[None], "seeds": np.array([0])}


def on_public_bins(answers):
    """A release's Step.audit (`audit(mechanism, x, y, keys)`) where its answers hang on the
    learner's bins: `answers(val, edges, name, mechanism)`, the code its step runs for a seed block
    (an array or a tuple of arrays, runs first), on the gate's records cut by `audit_bins`, once
    per noise key (the key naming the data set in the noise streams), the run's arrays flattened
    into one row."""

    def audit(mechanism, x, y, keys):
        val, edges = audit_block(x, y), [audit_bins(x.shape[1])]

        def row(key):
            out = answers(val, edges, f"audit{key}", mechanism)
            return np.concatenate([np.ravel(a[0]) for a in (out if isinstance(out, tuple) else (out,))])

        return np.stack([row(k) for k in keys])

    return audit


def audit_feature_map(features, n_features=32):
    """A public random feature map (expril.method.rff) for a release audited on `audit_records`,
    fitted on standard normal points."""
    from expril.method import rff
    from expril.seeds import rng

    return rff.make_map(rng("gate-audit-map").standard_normal((200, features)), n_features, rng("gate-audit-omega"))


def audited(method, releases, features, seed=0):
    """Audit each release of `method` (`releases`: [(release, mechanism, (eps, delta))], `claims`)
    as a black box (expril.privacy.audit.audit_release) on `audit_records`, with its Step.audit
    and Step.audit_draws per data set; refuse the method where a lower bound on a release's loss
    exceeds its claim. Returns one row per release: the claim, the bound, the event, the draws
    and the seconds it took."""
    from expril.privacy.audit import audit_release

    x, y, candidates = audit_records(features, seed)
    rows = []
    for release, mechanism, (eps, delta) in releases:
        start = time.perf_counter()
        result = audit_release(
            lambda x, y, keys, release=release, mechanism=mechanism: release.audit(mechanism, x, y, keys),
            x,
            y,
            candidates,
            eps,
            delta,
            release.audit_draws,
            seed,
            AUDIT_CONFIDENCE,
        )
        rows.append(
            {"method": method.name, "release": release.rule, "mechanism": mechanism.name}
            | result
            | {"seconds": time.perf_counter() - start}
        )
        if result["eps_lower"] > eps * SLACK:
            refuse(
                method,
                f"its release {release.rule} ({mechanism.name}) claims (eps, delta) = ({eps:.6g}, {delta:.3g}), but "
                f"its empirical audit bounds its loss by eps >= {result['eps_lower']:.4g} at "
                f"{AUDIT_CONFIDENCE:.0%} ({result['n_samples']} draws per data set, D' = D less canary record "
                f"{result['canary']}, event {result['event']})",
            )
    return rows
