"""A plug-in step's job (workflow_scripts/plugin_step.py): its function called with the arguments
it names (expril.plugins.base), and a release's ledger checked once it has run (expril.plugins.gate);
a stack of runs (workflow_scripts/plugin_stack.py, rules/stacked.smk) in one process; a method's
empirical audit (workflow_scripts/plugin_audit.py), which its releases wait for."""

from expril import settings
from expril.plugins import gate, registry
from expril.steps.blocks import log, timed

# Params of the rule that are the workflow's, not the step function's (`own`: the step's own, unpacked).
WORKFLOW_PARAMS = ("code", "budget", "own")


def given(inputs, outputs, params, wildcards, threads):
    """Every argument a job offers its step's function."""
    return {
        **inputs,
        **{k: v for k, v in params.items() if k not in WORKFLOW_PARAMS},
        **params.get("own", {}),
        **{argument: path for argument, path in outputs.items() if argument != "ledger"},
        "ledger_path": outputs.get("ledger"),
        "name": wildcards["dataset"],
        "setting": wildcards["setting"],
        "threads": threads,
    }


def call(step, runs):
    """The step's function on the arguments of one run or, for a step that trains several at once
    (Step.per_run), of `runs`, whose shared arguments must agree."""
    if not step.per_run:
        (run,) = runs
        return step.run(**{a: run[a] for a in step.arguments() if a in run})
    shared = {a: runs[0][a] for a in step.arguments() if a not in step.per_run and a in runs[0]}
    for a, value in shared.items():
        if any(run.get(a) != value for run in runs):
            raise ValueError(f"{step.rule}: the stacked runs differ in {a}, which its function takes once")
    return step.run(runs=[{a: run[a] for a in step.per_run if a in run} for run in runs], **shared)


def run(rule, inputs, outputs, params, wildcards, threads):
    method, step = registry.step(rule)
    call(step, [given(inputs, outputs, params, wildcards, threads)])
    if step.release:
        eps, delta = params["budget"]
        gate.recorded(method, outputs["ledger"], settings.block_seeds(wildcards["seeds"]), eps, delta)


@timed  # the whole stack's step time, after its runs' own (benchmarks.pipeline.job_times reads the last)
def run_stack(rule, runs, threads):
    """The runs of a stack (each its job's inputs, outputs, params and wildcards): one call where
    the step trains several at once (Step.per_run), else each run as its own job runs it (a
    release with its own noise, ledger and check), one after another in this process."""
    _, step = registry.step(rule)
    if not step.per_run:
        for r in runs:
            run(rule, r["inputs"], r["outputs"], r["params"], r["wildcards"], threads)
        return
    call(step, [given(r["inputs"], r["outputs"], r["params"], r["wildcards"], threads) for r in runs])


@timed
def audit(method, plan, out_path):
    """The gate's empirical audit of `method`'s releases (gate.audited) on `plan` (rule plugin_audit:
    each release's rule, mechanism param and planned (eps, delta), and the feature count): fails,
    with the gate's message, where a release is refuted; else writes one row per release."""
    import pandas as pd

    from expril.io import save_text
    from expril.privacy import mechanisms

    known = registry.methods()[method]
    releases = [(known.step(r), mechanisms.from_param(param), tuple(claim)) for r, param, claim in plan["releases"]]
    rows = gate.audited(known, releases, plan["features"])
    for row in rows:
        log.info(
            "%s: claimed eps %.4g, audited eps >= %.4g (%d draws per data set, %.1f s)",
            row["release"],
            row["claimed_eps"],
            row["eps_lower"],
            row["n_samples"],
            row["seconds"],
        )
    save_text(out_path, pd.DataFrame(rows).to_csv(index=False))
