"""Measure the workflow on this machine and write benchmarks/RESULTS.md.

    .venv/bin/python -m benchmarks.pipeline               # everything (about two hours on 2 cores)
    .venv/bin/python -m benchmarks.pipeline --parts de    # only parts d and e (d alone about an hour),
                                                          # keeping the others
    .venv/bin/python -m benchmarks.pipeline --parts h --extended-runs 3 --extended-reuse
                                                          # h from the study already in results/extended

Figures: (a) wall time of the full reproduction and of the smoke configuration; (b) the share
of wall time outside the steps' own work, from per-job timings; (c) no-op rerun and dry-run
times; (d) batched against one-at-a-time training of the same networks; (e) one ExPriL
iteration's cost against n and d; (f) peak memory of the largest job; (g) what early stopping
does to Table 2 against fixed 100-epoch training on the same runs; (h) the comparison study
(config/extended.yaml, EXTENDED_RUNS runs): its wall time and each method's cost per run; on
request, (i) the DP-SGD block trainer against Opacus, (j) the tuned study's cost model, (k) an
AIM release's cost before and after OpenDP's measurement is shared, (l) and after its noise scale
is searched from a floor and its estimator compiled once, (m) the study's cost after a cut, from a
sample run by the code before and after it (`--cut BEFORE AFTER`), (r) what a finished study in
results/extended cost, by method and currency (round 2's).
"""

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from expril.io import save_text
from expril.plugins import registry

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "RESULTS.md"
SUBSET = ["runs=10", "seed_block=10"]
EXTENDED_RUNS = 10
# The jobs each compared method runs (ExPriL's C and I share h_0, h_1 and their queries); the data,
# the split, h* and the evaluations serve every method.
METHOD_RULES = {
    "ExPriL (C and I)": [
        "make_bins",
        "oracle_marginals",
        "reweight_source",
        "oracle_errors",
        "estimate_labels",
        "train_hypothesis",
        "train_hypotheses",  # the calibration's, stacked (rules/stacked.smk)
    ],
} | {method.display: [step.rule for step in method.steps] for method in registry.methods().values() if not method.bases}
# ExPriL with Pb. 1 by MMD (its plug-in's rules; before it was one, its embedding query and the jobs of
# its eps<e>-mmd/ runs): on C, D, E, CTG-B.
MMD_RULES = [step.rule for step in registry.methods()["mmd"].steps]


