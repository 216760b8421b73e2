"""A plug-in step's job (workflow_scripts/plugin_step.py): its function called with the arguments
it names (expril.plugins.base), and a release's ledger checked once it has run (expril.plugins.gate)."""

from expril import settings
from expril.plugins import gate, registry

# Params of the rule that are the workflow's, not the step function's (`own`: the step's own, unpacked).
WORKFLOW_PARAMS = ("code", "budget", "own")


def run(rule, inputs, outputs, params, wildcards, threads):
    method, step = registry.step(rule)
    given = {
        **inputs,
        **{k: v for k, v in params.items() if k not in WORKFLOW_PARAMS},
        **params.get("own", {}),
        **{argument: path for argument, path in outputs.items() if argument != "ledger"},
        "ledger_path": outputs.get("ledger"),
        "name": wildcards["dataset"],
        "setting": wildcards["setting"],
        "threads": threads,
    }
    step.run(**{a: given[a] for a in step.arguments() if a in given})
    if step.release:
        eps, delta = params["budget"]
        gate.recorded(method, outputs["ledger"], settings.block_seeds(wildcards["seeds"]), eps, delta)
