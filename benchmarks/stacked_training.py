"""Issue #35, item 4: ExPriL's hypotheses h_t of one dataset, seed block and iteration, trained as
one job per run trains them (learner.train_hypothesis: one call per eps, currency, setting and
variant) and stacked (learner.train_hypotheses: one call per network shape, as rules/stacked.smk
runs the calibration's), from a finished study's files. Each stacked file is checked byte for byte
against the one-run file and against the study's model file.

    .venv/bin/python -m benchmarks.stacked_training [--results results/extended] [--dataset E]
        [--seeds 10000-10004] [--t 1] [--currency @approx]

The runs and their files come from a dry run of `tune` (config/extended.yaml) on the dataset: the
stacked jobs' (rules/stacked.smk), each run's output with its weights and labels; their networks and
keys as the workflow sets them (rules/settings.smk's network, rules/common.smk's hypothesis_key).
One thread, one process, both ways timed in it (CPU time of the steps: what a job adds to it, its
start-up, is the study's measured median, printed beside it).
"""

import argparse
import filecmp
import re
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
import yaml
from snakemake.utils import update_config

from benchmarks.pipeline import ROOT, job_times
from benchmarks.study_cost import dry_run
from expril import settings
from expril.steps import learner
from expril.workflow import grids
from expril.workflow.config import planned_config

RUN = re.compile(
    r"/learner/(?P<dataset>[^/]+)/(?P<seeds>[^/]+)/eps(?P<eps>[^@~/]+)(?P<currency>@\w+)(?P<setting>[^/]*)/(?P<variant>\w+)/model_t(?P<t>\d+)\.npz$"
)


def runs(results, dataset, seeds, t, currency):
    """The calibration's runs of the dataset, block and iteration, each with its files and the
    wildcards its own train_hypothesis job would have, from the stacked jobs that train them."""
    rows = []
    for rule, fields in dry_run("tune", ["config/extended.yaml"], [f"results={results}", f"datasets=[{dataset}]"]):
        if not rule.startswith("train_hypotheses_"):
            continue
        outputs, (source, *inputs) = fields["output"].split(", "), fields["input"].split(", ")
        weights, labels = inputs[: len(outputs)], inputs[len(outputs) :]
        for output, weights_path, labels_path in zip(outputs, weights, labels):
            run = RUN.search(output).groupdict()
            if run["seeds"] == seeds and run["t"] == str(t) and currency in ("", run["currency"]):
                rows.append(run | {"source": source, "weights": weights_path, "labels": labels_path, "output": output})
    return rows


def cpu_seconds(step, *args, **kwargs):
    start = time.process_time()
    step(*args, **kwargs)
    return time.process_time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default="results/extended")
    parser.add_argument("--dataset", default="E")
    parser.add_argument("--seeds", default="10000-10004")
    parser.add_argument("--t", type=int, default=1)
    parser.add_argument("--currency", default="@approx", help="one currency's runs ('' for all)")
    args = parser.parse_args()
    torch.set_num_threads(1)

    config = planned_config(ROOT)
    update_config(config, yaml.safe_load((ROOT / "config/extended.yaml").read_text()))
    grid = grids.load(ROOT / config["comparison"]["grid"])
    common = {"training": config["training"], "device": "cpu", "threads": 1}
    planned = runs(args.results, args.dataset, args.seeds, args.t, args.currency)
    shapes = {}
    for run in planned:
        chosen = grids.parse(grid, "expril", run["setting"])
        run["network"] = grids.network(grid, chosen, config["benchmarks"][run["dataset"]]["hidden"])
        run["key"] = ["learner", run["dataset"], run["eps"], run["variant"], int(run["t"])]
        shapes.setdefault(yaml.safe_dump(run["network"]), []).append(run)

    with tempfile.TemporaryDirectory() as tmp:
        alone_cpu = stacked_cpu = 0.0
        for i, run in enumerate(planned):
            run["alone"], run["stacked"] = Path(tmp) / f"alone{i}.npz", Path(tmp) / f"stacked{i}.npz"
            alone_cpu += cpu_seconds(
                learner.train_hypothesis,
                ROOT / run["source"],
                ROOT / run["weights"],
                ROOT / run["labels"],
                run["alone"],
                run["network"],
                init_key=run["key"],
                **common,
            )
        for members in shapes.values():
            stacked_cpu += cpu_seconds(
                learner.train_hypotheses,
                [
                    {"weights_path": ROOT / r["weights"], "labels_path": ROOT / r["labels"]}
                    | {"out_path": r["stacked"], "init_key": r["key"]}
                    for r in members
                ],
                ROOT / members[0]["source"],
                members[0]["network"],
                **common,
            )
        same = sum(filecmp.cmp(run["stacked"], run["alone"], shallow=False) for run in planned)
        as_study = sum(filecmp.cmp(run["stacked"], ROOT / run["output"], shallow=False) for run in planned)

    times = job_times(args.results)
    startup = (times.wall - times.step)[(times.rule == "train_hypothesis") & (times.dataset == args.dataset)].median()
    row = {
        "dataset": args.dataset,
        "t": args.t,
        "jobs": len(planned),
        "networks": len(planned) * len(settings.block_seeds(args.seeds)),
        "shapes": len(shapes),
        "one call per job (CPU s)": round(alone_cpu, 1),
        "stacked (CPU s)": round(stacked_cpu, 1),
        "ratio": round(stacked_cpu / alone_cpu, 2),
        "start-up per job (s)": round(startup, 2),
        "stacked = alone": f"{same}/{len(planned)}",
        "= the study's file": f"{as_study}/{len(planned)}",
    }
    print(pd.DataFrame([row]).to_markdown(index=False))


if __name__ == "__main__":
    main()
