"""The cost model of the tuned comparison study (issue #25): each method's measured cost per run and
eps at seed blocks of 3 and 20, split into start-up and step, and the projected cost of the whole
study, calibration (`snakemake tune`) and reported runs (`snakemake compare`), on this machine.

    .venv/bin/python -m benchmarks.study_cost [--measured results/extended] [--cores 2]
    .venv/bin/python -m benchmarks.study_cost --cut BEFORE AFTER [--cut ...] [--chained] [--earlier METHOD=RATIO ...]
                                              [--totals] [--part P] [--shares-from RESULTS] [--cpu]
    .venv/bin/python -m benchmarks.study_cost --spent [--measured results/extended] [--out FOLDER]

Measured: the job benchmarks and logs of a results folder (Snakemake's benchmark file gives a job's
wall time, expril.steps.blocks.timed logs its step's own time): per job, its start-up (wall less
step: the process's start and imports) and its step time per run of its seed block. Planned: the
jobs Snakemake would run for `tune` and `compare` from scratch (--dry-run --forceall), each costed
at a start-up plus its block's runs times a step per run, medians over the measured jobs of its
cell (the same rule, dataset, eps and setting) at its block size (a measured job: its own time),
else at another block size, else of its setting at other eps, else of its rule on its dataset, else
of its rule (nothing for a rule never measured, which the output lists). Wall time on `cores`
cores assumes the jobs fill them (the reported study's jobs are few and long, the calibration's
many and short). Last, the check: the reported runs' measured jobs against what the
calibration's jobs alone project for them.

`--cut`: a cut's measured effect on the study. The same sample of cells (a few datasets and eps,
blocks of 5) run by the code before and after it, in two results folders at the same time, one
core each, so that both meet the same load; each method's job time after over before, on the
jobs both ran, scales its job-hours in the study as measured in RESULTS.md (j). Several cuts either
change disjoint jobs (their savings add up) or were measured one on the other's code (`--chained`:
their ratios multiply).
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.pipeline import METHOD_RULES, MMD_RULES, ROOT, job_times
from expril.plugins import registry
from expril.workflow.config import planned_config
from expril.workflow.currency import choice_file

MMD = "ExPriL by MMD (C and I)"
UNTUNED = (
    "; the as-configured column only, as {} is not published yet: the tuned column adds its own runs wherever"
    " a chosen setting differs from the configured one"
)
BLOCK = re.compile(r"/(\d+)-(\d+)(?=[/.~]|$)")  # a block ends a folder or a name: 0-19/, 0-19.tsv, 0-19~fmap


def method_of(rule, path):
    """The compared method a job works for (METHOD_RULES; ExPriL's evaluation its own, by MMD its
    eps<e>-mmd runs'), or 'shared'."""
    if "-mmd" in path or rule in MMD_RULES:
        return MMD
    if rule == "evaluate_hypotheses":
        return "ExPriL (C and I)"
    if rule == "plugin_audit":  # /mmd@approx
        name = path.strip("/").split("@")[0]
        return MMD if name == "mmd" else registry.methods()[name].display
    if rule == "evaluate_rival":
        name = re.search(r"/eps[^/]+/(\w+)", path)[1]
        return registry.methods()[name].display
    return next((m for m, rules in METHOD_RULES.items() if rule in rules), "shared")


def cell(rule, path):
    """A job's benchmark path with its seed block masked: the same cell (rule, dataset, eps, setting)
    of another block has the same one."""
    return rule + BLOCK.sub("/{block}", path, count=1)


def block(path):
    """A job's seed block in its path: (first seed, runs), or (None, 1) for a job without one."""
    m = BLOCK.search(path)
    return (int(m[1]), int(m[2]) - int(m[1]) + 1) if m else (None, 1)


def measured(results):
    """Per job of a results folder: rule, method, dataset, cell, its block's first seed and runs,
    start-up, step per run."""
    jobs = job_times(results)
    jobs["first"], jobs["runs"] = zip(*map(block, jobs.path))
    jobs["method"] = [method_of(r, p) for r, p in zip(jobs.rule, jobs.path)]
    jobs["cell"] = [cell(r, p) for r, p in zip(jobs.rule, jobs.path)]
    jobs["startup"] = (jobs.wall - jobs.step).clip(lower=0)
    jobs["step_per_run"] = jobs.step / jobs.runs
    return jobs


def dry_run(target, configfiles, config=()):
    """The jobs of `snakemake --dry-run --forceall target`: each job's rule and its fields as the dry
    run prints them (input, output, benchmark, wildcards...)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--dry-run",
            "--forceall",
            target,
            "--configfile",
            *configfiles,
            *(["--config", *config] if config else []),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for rule, body in re.findall(r"^\s*(?:local)?rule (\w+):\n((?:\s+\w+: .*\n)+)", out, re.M):
        yield rule, dict(re.findall(r"^\s+(\w+): (.*)$", body, re.M))


def planned(target, configfiles, config=()):
    """The jobs of `snakemake --dry-run --forceall target`: rule, method, dataset, cell, runs."""
    rows = []
    for rule, fields in dry_run(target, configfiles, config):
        # a stacked job's benchmark is in the folder of the rule whose runs it stacks
        benchmark = re.search(r"/benchmarks/(\w+)(/.*)\.tsv$", fields.get("benchmark", ""))
        rule = benchmark[1] if benchmark else rule
        output = fields.get("output", "")  # none for a target rule
        path = benchmark[2] if benchmark else "/" + output
        dataset = re.search(r"/(?:data|curator|learner|oracle|eval|reference)/([^/]+)/", output)
        rows.append(
            {
                "rule": rule,
                "method": method_of(rule, path),
                "dataset": dataset[1] if dataset else None,
                "cell": cell(rule, path) if benchmark else None,
                "runs": block(path)[1],
            }
        )
    return pd.DataFrame(rows)


def any_eps(cell):
    """A cell with its eps masked: the same rule, dataset and setting at another eps."""
    return re.sub(r"/eps[^/~-]+", "/eps{eps}", cell) if isinstance(cell, str) else None  # -mmd stays


def costed(plan, jobs):
    """Each planned job's projected seconds (start-up, step) from the measured jobs: the medians of
    its cell's jobs of the same block size where there are any (a job already measured costs what
    it took), else of its cell's in blocks of another size, else of its setting's at other eps, else
    of its rule's on its dataset, else of its rule's."""
    columns = ["startup", "step_per_run"]
    tiers = [
        (jobs.groupby(["cell", "runs"])[columns].median(), lambda job: (job.cell, job.runs)),
        (jobs.groupby("cell")[columns].median(), lambda job: job.cell),
        (jobs.groupby(jobs.cell.map(any_eps))[columns].median(), lambda job: any_eps(job.cell)),
        (jobs.groupby(["rule", "dataset"])[columns].median(), lambda job: (job.rule, job.dataset)),
        (jobs.groupby("rule")[columns].median(), lambda job: job.rule),
    ]
    rows = []
    for job in plan.itertuples():
        cost = next((table.loc[key(job)] for table, key in tiers if key(job) in table.index), None)
        rows.append((float("nan"), float("nan")) if cost is None else (cost.startup, cost.step_per_run * job.runs))
    return plan.assign(startup=[r[0] for r in rows], step=[r[1] for r in rows])


def per_run_table(jobs):
    """Per method: seconds per run, eps and setting at blocks of 3 and 20, start-up + step: its
    jobs' start-up and step per run summed, over its evaluations (one per dataset, eps, setting
    and block), start-up shared by the block's runs."""
    lines = ["| method | evaluated | block of 3: start-up + step (s) | block of 20 |", "|---|---|---|---|"]
    for method, part in jobs[jobs.method != "shared"].groupby("method"):
        units = part.rule.isin(["evaluate_hypotheses", "evaluate_rival"]).sum()
        if not units:
            continue
        cells = [
            f"{part.startup.sum() / units / b:.2f} + {part.step_per_run.sum() / units:.2f} = "
            f"{part.startup.sum() / units / b + part.step_per_run.sum() / units:.2f}"
            for b in (3, 20)
        ]
        lines.append(f"| {method} | {units} | " + " | ".join(cells) + " |")
    return lines


