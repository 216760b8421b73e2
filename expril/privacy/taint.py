"""Taint audit of the workflow's job plan: no learner job may read data derived from the target.

Every file under the results folder's curator/ is tainted (the target, with its labels), and so
is every output of a job that reads a tainted file, except the outputs of a release: a job that
applies a registered privacy mechanism and writes a ledger row (`is_release`). A rule is a
learner rule unless ROLES puts it on the curator or the evaluator side, or it is a plug-in method's
release (expril/plugins/); a learner job that reads
a tainted file is a violation, and so is a job of a release rule that is not a release (its
output would leave the curator unaccounted, even where only the evaluator reads it, as DP-SGD's
model). See docs/privacy.md, "Who sees what".

    .venv/bin/python -m expril.privacy.taint [--configfile FILE ...] [--config KEY=VALUE ...]
                                     [--snakefile FILE] [--directory DIR] [TARGET ...]

audits the plan `snakemake --forceall` would run with these arguments, prints its violations
and exits with status 1 if there is any.
"""

import argparse
import functools
import os
import sys
from dataclasses import dataclass
from graphlib import TopologicalSorter
from pathlib import Path

from expril.plugins import registry
from expril.privacy import mechanisms

# Rules that may read tainted files. Every other rule is a learner rule (default-deny). The curator's
# rules are "curator" (its own data) or "release" (every job a release).
ROLES = {
    "split_target": "curator",
    "oracle_marginals": "release",
    "oracle_errors": "release",
    "evaluate_hypotheses": "evaluator",
    "reference_models": "evaluator",
    "aggregate_results": "evaluator",
    "publish_summary": "evaluator",
    "publish_comparison": "evaluator",
    "evaluate_rival": "evaluator",
    "compare_methods": "evaluator",
    "comparison_report": "evaluator",
    "round2_changes": "evaluator",
    "round3_changes": "evaluator",
    "check_published": "evaluator",
    # The digests that pair a study's runs with a rerun's (expril/reports/pairing.py): of the
    # target's splits too, as the evaluator reads them; a check, never a learner's input.
    "pairing_digests": "evaluator",
    "check_pairing": "evaluator",
    # The gate's empirical audit of a plug-in's releases runs them on records of its own: the
    # platform's check, as the evaluator's; it reads no data set.
    "plugin_audit": "evaluator",
    "compare": "evaluator",
    # Tuning scores every setting on calibration draws of the target, as evaluate_* does on the
    # reported ones; its choice is read as configuration only.
    "select_settings": "evaluator",
    "tune": "evaluator",
    "publish_tuning": "evaluator",
    "all": "evaluator",
    # Identification (rules/identify.smk) scores h* and h0* on calibration draws of the target,
    # as reference_models does on the reported ones; its choice is read as configuration only.
    "calibrate_reference": "evaluator",
    "select_readings": "evaluator",
    "identify": "evaluator",
    "report_ambiguity": "evaluator",
    "ambiguity": "evaluator",
}


@functools.cache
def plugin_releases():
    """The release rules of the plug-in methods (expril/plugins/): one or more per method."""
    return frozenset(step.rule for method in registry.methods().values() for step in method.releases)


def role(rule):
    """A rule's role: ROLES's, "release" for a plug-in method's release, else None (a learner rule)."""
    return ROLES.get(rule, "release" if rule in plugin_releases() else None)


@dataclass(frozen=True)
class Job:
    rule: str
    input: tuple
    output: tuple
    release: bool = False
    # the rule whose role it has: a module's rule's (rules/ambiguity.smk) in reproduction.smk, a
    # stack's (rules/stacked.smk: STACKED) the rule whose runs it runs
    base: str = None

    @property
    def role(self):
        return role(self.base or self.rule)


@dataclass(frozen=True)
class Violation:
    rule: str
    file: str
    chain: tuple  # from a curator file to `file`: file, rule, file, ..., rule, file

    def __str__(self):
        text = f"{self.rule} reads {self.file}"
        return text if len(self.chain) == 1 else f"{text}, derived: {' -> '.join(self.chain)}"


def mechanism_name(params):
    """The mechanism a job's params say it applies: the `name` of its `mechanism` dict."""
    mechanism = params.get("mechanism")
    return mechanism.get("name") if isinstance(mechanism, dict) else None


def is_release(params, output):
    """Whether a job applies a registered mechanism and writes a ledger row (an output named
    `ledger`, a .ledger.csv file): its outputs are then the mechanism's, and untainted."""
    ledger = str(output.get("ledger", ""))
    return mechanism_name(params) in mechanisms.registered() and ledger.endswith(".ledger.csv")


def is_stacked_release(params, outputs):
    """Whether a stack (rules/stacked.smk: its params' `runs`, each a run's own job) runs releases
    alone and writes their files (`outputs`) and nothing else."""
    runs = params.get("runs")
    if not isinstance(runs, list) or not runs:  # an evaluation stack's are its scores' arguments
        return False
    written = [str(f) for run in runs for f in run["outputs"].values()]
    return all(is_release(run["params"], run["outputs"]) for run in runs) and sorted(written) == sorted(
        map(str, outputs)
    )


def _releases(job, stacked):
    """Whether a Snakemake job is a release: its own rule's, or a stack of releases (`stacked`:
    rules/stacked.smk's STACKED)."""
    params = dict(job.params.items())
    return is_release(params, dict(job.output.items())) or (
        job.rule.name in stacked and is_stacked_release(params, job.output)
    )


