"""Measure the workflow on this machine and write benchmarks/RESULTS.md.

    .venv/bin/python -m benchmarks.pipeline            # everything (about an hour on 2 cores)
    .venv/bin/python -m benchmarks.pipeline --quick    # skip the full 100-run reproduction

Figures: (a) wall time of the full reproduction and of the smoke configuration; (b) the share
of wall time outside the steps' own work, from per-job timings; (c) no-op rerun and dry-run
times; (d) batched against one-at-a-time training of the same networks; (e) one ExPriL
iteration's cost against n and d; (f) peak memory of the largest job; (g) what early stopping
does to Table 2 against fixed 100-epoch training on the same runs.
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "RESULTS.md"
SUBSET = ["--config", "runs=10", "seed_block=10"]


def snakemake(*args):
    """Run Snakemake in the repository; return its wall time in seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def fresh_run(results, *args):
    shutil.rmtree(ROOT / results, ignore_errors=True)
    return snakemake(*args, "--config", f"results={results}")


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    import torch
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, torch {torch.__version__}"


def job_times(results):
    """Per job: rule, wall seconds and peak RSS (Snakemake's benchmark files) and the step's own
    seconds (logged by expril.steps.timed)."""
    rows = []
    for tsv in (ROOT / results / "benchmarks").rglob("*.tsv"):
        rule = tsv.relative_to(ROOT / results / "benchmarks").parts[0]
        bench = pd.read_csv(tsv, sep="\t").iloc[0]
        log = ROOT / results / "logs" / tsv.relative_to(ROOT / results / "benchmarks").with_suffix(".log")
        step = re.findall(r"step seconds: ([0-9.]+)", log.read_text()) if log.exists() else []
        rows.append({"rule": rule, "wall": bench["s"], "max_rss_mb": bench["max_rss"],
                     "step": float(step[-1]) if step else 0.0})
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


def batched_vs_single(n_nets=32):
    """The same networks (dataset A's h*, one per seed) trained as one block, and one per process
    as a job-per-network pipeline would."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, "-m", "snakemake", "--config", f"runs={n_nets}", f"seed_block={n_nets}",
                        f"results={tmp}", "datasets=[A]", "--", f"{tmp}/curator/A/0-{n_nets - 1}/target_val.npz",
                        f"{tmp}/curator/A/0-{n_nets - 1}/target_test.npz"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        data = {k: np.load(tmp / f"curator/A/0-{n_nets - 1}/target_{k}.npz") for k in ("val", "test")}
        for k, arrays in data.items():
            for b in range(n_nets):
                np.savez(tmp / f"{k}{b}.npz", x=arrays["x"][b:b + 1], y=arrays["y"][b:b + 1],
                         seeds=arrays["seeds"][b:b + 1])
        call = ("from expril import steps; import yaml; c = yaml.safe_load(open('config.yaml'));"
                "steps.reference_models('{v}', '{t}', '{o}.csv', '{o}.npz', 'A', c['benchmarks']['A']['hidden'],"
                "c['training'], 'cpu', 1)")
        env = dict(os.environ, PYTHONPATH=str(ROOT))

        def run(v, t, o):
            subprocess.run([sys.executable, "-c", call.format(v=v, t=t, o=o)], cwd=ROOT, env=env, check=True)

        start = time.perf_counter()
        run(tmp / f"curator/A/0-{n_nets - 1}/target_val.npz", tmp / f"curator/A/0-{n_nets - 1}/target_test.npz",
            tmp / "block")
        batched = time.perf_counter() - start
        start = time.perf_counter()
        for b in range(n_nets):
            run(tmp / f"val{b}.npz", tmp / f"test{b}.npz", tmp / f"single{b}")
        single = time.perf_counter() - start
        block = pd.read_csv(tmp / "block.csv")
        alone = pd.concat([pd.read_csv(tmp / f"single{b}.csv") for b in range(n_nets)], ignore_index=True)
        same = block["h_star"].to_numpy().tolist() == alone["h_star"].to_numpy().tolist()
    return n_nets, batched, single, same


def iteration_cost():
    """One ExPriL iteration (error query, label estimate, training of h_1) for a block of 10
    seeds, in one process, against the source size n and the dimension d."""
    code = r"""
import sys, time, tempfile, numpy as np
from pathlib import Path
from expril import steps
n, d = int(sys.argv[1]), int(sys.argv[2])
spec = {"generator": "latent", "latent_dim": 3, "dim": d, "components": 3, "n_source": n, "n_target": n,
        "importance_sampling": False, "hidden": [32, 32]}
