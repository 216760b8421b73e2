"""AIM's cost per release (expril.rivals.aim.fit; docs/performance.md, "Where an AIM release spends its
time"), before and after OpenDP's contingency-table measurement is shared by a block's seeds, and
with mbi's estimator or the star estimator compiled once per process.

    .venv/bin/python -m benchmarks.aim_cost [--dataset CTG-B] [--eps 1] [--blocks 1,3] [--configs after,star]
    .venv/bin/python -m benchmarks.aim_cost --blocks 1 --configs after,cached,cached

Each (configuration, block size) runs in a fresh process with one thread: it imports OpenDP,
polars, mbi and JAX, then fits AIM on the validation split of each seed of the block (seeds 0..b-1:
the workflow's data, split and bins for that eps; `--dataset table`: a synthetic table of 700 rows,
22 features of 5-10 bins and a label), as `expril.steps.curator` does for `aim_release`. Printed, in seconds of wall
time and, where two are given, of the process's CPU time (steadier on a shared machine):

- import: the process's start to JAX's first array (OpenDP, polars, mbi, JAX and its backend);
- compile: JAX tracing, lowering and XLA compilation (jax.monitoring's durations), all releases;
- measurement: building OpenDP's contingency-table measurement (its one-way noise scale search);
- rest of fit: the releases' other work (AIM's rounds without compilation: selection, measurement,
  mbi's estimation, scoring);
- block and per release: the whole block, and per release without the import.

`before` builds OpenDP's measurement for every release, as `query.release()` did before it was
shared; `after` builds it once per process; both fit with mbi's estimator, as OpenDP ships it;
`floor` is `after` with the one-way scale searched from a floor (expril.rivals.aim
`_search_from_floor`); `star` is the current code, `floor` with the star estimator
(expril.rivals.star_estimator);
`cached` is `after` with JAX's persistent compilation cache in a folder the report's `cached`
rows share (the first fills it, the next reuse it), every program cached however short its
compilation; its rows print the cache's hits and misses (the whole
process: the fits and the scoring after them); `unoptimised` is `after` with XLA's optimisations
off (`JAX_DISABLE_MOST_OPTIMIZATIONS`). Each release's accounted eps and the mean L1 error of its
model's (feature, label) marginals against the records' are printed too (OpenDP's noise cannot be
seeded: compare their spread, not their values). Last, how many measurements a block of 20 seeds
builds on each dataset (one per distinct list of bin counts).
Timings on a shared machine move by 10-20 %.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]


def block_data(dataset, eps, seeds, config=None):
    """[(x, y, edges)] of the seeds: the workflow's validation split and bins for this eps
    (`config`: the planned configuration, loaded here if not given)."""
    import numpy as np

    from expril import datasets, settings, tables
    from expril.method import binning
    from expril.workflow.config import planned_config

    if dataset == "table":  # bins per feature fixed, as q is for a dataset and eps
        out, q = [], np.random.default_rng(22).integers(5, 11, 22)
        for seed in seeds:
            g = np.random.default_rng(seed)
            y = g.integers(0, 2, 700)
            x = g.normal(size=(700, 22)) + np.outer(y, g.uniform(-1, 1, 22))
            out.append((x, y, [binning.feature_edges(g.normal(size=700), int(k)) for k in q]))
        return out
    config = config or planned_config(ROOT)
    spec = config["benchmarks"][dataset]
    table = None
    if spec["generator"] == "csv":
        table = tables.load(dataset, spec | {"csv": ROOT / spec["csv"]})
    val_fraction = settings.benchmark_setting(config, spec, "val_fraction")
    out = []
    for seed in seeds:
        source, target_x, target_y = datasets.generate(dataset, spec, seed, table)
        x, y = datasets.split_target(target_x, target_y, val_fraction, dataset, seed)[:2]
        q = settings.bins_per_feature(
            len(y), source.shape[1], config["iterations"], eps, config["bins"]["snr"], config["bins"]["noiseless"]
        )
        out.append((x, y, binning.make_bins(source, q)))
    return out


def marginal_l1(model, x, y, edges):
    """Mean over features of the L1 distance between the model's (feature, label) marginal
    (normalised, OpenDP's null categories left out) and the records'."""
    import numpy as np

    from expril.method import binning
    from expril.rivals import aim

    ids, l1 = binning.feature_bin_ids(edges, x), []
    for j, size in enumerate(len(e) + 1 for e in edges):
        truth = np.zeros((size, 2))
        np.add.at(truth, (ids[:, j], y), 1 / len(y))
        fitted = np.asarray(model.project((f"x{j}", aim.LABEL)).datavector(flatten=False))[:size, :2]
        l1.append(np.abs(fitted / fitted.sum() - truth).sum())
    return float(np.mean(l1))


def child(args):
    """One process: a block of releases; prints one JSON line."""
    from expril.rivals import aim

    aim._import(1)
    import jax
    from jax import monitoring

    jax.numpy.zeros(1).block_until_ready()
    imported, import_cpu = time.perf_counter() - START, time.process_time()
    runs = block_data(args.dataset, args.eps, range(args.block))
    compile_events = (
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    )
    spent_on, built, fitting = {"compile": 0.0, "measurement": 0.0, "measurement_cpu": 0.0}, [], [True]

    def on_event(event, duration, **kw):
        if event in compile_events and fitting[0]:  # the scoring after the fits compiles too: not counted
            spent_on["compile"] += duration

    monitoring.register_event_duration_secs_listener(on_event)
    cache = {"/jax/compilation_cache/cache_hits": 0, "/jax/compilation_cache/cache_misses": 0}
    monitoring.register_event_listener(lambda event, **kw: event in cache and cache.update({event: cache[event] + 1}))
    build = aim._table_measurement

    def timed_build(*a, **k):
        t0, c0 = time.perf_counter(), time.process_time()
        measurement = build(*a, **k)
        spent_on["measurement"] += time.perf_counter() - t0
        spent_on["measurement_cpu"] += time.process_time() - c0
        if not any(measurement is m for m in built):
            built.append(measurement)
        return measurement

    aim._table_measurement = timed_build
    if args.config != "star":  # the configurations measured before the star estimator: mbi's own
        import opendp.prelude as dp

        aim._estimator = lambda domain, m, potentials=None: dp.mbi.mirror_descent(domain, m, potentials=potentials)
    if args.config not in ("floor", "star"):  # and before the search from a floor: OpenDP's own
        import opendp.extras.mbi._table as table_internals

        table_internals.binary_search_param = table_internals.binary_search_param.unbounded
        aim._search_from_floor = lambda search: search  # fit's imports would wrap it again
    fitted, t0, c0 = [], time.perf_counter(), time.process_time()
    for x, y, edges in runs:
        if args.config == "before":
            aim._MEASUREMENTS.clear()
        fitted.append(aim.fit(x, y, edges, args.eps))
    fits, fits_cpu = time.perf_counter() - t0, time.process_time() - c0
    fitting[0] = False
    releases = [
        {"spent": spent, "l1": marginal_l1(model, x, y, edges)} for (model, spent), (x, y, edges) in zip(fitted, runs)
    ]
    print(
        json.dumps(
            {
                "import": imported,
                "import_cpu": import_cpu,
                "fits": fits,
                "fits_cpu": fits_cpu,
                "releases": releases,
                "built": len(built),
                "cache": list(cache.values()),
                **spent_on,
            }
        )
    )


def run(config, block, dataset, eps, jax_cache):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if config == "cached":
        env |= {
            "JAX_COMPILATION_CACHE_DIR": jax_cache,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        }
    if config == "unoptimised":
        env["JAX_DISABLE_MOST_OPTIMIZATIONS"] = "1"
    command = [sys.executable, "-m", "benchmarks.aim_cost", "--child", "--config", config, "--block", str(block)]
    command += ["--dataset", dataset, "--eps", str(eps)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def distinct_measurements(eps, runs=20):
    """Per dataset of config.yaml, how many measurements a block of `runs` seeds builds: one per
    distinct list of the features' bin counts (ties in CTG's discrete features merge bins)."""
    from expril.workflow.config import planned_config

    config = planned_config(ROOT)
    return {
        d: len({tuple(len(e) + 1 for e in edges) for _, _, edges in block_data(d, eps, range(runs), config)})
        for d in config["benchmarks"]
    }


def report(dataset="CTG-B", eps=1.0, blocks=(1, 3), configs=("after", "floor", "star")):
    """The timings as Markdown lines, one row per (block, configuration), printed as measured."""
    yield (
        f"{dataset}, ε {eps:g}, one thread, each row a fresh process (`benchmarks/aim_cost.py`); seconds of wall "
        f"time / CPU time (the machine is shared: compare CPU); load average {os.getloadavg()[0]:.1f} at the start. "
        "`before` builds OpenDP's measurement for every release, `after` once per process and list of bin "
        "counts, both fitting with mbi's estimator; `floor` is `after` with the one-way noise scale searched "
        "from a floor; `star` is `floor` with the star estimator, compiled once per process (the code). "
        "At a block of 1 `before` and `after` run the same code: their difference is the timings' noise floor. "
        "Timings leave out the scoring of the marginals, done after the fits."
        + (
            " `cached` is `after` with JAX's persistent compilation cache, one folder for the cached rows (the first"
            " fills it), every program cached; in brackets the cache's hits and misses, fits and scoring."
            if "cached" in configs
            else ""
        )
        + (
            " `unoptimised` is `after` with XLA's optimisations off (JAX_DISABLE_MOST_OPTIMIZATIONS)."
            if "unoptimised" in configs
            else ""
        )
        + "\n"
    )
    yield (
        "| configuration | block | import | JAX compile | measurement (built) | rest of fit | block | per release | "
        "ε accounted | mean L1 of (feature, label) marginals |"
    )
    yield "|---|---|---|---|---|---|---|---|---|---|"
    jax_cache = tempfile.TemporaryDirectory()
    for block in blocks:
        for config in configs:
            r = run(config, block, dataset, eps, jax_cache.name)
            rest = r["fits"] - r["compile"] - r["measurement"]
            spent = sorted({repr(x["spent"]) for x in r["releases"]})
            l1 = ", ".join(f"{x['l1']:.3f}" for x in r["releases"])
            hits = " ({} hits, {} misses)".format(*r["cache"]) if config == "cached" else ""
            yield (
                f"| {config}{hits} | {block} | {r['import']:.1f} / {r['import_cpu']:.1f} | {r['compile']:.1f} | "
                f"{r['measurement']:.1f} / {r['measurement_cpu']:.1f} ({r['built']}) | {rest:.1f} | "
                f"{r['import'] + r['fits']:.1f} / {r['import_cpu'] + r['fits_cpu']:.1f} | "
                f"{r['fits'] / block:.1f} / {r['fits_cpu'] / block:.1f} | {', '.join(spent)} | {l1} |"
            )
    counts = distinct_measurements(eps)
    yield (
        f"\nMeasurements a block of 20 seeds builds at ε {eps:g} (the reported study's block): "
        + ", ".join(f"{d} {n}" for d, n in counts.items())
        + "."
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="CTG-B", help="a dataset of config.yaml, or 'table'")
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--blocks", default="1,3", help="block sizes, comma-separated")
    parser.add_argument("--configs", default="after,floor,star")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--block", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    blocks = [int(b) for b in args.blocks.split(",")]
    for line in report(args.dataset, args.eps, blocks, args.configs.split(",")):
        print(line, flush=True)


if __name__ == "__main__":
    main()