def check(jobs, calibration_from=10000):
    """The model against the reported runs' measured jobs, per method: each job of a block below
    `calibration_from` costed from the calibration's jobs alone (blocks of 5) and its measured wall
    time, as Markdown lines (none where no such job has run)."""
    first = jobs["first"].astype(float)  # None: no block, in neither
    model, reported = jobs[first >= calibration_from], jobs[first < calibration_from]
    if reported.empty:
        return []
    plan = costed(reported[["rule", "method", "dataset", "cell", "runs"]], model).assign(wall=reported.wall)
    plan = plan[plan.startup.notna()]
    lines = [
        f"\nThe model against the reported runs' measured jobs: {len(plan)} jobs of blocks of "
        f"{reported.runs.max()}, each costed from the calibration's jobs alone (blocks of {model.runs.max()}) "
        "and timed.\n",
        "| method | jobs | projected (h) | measured (h) | measured / projected |",
        "|---|---|---|---|---|",
    ]
    for method, part in [*plan.groupby("method"), ("all", plan)]:
        projected = (part.startup.sum() + part.step.sum()) / 3600
        lines.append(
            f"| {method} | {len(part)} | {projected:.2f} | {part.wall.sum() / 3600:.2f} | "
            f"{part.wall.sum() / 3600 / projected:.2f} |"
        )
    timed = reported.loc[plan.index]
    lines.append(
        f"\nTheir measured start-up (wall less the step's own time): {timed.startup.sum() / timed.wall.sum():.1%} "
        "of their job time."
    )
    return lines


