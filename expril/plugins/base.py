"""A compared method as a plug-in (docs/extending.md): one module under expril/plugins/ holding one
subclass of `Method` and one `registry.register` call. The workflow builds the method's rules from
it (rules/plugins.smk) and checks it before any job runs (expril.plugins.gate).

A method is a chain of steps, each one Snakemake rule named by the step. Exactly one step is the
release: it alone reads the curator's data, applies the method's registered mechanism and writes a
ledger row; the others are the learner's and read only public data, their own earlier steps and the
release. The last step's output is the model the evaluator scores. A step's function is called
with the arguments its signature names, from:
- its inputs, by the names `Step.inputs` gives them: a shared file (SHARED), an earlier step (its
  rule's name) or a function of the job's context (expril.plugins.context) returning a path;
- `out_path`, `ledger_path` (a release's), `name` (the dataset), `setting` (the setting's path
  suffix, '' as configured) and `threads`, from the job;
- the params the workflow provides (PROVIDED, and `mechanism`: the release's privacy plan) and those
  of the step's own `params(ctx)`.
"""

import inspect
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

# Files every method may name as inputs: the curator's validation split (a release's only), the
# learner's source, and ExPriL's bins as configured.
CURATOR_INPUTS = ("target_val",)
SHARED = CURATOR_INPUTS + ("source", "configured_bins")
# Arguments a step's function gets from its job rather than from params.
FROM_JOB = ("out_path", "ledger_path", "name", "setting", "threads")
# A release's append-only history of every release, beside its output (ledger.append_history).
HISTORY = "history.csv"


@dataclass(frozen=True)
class Step:
    """One rule of a method: `run` writes `file` (in the method's folder under oracle/ for the
    release, learner/ otherwise), which depends on the setting's `axes` alone (None: all)."""

    rule: str
    run: Callable
    file: str
    inputs: dict = field(default_factory=dict)
    release: bool = False
    axes: tuple = None
    params: Callable = None
    trains: bool = False  # trains networks: on the GPU where configured

    def arguments(self):
        return list(inspect.signature(self.run).parameters)


class Method(ABC):
    """A compared method: its name (in paths, the configuration's `comparison: methods` and its
    tuning grid's family, config/tuning.yaml), its name in the report, its steps and its release's
    privacy plan."""

    name: str
    display: str
    steps: tuple

    @abstractmethod
    def mechanism(self, ctx):
        """The release's registered mechanism (expril.privacy.mechanisms) for the job, planned to
        spend the run's eps and delta at most (ctx.eps, ctx.delta)."""

    @property
    def release(self):
        return next(s for s in self.steps if s.release)

    def step(self, rule):
        return next(s for s in self.steps if s.rule == rule)

    def folder(self, step, results, dataset, seeds, eps_folder, suffix):
        """`eps_folder`: the eps and the currency's tag (Context.eps_folder)."""
        part = "oracle" if step.release else "learner"
        return f"{results}/{part}/{dataset}/{seeds}/eps{eps_folder}/{self.name}{suffix}"

    def output(self, step, ctx):
        """The file `step` writes for the job `ctx` describes, at the suffix of the step's axes."""
        suffix = ctx.suffix(step.axes)
        return f"{self.folder(step, ctx.config['results'], ctx.dataset, ctx.seeds, ctx.eps_folder, suffix)}/{step.file}"

    def ledger(self, ctx):
        """The release's ledger for the job `ctx` describes."""
        return ledger_of(self.output(self.release, ctx))


def ledger_of(path):
    """A release's ledger: its output's name with .ledger.csv for its extension."""
    return f"{os.path.splitext(path)[0]}.ledger.csv"


# The params the workflow gives a step whose function names them, beside the step's own; and
# `mechanism`, the release's plan (Method.mechanism) once the gate has passed it.
PROVIDED = {
    "network": lambda method, ctx: ctx.network(),
    "training": lambda method, ctx: ctx.config["training"],
    "solver": lambda method, ctx: ctx.config["reweight"],
    "init_key": lambda method, ctx: [method.name, ctx.dataset, ctx.eps_text],
    "device": lambda method, ctx: ctx.config["device"],
    "rows": lambda method, ctx: ctx.n_val,
    "history_path": lambda method, ctx: os.path.join(os.path.dirname(method.output(method.release, ctx)), HISTORY),
}