training = {"epochs": 100, "batch_size": 64, "lr": 1e-3, "holdout": 0.2, "patience": 10}
privacy = {"eps": 1.0, "mechanism": "paper", "planned_queries": 2, "sensitivity": d, "scale": 2.0 * d}
solver = {"ridge": 1e-3, "steps": 2000, "tol": 1e-6}
t = Path(tempfile.mkdtemp())
seeds = list(range(10))
steps.generate_data(t / "s.npz", t / "t.npz", "bench", spec, seeds, "data")
steps.split_target(t / "t.npz", t / "v.npz", t / "e.npz", "bench", 0.5)
steps.reweight_source(t / "s.npz", t / "w.npz", t / "b.npz", 10, solver, "paper")
steps.init_hypothesis(t / "h0.npz", seeds)
start = time.perf_counter()
steps.oracle_errors(t / "v.npz", t / "b.npz", t / "h0.npz", t / "q0.npz", t / "l.csv", "bench", "q0", privacy)
steps.estimate_labels(t / "s.npz", t / "w.npz", t / "b.npz", [t / "h0.npz"], [t / "q0.npz"], t / "y.npz", solver)
steps.train_hypothesis(t / "s.npz", t / "w.npz", t / "y.npz", t / "h1.npz", [32, 32], training, ["b"], "cpu", 1)
print(time.perf_counter() - start)
"""
    rows = []
    for n, d in [(1000, 10), (2500, 10), (5000, 10), (10000, 10), (5000, 2), (5000, 25), (5000, 50)]:
        out = subprocess.run([sys.executable, "-c", code, str(n), str(d)], cwd=ROOT, check=True, text=True,
                             capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        rows.append({"n": n, "d": d, "seconds": float(out.stdout.split()[-1])})
    return pd.DataFrame(rows)


def early_stopping_effect(full_results):
    """Table 2 of runs 0-9 with early stopping (taken from the full reproduction: a run's result
    does not depend on its seed block) against the same runs trained 100 fixed epochs on all
    samples (patience 0)."""
    from expril import report
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    fixed = fresh_run("results/bench_fixed", *SUBSET, "training={patience: 0}")
    long = pd.read_csv(ROOT / full_results / "accuracies.csv")
    early = report.table2(long[long["seed"] < 10], config["datasets"], config["iterations"])
    a = early.set_index(["dataset", "method"])
    b = pd.read_csv(ROOT / "results/bench_fixed/table2.csv").set_index(["dataset", "method"])
    cells = a.join(b, lsuffix="_early", rsuffix="_fixed").drop(index="ratio", level=1)
    cells["difference"] = cells["mean_early"] - cells["mean_fixed"]
    # The difference of two means over the same 10 runs, against the run-to-run spread.
    cells["spread"] = cells[["std_early", "std_fixed"]].max(axis=1)
    return fixed, cells.reset_index()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the full 100-run reproduction")
    args = parser.parse_args()
    cores = os.cpu_count()
    lines = [f"# Benchmarks\n", f"Machine: {machine()}. Written by `.venv/bin/python -m benchmarks.pipeline`"
             f"{' --quick' if args.quick else ''} on {time.strftime('%Y-%m-%d')}.\n"]

    runs = {} if args.quick else {"full (config.yaml, 100 runs)": ("results", [])}
    runs["smoke"] = ("results/smoke", ["--configfile", "tests/smoke.yaml"])
    lines += ["## (a, b, f) Wall time, overhead and memory\n",
              "Overhead = 1 − (time inside the steps) / (wall time × cores): process start-up, imports,"
              " scheduling and idle cores all count as overhead.\n",
              "| configuration | jobs | wall | inside steps | start-up and imports | idle cores | overhead | largest job (peak RSS) |",
              "|---|---|---|---|---|---|---|---|"]
    for name, (results, extra) in runs.items():
        wall = fresh_run(results, *extra)
        o = overhead(results, wall, cores)
        lines.append(f"| {name} | {o['jobs']} | {wall / 60:.1f} min | {o['step']:.0f} s | {o['startup']:.0f} s |"
                     f" {o['idle']:.0f} s | {o['share']:.1%} | {o['peak']['rule']}: {o['peak']['max_rss_mb']:.0f} MB |")
        if name != "smoke":
            noop = snakemake("--config", f"results={results}")
    lines.append("")
    OUT.write_text("\n".join(lines) + "\n")

    with tempfile.TemporaryDirectory() as empty:
        dry = snakemake("--dry-run", "--config", f"results={empty}")
    lines += ["## (c) Rerun and planning\n", f"- dry run of the full configuration, nothing yet computed: {dry:.1f} s"]
    if not args.quick:
        lines.append(f"- no-op rerun of the finished full reproduction: {noop:.1f} s")
    lines.append("")

    n_nets, batched, single, same = batched_vs_single()
    lines += ["## (d) Batched against one-at-a-time training\n",
              f"Dataset A's h* (the [16,256,256,16] network, 1,250 samples, early stopping) for {n_nets} seeds:"
              f" one process training the {n_nets} networks as one block: {batched:.1f} s; one process per"
              f" network, as a job-per-network pipeline: {single:.1f} s; ratio {single / batched:.1f}x."
              f" Identical accuracies either way: {same}.\n"]
    OUT.write_text("\n".join(lines) + "\n")

    cost = iteration_cost()
    lines += ["## (e) One ExPriL iteration against n and d\n",
              "Error query, label estimate and training of h_1 for a block of 10 seeds ([32,32] networks,"
              " latent generator, q = 10), in one process:\n", "| n | d | seconds |", "|---|---|---|"]
    lines += [f"| {r.n} | {r.d} | {r.seconds:.1f} |" for r in cost.itertuples()]
    lines.append("")
    OUT.write_text("\n".join(lines) + "\n")

    if args.quick:
        OUT.write_text("\n".join(lines) + "\n")
        return
    fixed, cells = early_stopping_effect("results")
    moved = (cells["difference"].abs() > cells["spread"]).sum()
    lines += ["## (g) Early stopping against 100 fixed epochs\n",
              f"Runs 0-9 of every dataset, from the full reproduction (early stopping) and rerun with 100 epochs on"
              f" all samples ({fixed / 60:.1f} min). Cells whose mean moved by more than the run-to-run std:"
              f" {moved} of {len(cells)}.\n",
              "| dataset | method | early stopping | 100 epochs | difference | std |", "|---|---|---|---|---|---|"]
    lines += [f"| {r.dataset} | {r.method} | {r.mean_early:.1f} | {r.mean_fixed:.1f} | {r.difference:+.1f} |"
              f" {r.spread:.1f} |" for r in cells.itertuples()]
    OUT.write_text("\n".join(lines) + "\n")
    print(OUT.read_text())


if __name__ == "__main__":
    main()