def report(results="results/extended", cores=2):
    """The cost model as Markdown lines: the measured jobs, each method's cost per run and eps,
    the projected calibration and reported runs, and the check of the model against the reported
    runs' measured jobs."""
    jobs, config = measured(results), planned_config(ROOT) | {"results": results}
    comparison = config["comparison"]
    # The tuned column is planned once every currency's choice file is there.
    choices = {c: choice_file(config, c) for c in comparison["currencies"]}
    tuned = all((ROOT / path).exists() for path in choices.values())
    yield (
        f"Measured: the {len(jobs)} jobs of {results} ({jobs.wall.sum() / 3600:.2f} job-hours), start-up and step "
        "per run from each job's benchmark and log.\n"
    )
    yield from per_run_table(jobs)
    for name, target in (("Calibration", "tune"), ("Reported runs", "compare")):
        plan = costed(planned(target, ["config/extended.yaml"]), jobs)
        missing = sorted(set(plan.rule[plan.startup.isna()]))
        total = (plan.startup.sum() + plan.step.sum()) / 3600
        yield (
            f"\n{name} (`snakemake {target} --configfile config/extended.yaml`, planned from scratch): "
            f"{len(plan)} jobs, projected {total:.1f} job-hours, {total / cores:.1f} h wall on {cores} cores, "
            f"start-up {plan.startup.sum() / 3600 / total:.0%} of job time"
            + (f" (not measured, costed 0: {', '.join(missing)})" if missing else "")
            + (UNTUNED.format(", ".join(choices.values())) if target == "compare" and not tuned else "")
            + ".\n"
        )
        yield "| method | jobs | start-up (h) | step (h) | job-hours |"
        yield "|---|---|---|---|---|"
        for method, part in plan.groupby("method"):
            yield (
                f"| {method} | {len(part)} | {part.startup.sum() / 3600:.2f} | {part.step.sum() / 3600:.2f} | "
                f"{(part.startup.sum() + part.step.sum()) / 3600:.2f} |"
            )
    yield from check(jobs)


def studied(results_md=ROOT / "benchmarks" / "RESULTS.md"):
    """Each method's job-hours in the tuned study as RESULTS.md (j) states them: its calibration's
    and reported runs' tables (method | jobs | start-up | step | job-hours)."""
    section = re.search(r"^## \(j\).*?(?=^## \(|\Z)", results_md.read_text(), re.M | re.S)
    if not section:
        raise SystemExit(f"{results_md}: no section (j), the tuned study's cost model, to project from")
    parts = {}
    for name, table in re.findall(r"^(Calibration|Reported runs) \(.*?\n\n((?:\|[^\n]*\n)+)", section[0], re.M | re.S):
        rows = [line.split("|")[1:-1] for line in table.splitlines()[2:]]
        parts[name] = {cells[0].strip(): float(cells[4]) for cells in rows}
    return pd.DataFrame(parts).fillna(0.0)


def cut_ratios(before, after, totals=False, measure="wall"):
    """Per method, the job time (`measure`: wall or CPU seconds) of the jobs both results folders
    ran (the same rule and benchmark path), after over before, with the job-hours compared; with
    `totals`, of all the jobs each ran (a cut that changes the job graph: its jobs are others)."""
    if totals:
        hours = [measured(folder).groupby("method")[measure].agg(["sum", "size"]) for folder in (before, after)]
        table = pd.DataFrame({"wall_before": hours[0]["sum"], "wall_after": hours[1]["sum"]}).fillna(0) / 3600
        jobs = (
            hours[0]["size"].astype(str)
            + " / "
            + hours[1]["size"].reindex(hours[0].index).fillna(0).astype(int).astype(str)
        )
    else:
        jobs_of = [measured(folder)[["rule", "path", "method", measure]] for folder in (before, after)]
        both = jobs_of[0].merge(jobs_of[1], on=["rule", "path"], suffixes=("_before", "_after"))
        both = both.rename(columns={f"{measure}_before": "wall_before", f"{measure}_after": "wall_after"})
        table = both.groupby("method_before")[["wall_before", "wall_after"]].sum() / 3600
        jobs = both.groupby("method_before").size().astype(str)
    return table.assign(ratio=table.wall_after / table.wall_before, jobs=jobs)


