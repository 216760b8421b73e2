"""A compared method as a plug-in (docs/extending.md): one module under expril/plugins/ holding one
subclass of `Method` and one `registry.register` call. The workflow builds the method's rules from
it (rules/plugins.smk) and checks it before any job runs (expril.plugins.gate).

A method is a chain of steps, each one Snakemake rule named by the step. Its releases (one or
more) alone read the curator's data, each applying a registered mechanism and writing a ledger
row; the others are the learner's and read only public data, their own earlier steps and the
releases. A step's file may name wildcards of its own (`{t}`, `{variant}`: one job per value, as
ExPriL's iterations are); the job's values are `ctx.fields`. The last step's output is the model
the evaluator scores, unless the method reports several (`reports`, `model`). A step's function
is called with the arguments its signature names, from:
- its inputs, by the names `Step.inputs` gives them: a shared file (SHARED), an earlier step (its
  rule's name) or a function of the job's context (expril.plugins.context) returning a path or a
  list of paths;
- `out_path` (or the names a step with several files gives them), `ledger_path` (a release's),
  `name` (the dataset), `setting` (the setting's path suffix, '' as configured) and `threads`,
  from the job;
- the params the workflow provides (PROVIDED, and `mechanism`: a release's privacy plan, or the
  method's for a learner step) and those of the step's own `params(ctx)`, which override them.
"""

import inspect
import os
import string
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
    """One rule of a method: `run` writes `file` (in the method's folder under oracle/ for a
    release, learner/ otherwise), which depends on the setting's `axes` alone (None: all). `file`
    may name wildcards of its own ('{variant}/model_t{t}.npz'), or be a dict {argument: file} for
    a step that writes several. A release of a method with several may have a plan of its own
    (`mechanism(ctx)`, else the method's) and says how many queries a run asks of it (`queries(ctx)`,
    else all its mechanism plans: `planned_queries`). A learner step whose function trains several
    runs at once names the arguments that differ between runs (`per_run`): its function then takes
    `runs`, a list of {argument: value} per run, and its other arguments once, shared by the runs;
    one run's job calls it with one run, the calibration's stacks with all the runs whose networks
    share a shape (rules/stacked.smk), and each run's file must be the one it gets alone. A release
    says how the gate audits it (expril.plugins.gate.audited): `audit(mechanism, x, y, keys)` makes
    the release one run asks of it, with its own code, on records (x, y) once per noise key (an
    int), as a (len(keys), values) array, and `audit_draws` is how many it is asked per data set."""

    rule: str
    run: Callable
    file: str | dict
    inputs: dict = field(default_factory=dict)
    release: bool = False
    axes: tuple = None
    params: Callable = None
    trains: bool = False  # trains networks: on the GPU where configured
    mechanism: Callable = None
    queries: Callable = None
    per_run: tuple = ()
    audit: Callable = None
    audit_draws: int = 2000

    def arguments(self):
        """The arguments the function gets: those it names (but `runs`) and each run's own."""
        return [a for a in inspect.signature(self.run).parameters if a != "runs"] + list(self.per_run)

    @property
    def files(self):
        """{the function's argument: the file it writes}."""
        return dict(self.file) if isinstance(self.file, dict) else {"out_path": self.file}

    @property
    def fields(self):
        """The wildcards the step's files name beside the job's dataset, seeds, eps and setting."""
        return sorted({f for file in self.files.values() for _, f, _, _ in string.Formatter().parse(file) if f})