def _under(path, folders):
    return any(os.path.normpath(path).startswith(os.path.normpath(folder) + os.sep) for folder in folders)


def taint(jobs, curator):
    """Every tainted file of a plan, mapped to what tainted it: None for a file under `curator`
    (a folder, or several: one per module), else (rule, tainted input) of the job that wrote it."""
    curator = (curator,) if isinstance(curator, str) else curator
    origin = {f: None for job in jobs for f in (*job.input, *job.output) if _under(f, curator)}
    producer = {f: i for i, job in enumerate(jobs) for f in job.output}
    after = {i: {producer[f] for f in job.input if f in producer} for i, job in enumerate(jobs)}
    for i in TopologicalSorter(after).static_order():
        job = jobs[i]
        source = next((f for f in job.input if f in origin), None)
        if source is not None and not job.release:
            for f in job.output:
                origin.setdefault(f, (job.rule, source))
    return origin


def _chain(origin, file):
    chain = [file]
    while origin[chain[0]] is not None:
        chain[:0] = reversed(origin[chain[0]])
    return tuple(chain)


def audit(jobs, curator):
    """The learner jobs' reads of tainted files, reads of curator files first."""
    origin = taint(jobs, curator)
    found = [
        Violation(job.rule, f, _chain(origin, f)) for job in jobs if job.role is None for f in job.input if f in origin
    ]
    return sorted(found, key=lambda v: len(v.chain))


def unreleased(jobs):
    """The release rules with a job that is not a release (no registered mechanism or no ledger row)."""
    return sorted({job.rule for job in jobs if job.role == "release" and not job.release})


def unknown_roles(rules):
    """Rules ROLES declares that the workflow no longer has."""
    return sorted(set(ROLES) - set(rules))


def module_rule(name, modules):
    """The rule a module's rule reuses: rules/ambiguity.smk names them <rule>_<module>."""
    return next((name.removesuffix(f"_{m}") for m in modules if name.endswith(f"_{m}")), None)


@dataclass
class Plan:
    jobs: list
    rules: set  # every rule of the workflow, planned or not
    curator: tuple  # the results folder's curator/, and each module's


def load(snakefile=None, directory=None, configfiles=(), config=None, targets=()):
    """The jobs Snakemake would run with --forceall, from its API: unlike the dry-run text, this
    gives the jobs' params, which tell releases apart. Snakemake 9 has no public call returning
    the jobs: this builds the DAG as its DAGApi.printdag does."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, Quietness, ResourceSettings

    # Loading a Snakefile runs its code: ours sets PYTHONPATH and Snakemake puts the workflow's
    # folders on sys.path. Undone, so that loading a copy of the project leaves no trace here.
    saved_path, saved_environ = list(sys.path), dict(os.environ)
    try:
        with SnakemakeApi(OutputSettings(quiet={Quietness.ALL}, enable_file_logging=False)) as api:
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=1),
                config_settings=ConfigSettings(config=config or {}, configfiles=[Path(f) for f in configfiles]),
                snakefile=snakefile and Path(snakefile),
                workdir=directory and Path(directory),
            )
            # The DAG API hands its settings to the workflow.
            workflow_api.dag(DAGSettings(targets=frozenset(targets), forceall=True))
            workflow = workflow_api._workflow
            workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
            workflow._build_dag()
            modules, stacked = workflow.modules, workflow.globals.get("STACKED", {})
            jobs = [
                Job(
                    job.rule.name,
                    tuple(job.input),
                    tuple(job.output),
                    _releases(job, stacked),
                    stacked.get(job.rule.name) or module_rule(job.rule.name, modules),
                )
                for job in workflow.dag.jobs
            ]
            results = [workflow.config["results"]] + [m.config["results"] for m in modules.values()]
            return Plan(
                jobs, {rule.name for rule in workflow.rules}, tuple(os.path.join(r, "curator") for r in results)
            )
    finally:
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_environ)


def plan(argv):
    """`load` with Snakemake's command-line arguments (the subset this module's docstring lists)."""
    from snakemake.cli import parse_config

    parser = argparse.ArgumentParser(prog="python -m expril.privacy.taint", description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*")
    parser.add_argument("--snakefile", "-s")
    parser.add_argument("--directory", "-d")
    parser.add_argument("--configfile", "--configfiles", nargs="+", action="extend", default=[])
    parser.add_argument("--config", "-C", nargs="+", action="extend", default=[])
    args = parser.parse_args(argv)
    return load(args.snakefile, args.directory, args.configfile, parse_config(args.config), args.targets)


def main(argv=None):
    p = plan(sys.argv[1:] if argv is None else argv)
    violations = audit(p.jobs, p.curator)
    for rule in unknown_roles(p.rules):
        print(f"expril.privacy.taint.ROLES declares rule {rule}, which the workflow does not have")
    for v in violations:
        print(v)
    for rule in unreleased(p.jobs):
        print(f"{rule} is a release rule, but a job of it applies no registered mechanism or writes no ledger row")
    missing = sorted(p.rules - {job.rule for job in p.jobs})
    print(
        f"{len(p.jobs)} jobs, {len(violations)} violations; rules not in this plan, not audited: "
        f"{', '.join(missing) or 'none'}"
    )
    return 1 if violations or unreleased(p.jobs) or unknown_roles(p.rules) else 0


if __name__ == "__main__":
    sys.exit(main())