def rule_shares(sample, results, part, calibration_from=10000):
    """Per method, the share of its `part`'s job-hours in the finished study `results` that the
    rules of the `sample`'s jobs (a results folder) took: the part a sample of those rules alone
    measures."""
    jobs, rules = measured(results), measured(sample).groupby("method").rule.agg(set)
    first = jobs["first"].astype(float)
    jobs = jobs[first >= calibration_from] if part == "Calibration" else jobs[first < calibration_from]
    hours = jobs.groupby("method").wall.sum()
    sampled = jobs[[rule in rules.get(m, ()) for m, rule in zip(jobs.method, jobs.rule)]]
    return (sampled.groupby("method").wall.sum() / hours).reindex(rules.index).fillna(0.0)


def combined(cuts, chained=False):
    """The factor of a method's job time after several cuts, each (share of the time its sample's
    rules took, its measured ratio): chained cuts (each measured on the code after the one before)
    multiply; cuts of disjoint jobs add their savings."""
    factors = [1 - share * (1 - ratio) for share, ratio in cuts]
    return math.prod(factors) if chained else 1 - sum(1 - f for f in factors)


def projection(cuts, cores=2, earlier=None, totals=False, part=None, shares_from=None, measure="wall", chained=False):
    """The tuned study's measured cost (RESULTS.md (j)), each method's share scaled by the ratios
    measured on samples of cells, each run by the code before and after a cut (`cuts`: pairs of
    results folders; `measure`: their jobs' wall or CPU time), on `part` alone ('Calibration' or
    'Reported runs') where the samples are of one, and by `earlier` ({method: ratio}, earlier cuts'
    measured ratios, 1 for a method not named), as Markdown lines. With `shares_from`, a finished
    study, each sample is of the rules its cut changed: it scales the share of the part its rules
    took there, and the cuts' savings add up (their jobs are others); `chained`: each cut's sample
    run by the code after the one before it, so that their factors multiply."""
    study, earlier = studied(), earlier or {}
    measured_cuts = []
    for before, after in cuts:
        ratios = cut_ratios(before, after, totals, measure)
        shares = rule_shares(before, shares_from, part) if shares_from else pd.Series(1.0, ratios.index)
        measured_cuts.append(ratios.assign(share=shares.reindex(ratios.index).fillna(1.0)))
    yield (
        f"Each method's jobs of the same sample, run by the code before and after each cut ({measure} time: "
        + "; ".join(f"{before} against {after}" for before, after in cuts)
        + "), and the tuned study's job-hours (calibration + reported runs, (j)) scaled by its ratios"
        + (f" ({part} alone)" if part else "")
        + (f", each on the share of it the sample's rules took in {shares_from} (`share`)" if shares_from else "")
        + (", the cuts' factors multiplied (each measured on the code after the one before)" if chained else "")
        + (" and by earlier cuts' (`earlier`)" if earlier else "")
        + ".\n"
    )
    yield "| method | jobs | before (h) | after (h) | ratio | factor | earlier | study (j) (h) | projected (h) |"
    yield "|---|---|---|---|---|---|---|---|---|"
    total = projected = 0.0
    for method, row in study.iterrows():
        rows = [c.loc[method] for c in measured_cuts if method in c.index]
        factor = combined([(r.share, r.ratio) for r in rows], chained)
        hours, before_cut = row.sum(), earlier.get(method, 1.0)
        cut = row[part] if part else hours  # the job-hours the samples' ratios apply to
        scaled = (hours - cut + cut * factor) * before_cut
        total, projected = total + hours, projected + scaled
        cells = "0 | | | 1"
        if rows:
            share = [f" (share {r.share:.2f})" if shares_from else "" for r in rows]
            cells = " | ".join(
                "; ".join(values)
                for values in (
                    [r.jobs for r in rows],
                    [f"{r.wall_before:.3f}" for r in rows],
                    [f"{r.wall_after:.3f}" for r in rows],
                    [f"{r.ratio:.2f}{s}" for r, s in zip(rows, share)],
                )
            )
        yield f"| {method} | {cells} | {factor:.2f} | {before_cut:.2f} | {hours:.2f} | {scaled:.2f} |"
    yield f"| all | | | | | | | {total:.2f} | {projected:.2f} |"
    yield f"\nProjected: {projected:.1f} job-hours, {projected / cores:.1f} h wall on {cores} cores."