def snakemake(*args):
    """Run Snakemake in the repository; return its wall time in seconds."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def fresh_run(results, *args, config=()):
    """Run into an emptied results folder. Every --config key goes in one --config: a second one
    replaces the first."""
    shutil.rmtree(ROOT / results, ignore_errors=True)
    return snakemake(*args, "--config", f"results={results}", *config)


def machine():
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    import torch

    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, torch {torch.__version__}"


def job_times(results):
    """Per job: rule, dataset, eps (None where the job has none), wall and CPU seconds, peak RSS
    (Snakemake's benchmark files), the step's own seconds (logged by expril.steps.blocks.timed), the
    job's benchmark path below the rule's folder and its log file."""
    rows = []
    for tsv in (ROOT / results / "benchmarks").rglob("*.tsv"):
        rule, *parts = tsv.relative_to(ROOT / results / "benchmarks").with_suffix("").parts
        bench = pd.read_csv(tsv, sep="\t").iloc[0]
        log = ROOT / results / "logs" / tsv.relative_to(ROOT / results / "benchmarks").with_suffix(".log")
        step = re.findall(r"step seconds: ([0-9.]+)", log.read_text()) if log.exists() else []
        eps = next((part[3:] for part in parts if part.startswith("eps")), None)
        rows.append(
            {
                "rule": rule,
                "dataset": parts[0] if parts else None,
                "eps": eps,
                "wall": bench["s"],
                "cpu": bench["cpu_time"],
                "max_rss_mb": bench["max_rss"],
                "step": float(step[-1]) if step else 0.0,
                "path": "/" + "/".join(parts),
                "log": log,
            }
        )
    return pd.DataFrame(rows)


def overhead(results, wall, cores):
    """Share of the cores' wall time not spent inside the steps themselves."""
    jobs = job_times(results)
    capacity = wall * cores
    return {
        "jobs": len(jobs),
        "step": jobs["step"].sum(),
        "startup": (jobs["wall"] - jobs["step"]).sum(),
        "idle": capacity - jobs["wall"].sum(),
        "share": 1 - jobs["step"].sum() / capacity,
        "peak": jobs.loc[jobs["max_rss_mb"].idxmax()],
    }


def batched_vs_single():
    """The pipeline's mix of networks (every dataset's h* for the seeds of one of config.yaml's
    seed blocks) trained as the workflow does, one process per dataset training its seeds as one
    block, and one process per network, as a job-per-network pipeline would. Returns one row per
    dataset."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    n_nets = config["seed_block"]
    last = n_nets - 1
    # The step's own time goes to {o}.seconds, to show what start-up adds; expril.method.training is
    # imported first because the step would otherwise import torch inside the timing.
    call = (
        "from expril import steps, training; import time, yaml; c = yaml.safe_load(open('config.yaml'));"
        "start = time.perf_counter();"
        "evaluator.reference_models('{v}', '{t}', '{o}.csv', '{o}.npz', '{name}',"
        " c['benchmarks']['{name}']['hidden'], c['training'], 'cpu', 1);"
        "open('{o}.seconds', 'w').write(str(time.perf_counter() - start))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def run(name, v, t, o):
        """One process, as one workflow job; returns its wall time and the step's own time."""
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", call.format(v=v, t=t, o=o, name=name)], cwd=ROOT, env=env, check=True)
        return np.array([time.perf_counter() - start, float(Path(f"{o}.seconds").read_text())])

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        targets = [
            tmp / f"curator/{name}/0-{last}/target_{k}.npz" for name in config["datasets"] for k in ("val", "test")
        ]
        snakemake("--config", f"runs={n_nets}", f"seed_block={n_nets}", f"results={tmp}", "--", *map(str, targets))
        for name in config["datasets"]:
            split = {k: tmp / f"curator/{name}/0-{last}/target_{k}.npz" for k in ("val", "test")}
            for k, path in split.items():
                arrays = np.load(path)
                for b in range(n_nets):
                    np.savez(
                        tmp / f"{name}_{k}{b}.npz",
                        x=arrays["x"][b : b + 1],
                        y=arrays["y"][b : b + 1],
                        seeds=arrays["seeds"][b : b + 1],
                    )
            batched, batched_step = run(name, split["val"], split["test"], tmp / f"{name}_block")
            single, single_step = sum(
                run(name, tmp / f"{name}_val{b}.npz", tmp / f"{name}_test{b}.npz", tmp / f"{name}_single{b}")
                for b in range(n_nets)
            )
            block = pd.read_csv(tmp / f"{name}_block.csv")["h_star"].tolist()
            alone = [pd.read_csv(tmp / f"{name}_single{b}.csv")["h_star"].item() for b in range(n_nets)]
            print(f"(d) {name}: batched {batched:.1f} s, one at a time {single:.1f} s", flush=True)
            rows.append(
                {
                    "dataset": name,
                    "hidden": config["benchmarks"][name]["hidden"],
                    "networks": n_nets,
                    "batched": batched,
                    "single": single,
                    "batched_step": batched_step,
                    "single_step": single_step,
                    "same": block == alone,
                }
            )
    return pd.DataFrame(rows)


def iteration_cost():
    """One ExPriL iteration (error query, label estimate, training of h_1) for a block of 10
    seeds, in one process, against the source size n and the dimension d."""
    code = r"""
import sys, time, tempfile, numpy as np
from pathlib import Path
from expril.privacy import mechanisms
from expril.steps import curator, evaluator, learner, world
n, d = int(sys.argv[1]), int(sys.argv[2])
spec = {"generator": "latent", "latent_dim": 3, "dim": d, "components": 3, "n_source": n, "n_target": n,
        "importance_sampling": False, "hidden": [32, 32]}
training = {"epochs": 100, "batch_size": 64, "lr": 1e-3, "holdout": 0.2, "patience": 10}
mechanism = mechanisms.Paper(1.0, 0.0, d, 1, False).param()   # lambda = 2d
solver = {"ridge": 1e-3, "steps": 2000, "tol": 1e-6}
t = Path(tempfile.mkdtemp())
seeds = list(range(10))
world.generate_data(t / "s.npz", t / "t.npz", "bench", spec, seeds, "data")
curator.split_target(t / "t.npz", t / "v.npz", t / "e.npz", "bench", 0.5)
learner.reweight_source(t / "s.npz", t / "w.npz", t / "b.npz", 10, solver, mechanism)
learner.init_hypothesis(t / "h0.npz", seeds)
start = time.perf_counter()
curator.oracle_errors(t / "v.npz", t / "b.npz", t / "h0.npz", t / "q0.npz", t / "l.csv", "bench", "q0", mechanism)
learner.estimate_labels(t / "s.npz", t / "w.npz", t / "b.npz", [t / "h0.npz"], [t / "q0.npz"], t / "y.npz", solver,
                        mechanism)
learner.train_hypothesis(t / "s.npz", t / "w.npz", t / "y.npz", t / "h1.npz", [32, 32], training, ["b"], "cpu", 1)
print(time.perf_counter() - start)
"""
    rows = []
    for n, d in [(1000, 10), (2500, 10), (5000, 10), (10000, 10), (5000, 2), (5000, 25), (5000, 50)]:
        out = subprocess.run(
            [sys.executable, "-c", code, str(n), str(d)],
            cwd=ROOT,
            check=True,
            text=True,
            capture_output=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        rows.append({"n": n, "d": d, "seconds": float(out.stdout.split()[-1])})
    return pd.DataFrame(rows)


def early_stopping_effect(full_results):
    """Table 2 of runs 0-9 with early stopping (taken from the full reproduction: a run's result
    does not depend on its seed block) against the same runs trained 100 fixed epochs on all
    samples (patience 0)."""
    from expril.reports import reproduction

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as overlay:
        # A nested key needs a config file: --config would pass patience as the string '0'.
        yaml.safe_dump({"training": {"patience": 0}}, overlay)
        overlay.flush()
        fixed = fresh_run("results/bench_fixed", "--configfile", overlay.name, config=SUBSET)
    long = pd.read_csv(ROOT / full_results / "accuracies.csv")
    early = reproduction.table2(long[long["seed"] < 10], config["datasets"], config["iterations"])
    a = early.set_index(["dataset", "method"])
    b = pd.read_csv(ROOT / "results/bench_fixed/table2.csv").set_index(["dataset", "method"])
    cells = a.merge(b, how="left", left_index=True, right_index=True, suffixes=("_early", "_fixed"))
    cells = cells.drop(index="ratio", level=1)
    cells["difference"] = cells["mean_early"] - cells["mean_fixed"]
    # The difference of two means over the same 10 runs, against the run-to-run spread.
    cells["spread"] = cells[["std_early", "std_fixed"]].max(axis=1)
    return fixed, cells.reset_index()


def section_abf(cores):
    lines = [
        "Overhead = 1 − (time inside the steps) / (wall time × cores): process start-up, imports,"
        " scheduling and idle cores all count as overhead.\n",
        "| configuration | jobs | wall | inside steps | start-up and imports | idle cores | overhead "
        "| largest job (peak RSS) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, (results, extra) in {
        "full (config.yaml, 100 runs)": ("results", []),
        "smoke": ("results/smoke", ["--configfile", "tests/smoke.yaml"]),
    }.items():
        wall = fresh_run(results, *extra)
        o = overhead(results, wall, cores)
        lines.append(
            f"| {name} | {o['jobs']} | {wall / 60:.1f} min | {o['step']:.0f} s | {o['startup']:.0f} s |"
            f" {o['idle']:.0f} s | {o['share']:.1%} | {o['peak']['rule']}: {o['peak']['max_rss_mb']:.0f} MB |"
        )
    return lines


def section_c():
    with tempfile.TemporaryDirectory() as empty:
        dry = snakemake("--dry-run", "--config", f"results={empty}")
    lines = [f"- dry run of the full configuration, nothing yet computed: {dry:.1f} s"]
    finished = (
        "Nothing to be done"
        in subprocess.run(
            [sys.executable, "-m", "snakemake", "--dry-run"], cwd=ROOT, capture_output=True, text=True
        ).stdout
    )
    lines.append(
        f"- no-op rerun of the finished full reproduction: {snakemake():.1f} s"
        if finished
        else "- no-op rerun: not measured, results/ holds no finished full reproduction (run part a first)"
    )
    return lines


def section_d():
    rows = batched_vs_single()
    lines = [
        f"Every dataset's h* for one seed block of config.yaml ({rows['networks'][0]} seeds, early stopping),"
        " trained as the workflow trains them, one process per dataset training its seeds as one block, and"
        " one process per network, as a job-per-network pipeline would. Wall times include each process's"
        " start-up (Python, torch and expril imports); 'step only' counts the step's own time in each"
        " process after its imports (loading the split, training, scoring), as a loop in one process"
        " would train the networks one by one.\n",
        "| dataset | network | batched | one at a time | ratio | step only: batched | one at a time | ratio"
        " | identical accuracies |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    times = ["batched", "single", "batched_step", "single_step"]
    total = pd.DataFrame([{"dataset": "all", "hidden": "", **rows[times].sum(), "same": rows["same"].all()}])
    for r in pd.concat([rows, total]).itertuples():
        lines.append(
            f"| {r.dataset} | {r.hidden} | {r.batched:.1f} s | {r.single:.1f} s | {r.single / r.batched:.1f}x"
            f" | {r.batched_step:.1f} s | {r.single_step:.1f} s | {r.single_step / r.batched_step:.1f}x"
            f" | {r.same} |"
        )
    return lines


def section_e():
    cost = iteration_cost()
    lines = [
        "Error query, label estimate and training of h_1 for a block of 10 seeds ([32,32] networks,"
        " latent generator, q = 10), in one process:\n",
        "| n | d | seconds |",
        "|---|---|---|",
    ]
    return lines + [f"| {r.n} | {r.d} | {r.seconds:.1f} |" for r in cost.itertuples()]


def section_g():
    fixed, cells = early_stopping_effect("results")
    moved = (cells["difference"].abs() > cells["spread"]).sum()
    lines = [
        f"Runs 0-9 of every dataset, from the full reproduction (early stopping) and rerun with 100 epochs on"
        f" all samples ({fixed / 60:.1f} min). Cells whose mean moved by more than the run-to-run std:"
        f" {moved} of {len(cells)}.\n",
        "| dataset | method | early stopping | 100 epochs | difference | std |",
        "|---|---|---|---|---|---|",
    ]
    return lines + [
        f"| {r.dataset} | {r.method} | {r.mean_early:.1f} | {r.mean_fixed:.1f} | {r.difference:+.1f} | {r.spread:.1f} |"
        for r in cells.itertuples()
    ]


def section_h(cores, runs=EXTENDED_RUNS, epsilons=None, reuse=False):
    """The comparison study from an empty results folder, or (`reuse`) the job benchmarks of the
    one already in results/extended, built by earlier invocations: per-method costs, no wall time."""
    results = "results/extended"
    settings = [f"runs={runs}"] + ([f"epsilons=[{','.join(epsilons)}]"] if epsilons else [])
    command = f"`.venv/bin/snakemake compare --configfile config/extended.yaml --config {' '.join(settings)}`"
    wall = None if reuse else fresh_run(results, "compare", "--configfile", "config/extended.yaml", config=settings)
    jobs = job_times(results)
    config = yaml.safe_load((ROOT / "config/extended.yaml").read_text())
    n_eps = len(epsilons or config["epsilons"])
    study = (
        f"{len(jobs)} jobs, 7 datasets × {n_eps} ε × {runs} runs, ExPriL (C, I), LLP, DP-SGD, AIM, DP-MERF and"
        f" ExPriL by MMD (C, I)"
    )
    if wall is None:
        minutes = jobs.wall.sum() / 60
        head = (
            f"{command}, its jobs' own benchmarks in {results}, which earlier invocations built (no single wall"
            f" time: {minutes:.0f} job-minutes in all, so at least {minutes / cores:.0f} min wall on {cores} cores):"
            f" {study}.\n"
        )
    else:
        o = overhead(results, wall, cores)
        head = (
            f"{command} from an empty results folder: {study}: **{wall / 60:.1f} min** wall on {cores} cores"
            f" ({o['step']:.0f} s inside the steps, {o['startup']:.0f} s start-up and imports, {o['idle']:.0f} s"
            f" idle cores; largest job {o['peak']['rule']}, {o['peak']['max_rss_mb']:.0f} MB).\n"
        )
    return [head, *method_costs(jobs, runs, n_eps)]


def section_i():
    from benchmarks import dpsgd_batched

    return list(dpsgd_batched.report())


def section_j(cores):
    from benchmarks import study_cost

    return list(study_cost.report(cores=cores))


def section_k():
    from benchmarks import aim_cost

    return list(aim_cost.report(configs=("before", "after", "cached", "cached")))


def section_l():
    from benchmarks import aim_cost

    return list(aim_cost.report(blocks=(1, 5, 20), configs=("after", "floor", "star")))


def section_m(cut, cores):
    from benchmarks import study_cost

    return list(study_cost.projection([cut], cores))


def section_r(cores):
    from benchmarks import study_cost

    return list(study_cost.spent("results/extended", cores=cores))


def method_costs(jobs, runs, n_eps):
    """Each method's share of the comparison's job times (job_times), per run and eps, as a table."""
    lines = [
        "Each method's jobs, in seconds of job wall time (start-up included; step time after the slash) per"
        " run and ε, averaged over the ε values; ExPriL, LLP and DP-MERF train a seed block's networks as one"
        " batched model, DP-SGD and AIM one run after the other (expril/rivals/dpsgd.py,"
        " expril/rivals/aim.py). AIM reads"
        " ExPriL's bins (make_bins, counted under ExPriL); ExPriL by MMD is what its eps<ε>-mmd runs add"
        " (on the datasets with an IS step, blank elsewhere); the random feature maps of DP-MERF and"
        " ExPriL by MMD are shared:\n",
        "| dataset | "
        + " | ".join([*METHOD_RULES, "ExPriL by MMD (C and I)"])
        + " | shared (data, split, h*, feature maps, evaluation) |",
        "|---|" + "---|" * (len(METHOD_RULES) + 2),
    ]
    by_mmd = jobs.eps.fillna("").str.endswith("-mmd") | jobs.rule.isin(MMD_RULES)
    per_method = {m: jobs[jobs.rule.isin(r) & ~by_mmd] for m, r in METHOD_RULES.items()}
    per_method["ExPriL by MMD (C and I)"] = jobs[by_mmd]
    shared = jobs[~jobs.rule.isin([r for rules in METHOD_RULES.values() for r in rules]) & ~by_mmd]
    for dataset in [*sorted(jobs.dataset.dropna().unique()), "all"]:
        cells = []
        for part in [*per_method.values(), shared]:
            mine = part if dataset == "all" else part[part.dataset == dataset]
            scale = runs * n_eps * (mine.dataset.nunique() if dataset == "all" else 1)
            cells.append(f"{mine.wall.sum() / scale:.2f} / {mine.step.sum() / scale:.2f}" if len(mine) else "")
        lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    return lines


HEADER = (
    "# Benchmarks\n\nWritten by `.venv/bin/python -m benchmarks.pipeline [--parts ...]`; each section says"
    " on which machine and day it was measured; (n), the block trainer on CUDA, by `python -m"
    " benchmarks.gpu_training` on a lent GPU machine, and the sections from (o) on by the commands they"
    " name, kept when the pipeline rewrites the others.\n"
)


def sections(text):
    """The sections of an existing RESULTS.md, keyed by their heading's letters ('a, b, f', 'c', ...)."""
    found = re.split(r"^(?=## \()", text, flags=re.M)[1:]
    return {re.match(r"## \(([^)]*)\)", part).group(1): part.rstrip("\n") for part in found}


def document(kept):
    """RESULTS.md's text: the header and every section, measured now or kept, those written by
    hand after a measurement of their own ((o), (p), ...) included, in the order of their letters."""
    return HEADER + "".join(f"\n{kept[k]}\n" for k in sorted(kept))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extended-runs", type=int, default=EXTENDED_RUNS, help="runs of part h's comparison study")
    parser.add_argument("--extended-epsilons", help="part h's eps values, comma-separated (default: the study's)")
    parser.add_argument(
        "--extended-reuse",
        action="store_true",
        help="part h from the job benchmarks already in results/extended, without a fresh run",
    )
    parser.add_argument(
        "--parts",
        default="abcdegh",
        help="parts to measure (letters; a also gives b and f), the others are kept from RESULTS.md;"
        " default: the reproduction's and the untuned study's, about two hours on 2 cores. 'g' and the no-op"
        " rerun of 'c' need a finished full reproduction in results/; 'i' (DP-SGD, 15 min), 'j' (the tuned"
        " study's cost model, from the jobs in results/extended), 'k' (AIM's release, 15 min), 'l' (AIM's"
        " release after its cuts, 10 min) and 'r' (a finished study's job-hours, from results/extended) are"
        " measured on request",
    )
    parser.add_argument(
        "--cut",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        help="part 'm': two results folders of one sample of the study, run by the code before and after a cut"
        " (benchmarks/study_cost.py --cut)",
    )
    args = parser.parse_args()
    if "m" in args.parts and not args.cut:
        parser.error("part 'm' needs --cut BEFORE AFTER")
    cores = os.cpu_count()
    stamp = f"Measured on {machine()}, {time.strftime('%Y-%m-%d')}.\n"
    # Heading letters -> (title, measurement); a part is selected by its first letter.
    runners = {
        "a, b, f": ("Wall time, overhead and memory", lambda: section_abf(cores)),
        "c": ("Rerun and planning", section_c),
        "d": ("Batched against one-at-a-time training", section_d),
        "e": ("One ExPriL iteration against n and d", section_e),
        "g": ("Early stopping against 100 fixed epochs", section_g),
        "h": (
            "The comparison study: wall time and cost per method",
            lambda: section_h(
                cores,
                args.extended_runs,
                args.extended_epsilons and args.extended_epsilons.split(","),
                args.extended_reuse,
            ),
        ),
        "i": ("The DP-SGD block trainer against Opacus, one network at a time", section_i),
        "j": ("The tuned study's cost model", lambda: section_j(cores)),
        "k": ("AIM's cost per release, OpenDP's measurement built once per process", section_k),
        "l": (
            "AIM's cost per release, its noise scale searched from a floor and its estimator compiled once",
            section_l,
        ),
        "m": ("The tuned study's cost after a cut, measured on a sample", lambda: section_m(args.cut, cores)),
        "r": ("Round 2's study, what it cost: each method's and currency's job-hours", lambda: section_r(cores)),
    }
    kept = sections(OUT.read_text()) if OUT.exists() else {}
    for key, (title, measure) in runners.items():
        if key[0] in args.parts:
            kept[key] = "\n".join([f"## ({key}) {title}\n", stamp, *measure()])
            # Written after every part, so a long run that stops early keeps what it measured.
            save_text(OUT, document(kept))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
