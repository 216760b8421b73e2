"""A plug-in step's job (workflow_scripts/plugin_step.py): its function called with the arguments
it names (expril.plugins.base), and a release's ledger checked once it has run (expril.plugins.gate);
a stack of runs (workflow_scripts/plugin_stack.py, rules/stacked.smk) in one process."""

from expril import settings
from expril.plugins import gate, registry
from expril.steps.blocks import timed

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