def currency_of(rule, path):
    """The privacy currency a job's path names (eps1@approx/; a calibration stack's name after its
    rule's: train_hypotheses_approx_t1_...), or '' for a job of none."""
    m = re.search(r"@(\w+)", path)
    if m:
        return m[1]
    stem = path.rsplit("/", 1)[-1]
    return stem[len(rule) + 1 :].split("_")[0] if stem.startswith(f"{rule}_") else ""


PARTS = ["calibration", "reported", "other"]


def recorded_spans(root):
    """{log file, as Snakemake names it: (submitted, end)} of each job of the workflow in `root`, as
    Snakemake's metadata records them (one record per output, naming the job's log): the date of its
    incomplete marker, written as the job is submitted (a cluster's queue comes after), and its
    outputs' dates as it finished. A study restored on another machine keeps them, not its files'
    dates (expril.workflow.snapshot)."""
    spans = {}
    for record in (Path(root) / ".snakemake/metadata").rglob("*"):
        if record.is_file():
            meta = json.loads(record.read_text())
            for log in meta["log"] or []:
                start, end = spans.get(log, (math.inf, -math.inf))
                spans[log] = (min(start, meta["starttime"]), max(end, meta["endtime"]))
    return spans


def spent_jobs(results, calibration_from=10000, root=ROOT):
    """Every job of a finished study (its benchmark files) with its method, its currency ('none':
    the data and references, ExPriL's bins, which every currency shares), its part (calibration:
    seed blocks from `calibration_from`, `snakemake tune`'s runs; reported: the others; other: the
    jobs of no seed block, the plug-ins' audits) and its start and end (recorded_spans of the
    workflow in `root`, by the job's log; it started no earlier than its wall seconds before its
    end, whatever time it waited in a queue)."""
    jobs = measured(results)
    first = jobs["first"].astype(float)  # NaN: no block
    jobs["part"] = np.select([first >= calibration_from, first >= 0], PARTS[:2], PARTS[2])
    jobs["currency"] = [currency_of(r, p) or "none" for r, p in zip(jobs.rule, jobs.path)]
    spans = recorded_spans(root)
    logs = [os.path.relpath(log, root) for log in jobs.log]
    if missing := [log for log in logs if log not in spans]:
        raise SystemExit(f"{root}/.snakemake/metadata records no job of log {missing[0]} ({len(missing)} such)")
    submitted, jobs["end"] = zip(*(spans[log] for log in logs))
    jobs["start"] = np.maximum(submitted, jobs.end - jobs.wall)
    return jobs


def cost_table(jobs):
    """Tidy: method, currency, part, jobs, wall and CPU seconds summed over the jobs."""
    return (
        jobs.groupby(["method", "currency", "part"])
        .agg(jobs=("wall", "size"), wall_s=("wall", "sum"), cpu_s=("cpu", "sum"))
        .reset_index()
    )


def busy_seconds(starts, ends):
    """The length of the union of the intervals [start, end]: time when at least one job ran."""
    total, reach = 0.0, -math.inf
    for start, end in sorted(zip(starts, ends)):
        total += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return total


def run_spans(jobs):
    """Per part and all: the jobs, the first start, the last end, the elapsed seconds between them
    and the busy seconds (at least one job running: the elapsed less the pauses between
    invocations)."""
    rows = []
    for part, group in [*((p, jobs[jobs.part == p]) for p in PARTS), ("all", jobs)]:
        if group.empty:
            continue
        rows.append(
            {
                "part": part,
                "jobs": len(group),
                "first_start": pd.Timestamp(group.start.min(), unit="s", tz="UTC").isoformat(timespec="seconds"),
                "last_end": pd.Timestamp(group.end.max(), unit="s", tz="UTC").isoformat(timespec="seconds"),
                "elapsed_s": group.end.max() - group.start.min(),
                "busy_s": busy_seconds(group.start, group.end),
            }
        )
    return pd.DataFrame(rows)


