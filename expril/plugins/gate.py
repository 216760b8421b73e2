"""The gate a plug-in method passes (docs/extending.md, "What the gate checks"): the platform checks
a method's privacy instead of trusting the eps it says it spends. Before any job runs, the
workflow refuses a method whose release writes no ledger row, whose planned spend exceeds the run's
eps or delta, whose learner steps read the curator's data, or that has no tuning entry; once its
release has run, the job fails unless the ledger holds every seed's row within the run's budget.
The taint audit (expril.privacy.taint) checks the same plan from Snakemake's jobs."""

import inspect
import math
import re

import pandas as pd

from expril.plugins.base import CURATOR_INPUTS, FROM_JOB, PROVIDED, SHARED
from expril.privacy.base import MECHANISMS, Mechanism

NAME = re.compile(r"[a-z][a-z0-9]*")
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
    releases = [s.rule for s in method.steps if s.release]
    if len(releases) != 1:
        refuse(method, f"it has {len(releases)} release steps ({', '.join(releases) or 'none'}); exactly one is")
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
        missing = [a for a in _required(step) if a not in {*step.inputs, *FROM_JOB, *PROVIDED, "mechanism"}]
        if missing and step.params is None:
            refuse(method, f"step {step.rule}'s function needs {', '.join(missing)}, which nothing gives it")
        known.add(step.rule)
    if method.name not in grid["families"]:
        refuse(
            method,
            f"it has no tuning entry: add `{method.name}:` under `families:` in the tuning grid "
            "(config/tuning.yaml; `model: [configured]` alone if it has nothing to tune)",
        )


def _required(step):
    return [n for n, p in inspect.signature(step.run).parameters.items() if p.default is inspect.Parameter.empty]


def planned(method, ctx):
    """The release's mechanism for the job `ctx`, refused if it is not a registered mechanism, is
    not the one the job's currency names for the method, protects other neighbours than the
    currency's, or plans to spend more than the run's (eps, delta)."""
    mechanism = method.mechanism(ctx)
    if not isinstance(mechanism, Mechanism) or MECHANISMS.get(mechanism.name) is not type(mechanism):
        refuse(method, f"its release applies {mechanism!r}, not a registered mechanism (expril.privacy.mechanisms)")
    if ctx.currency is not None and mechanism.name != ctx.mechanism:
        refuse(
            method,
            f"its release applies {mechanism.name!r} where currency {ctx.currency.name!r} names "
            f"{ctx.mechanism!r} for it (config: comparison: currencies)",
        )
    if ctx.currency is not None and mechanism.neighbours != ctx.currency.relation:
        refuse(
            method,
            f"its release protects neighbours that {mechanism.neighbours}, not currency "
            f"{ctx.currency.name!r}'s ({ctx.currency.relation})",
        )
    eps, delta = mechanism.compose(mechanism.planned_costs())
    budget = (ctx.eps, ctx.delta)
    for spent in ((mechanism.eps, mechanism.delta), (eps, delta)):
        if not _within(spent, budget):
            refuse(
                method,
                f"on {ctx.dataset} at eps {ctx.eps_text} its release plans to spend (eps, delta) = "
                f"({spent[0]:.6g}, {spent[1]:.3g}), above the run's ({budget[0]:.6g}, {budget[1]:.3g})",
            )
    return mechanism


def _within(spent, budget):
    return all(s <= b * SLACK or math.isinf(b) for s, b in zip(spent, budget))


def tainted_read(method, step, path, results):
    """Refuse a learner step that is given a file under the results' curator/ (a callable input)."""
    if not step.release and str(path).startswith(f"{results}/curator/"):
        refuse(method, f"its learner step {step.rule} reads {path}, the curator's data: only its release may")


def recorded(method, ledger_path, seeds, eps, delta):
    """Fail the release's job unless its ledger has a row for every seed of the block, each run's
    total within the run's (eps, delta)."""
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