class Method(ABC):
    """A compared method: its name (in paths, the configuration's `comparison: methods` and its
    tuning grid's family, config/tuning.yaml), its name in the report, its steps and its releases'
    privacy plan. A method may report several models, each a compared method of its own
    (`reports`: {name: name in the report}; `model` and `ledger` give each one's files), and a
    report may repeat another compared method's runs on some datasets (`bases`, `repeats_on`)."""

    name: str
    display: str
    steps: tuple
    # The compared method whose runs each report repeats where `repeats_on` holds: the comparison
    # reads that method's runs there, and neither ranks nor tests the report anywhere.
    bases = {}
    # The report's words for a method whose reports repeat their bases (expril.reports.comparison):
    # which repeats what where, beside its ranks (it is not ranked), and the datasets its own runs
    # are on, beside what tuning changed. None: it says nothing.
    repeats_note = None
    own_runs_note = None
    # The JSON Schema of the method's own settings, `comparison: <name>` in the configuration, which
    # the workflow then requires and checks (expril.workflow.config.check_settings); None: it has none.
    config_schema = None
    # Whether the method's published cells are rerun before a study mixes its runs with a published
    # one's (expril.reports.published): exactly one, cheap, whose noise the oracle's secret keys and
    # that trains networks (so that a host of another kind exercises the equivalence test).
    checks_published = False
    # Its tuning grid, {axis: values, the first 'configured'} (config/tuning.yaml's `families:`
    # entries' form), and its recipe axes' named values {axis: {value: knobs}}, where the grid file
    # has no entry for it (expril.workflow.grids.load); None: the grid file's entry.
    grid = None
    recipes = {}
    # The knobs of its tuning grid that act on the noise alone (a signal-to-noise target, a split of
    # eps): at eps = inf a setting that differs from another in those alone repeats its run, and the
    # calibration leaves it out there (expril.workflow.grids.noiseless_duplicate).
    noise_knobs = frozenset()

    @abstractmethod
    def mechanism(self, ctx):
        """The releases' registered mechanism (expril.privacy.mechanisms) for the job, planned to
        spend the run's eps and delta at most (ctx.eps, ctx.delta); a release with a plan of its own
        (Step.mechanism) shares the budget with it."""

    @property
    def reports(self):
        """{compared method: its name in the report}: this method alone by default."""
        return {self.name: self.display}

    @property
    def releases(self):
        return tuple(s for s in self.steps if s.release)

    @property
    def release(self):
        """The first release."""
        return self.releases[0]

    def step(self, rule):
        return next(s for s in self.steps if s.rule == rule)

    def folder(self, step, results, dataset, seeds, eps_folder, suffix):
        """`eps_folder`: the eps and the currency's tag (Context.eps_folder)."""
        part = "oracle" if step.release else "learner"
        return f"{results}/{part}/{dataset}/{seeds}/eps{eps_folder}/{self.name}{suffix}"

    def output(self, step, ctx, key=None, suffix=None, **fields):
        """The file `step` writes for the job `ctx` describes (its `key` file, the first by default),
        at the suffix of the step's axes (or `suffix`) and the job's fields (or `fields`)."""
        suffix = ctx.suffix(step.axes) if suffix is None else suffix
        file = step.files[key] if key else next(iter(step.files.values()))
        file = file.format(**{**ctx.fields, **fields})
        return f"{self.folder(step, ctx.config['results'], ctx.dataset, ctx.seeds, ctx.eps_folder, suffix)}/{file}"

    def model(self, ctx, report):
        """The model file the evaluator scores for the compared method `report`."""
        return self.output(self.steps[-1], ctx)

    def ledger(self, ctx, report=None):
        """The ledger of a run's last release (which holds its earlier ones) for the job `ctx`."""
        return ledger_of(self.output(self.release, ctx))

    def spends(self, mechanism):
        """The registered mechanisms whose ledger rows a run of this method may hold where its
        currency names `mechanism` for it (its reports'): that one, unless its releases apply
        others beside it (ExPriL by MMD's embedding)."""
        return {mechanism}

    def field_values(self, step, ctx):
        """The values of `step`'s own wildcards (Step.fields) that the run `ctx` needs, [{field:
        value}]: where it trains several runs at once (Step.per_run), the calibration's stacks
        (rules/stacked.smk) hold a run's files at each. A step without fields has one file a run."""
        if step.fields:
            raise NotImplementedError(
                f"plug-in {self.name!r}: step {step.rule} trains several runs at once and names wildcards of its own "
                f"({', '.join(step.fields)}): its method must say which values a run needs (Method.field_values)"
            )
        return [{}]

    def repeats_on(self, spec):
        """Whether this method's reports repeat their `bases` on a dataset of this benchmark entry."""
        return False


# A method's settings schema (Method.config_schema) in JSON Schema, as config.schema.yaml's.
POSITIVE_INT = {"type": "integer", "minimum": 1}
POSITIVE = {"type": "number", "exclusiveMinimum": 0}


def settings_schema(**properties):
    """A Method.config_schema: these keys, each required, and no other."""
    return {"type": "object", "additionalProperties": False, "properties": properties, "required": list(properties)}


def ledger_of(path):
    """A release's ledger: its output's name with .ledger.csv for its extension."""
    return f"{os.path.splitext(path)[0]}.ledger.csv"


# The params the workflow gives a step whose function names them, beside the step's own; and
# `mechanism`, a release's plan (Step.mechanism, else Method.mechanism; a learner step's: the method's)
# once the gate has passed the run's whole plan.
PROVIDED = {
    "network": lambda method, ctx: ctx.network(),
    "training": lambda method, ctx: ctx.config["training"],
    "solver": lambda method, ctx: ctx.config["reweight"],
    "init_key": lambda method, ctx: [method.name, ctx.dataset, ctx.eps_text],
    "device": lambda method, ctx: ctx.config["device"],
    "rows": lambda method, ctx: ctx.n_val,
    "history_path": lambda method, ctx: os.path.join(os.path.dirname(method.output(method.release, ctx)), HISTORY),
}