def spent(results, out, calibration_from=10000, root=ROOT):
    """What a finished study cost, measured from its jobs' benchmark files: `out`/cost.csv (per
    method, currency and part: jobs, wall and CPU seconds), `out`/spans.csv (per part: the runs'
    wall time as they happened, from Snakemake's metadata in `root`) and `out`/cost.md (both as
    Markdown, with the totals), whose lines it returns."""
    jobs = spent_jobs(results, calibration_from, root)
    table, spans = cost_table(jobs), run_spans(jobs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "cost.csv", index=False)
    spans.to_csv(out / "spans.csv", index=False)
    lines = [
        f"Measured: the {len(jobs)} jobs of {results} (their benchmark files), by method, currency (none: the "
        "data and references, and ExPriL's bins, which every currency shares; the runs at ε = ∞ count in the "
        "currency that runs them) and part (calibration: `snakemake tune`'s seed block; other: the jobs of no "
        "seed block, the plug-ins' audits). Job-hours: wall seconds summed; CPU: CPU seconds summed.",
        "",
        "| method | currency | part | jobs | job-hours | CPU hours |",
        "|---|---|---|---|---|---|",
    ]
    totals = table.groupby(["currency", "part"], as_index=False)[["jobs", "wall_s", "cpu_s"]].sum()
    for r in [*table.itertuples(), *totals.assign(method="all").itertuples()]:
        lines.append(
            f"| {r.method} | {r.currency} | {r.part} | {r.jobs} | {r.wall_s / 3600:.2f} | {r.cpu_s / 3600:.2f} |"
        )
    lines += [
        "",
        "The runs as they happened (each job from its start to its end, from Snakemake's metadata and its "
        "wall seconds; busy: at least one job running, the pauses between invocations left out):",
        "",
        "| part | jobs | first start (UTC) | last end (UTC) | elapsed (h) | busy (h) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.part} | {r.jobs} | {r.first_start} | {r.last_end} | {r.elapsed_s / 3600:.2f} | {r.busy_s / 3600:.2f} |"
        for r in spans.itertuples()
    ]
    (out / "cost.md").write_text("\n".join(lines) + "\n")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measured", default="results/extended", help="results folder whose jobs are measured")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--cut",
        nargs=2,
        action="append",
        metavar=("BEFORE", "AFTER"),
        help="instead: two results folders of the same sample run by the code before and after a cut; "
        "projects RESULTS.md (j)'s study by each method's measured ratio (repeated: several cuts)",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="with --cut: the jobs' CPU time, not their wall time (samples that met unequal load)",
    )
    parser.add_argument(
        "--earlier",
        nargs="+",
        default=[],
        metavar="METHOD=RATIO",
        help="with --cut: an earlier cut's measured ratio for a method (its display name), applied before this one's",
    )
    parser.add_argument(
        "--totals",
        action="store_true",
        help="with --cut: all the jobs each folder ran (jobs before / after), for a cut that changes the job graph",
    )
    parser.add_argument(
        "--part",
        choices=["Calibration", "Reported runs"],
        help="with --cut: the part of the study the sample is of, the only one its ratios scale",
    )
    parser.add_argument(
        "--shares-from",
        metavar="RESULTS",
        help="with --cut and --part: a finished study; the sample is of the rules a cut changed, and each "
        "method's ratio scales the share of its part those rules took there (the rest unchanged)",
    )
    parser.add_argument(
        "--chained",
        action="store_true",
        help="with several --cut: each cut's sample run by the code after the one before it (the same cells), "
        "so that their ratios multiply; without it the cuts change disjoint jobs and their savings add up",
    )
    parser.add_argument(
        "--spent",
        action="store_true",
        help="instead: the measured job-hours and CPU hours of --measured per method, currency and part, and "
        "its runs' wall time as they happened, written to --out",
    )
    parser.add_argument("--out", help="with --spent: the folder of cost.csv, spans.csv, cost.md (<measured>/cost)")
    args = parser.parse_args()
    if args.spent:
        lines = spent(args.measured, args.out or f"{args.measured}/cost")
    else:
        earlier = {method: float(ratio) for method, _, ratio in (e.rpartition("=") for e in args.earlier)}
        lines = (
            projection(
                args.cut,
                args.cores,
                earlier,
                args.totals,
                args.part,
                args.shares_from,
                "cpu" if args.cpu else "wall",
                args.chained,
            )
            if args.cut
            else report(args.measured, args.cores)
        )
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
