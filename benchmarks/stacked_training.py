"""Issue #35, item 4, measured before it is built: ExPriL's hypotheses h_t of one dataset, seed block
and iteration, trained as the study's jobs train them (one call per eps, currency, setting and
variant: one `train_hypothesis` job each) and stacked (one call per network shape, every job's
networks in one block), from a finished study's files. The stacked networks are checked bit for bit
against the one-call ones (the block trainer's guarantee) and against the study's model files.

    .venv/bin/python -m benchmarks.stacked_training [--results results/extended] [--dataset E]
        [--seeds 10000-10004] [--t 1] [--currency @approx]

The jobs and their files come from a dry run of `tune` (config/extended.yaml) on the dataset: the
calibration, whose blocks of 5 train the most small networks. One thread, one process, both ways
timed in it (each way's step alone: what a job adds to it, its start-up, is the study's measured
median, printed beside it).
"""

import argparse
import time

import numpy as np
import pandas as pd
import torch
import yaml
from snakemake.utils import update_config

from benchmarks.pipeline import ROOT, job_times
from benchmarks.study_cost import dry_run
from expril.method import labels
from expril.seeds import seed_int
from expril.steps.blocks import load_block, train_networks
from expril.workflow import grids
from expril.workflow.config import planned_config


def jobs(results, dataset, seeds, t, currency):
    """The calibration's train_hypothesis jobs of the dataset, block and iteration: their files and
    wildcards."""
    rows = []
    for rule, fields in dry_run("tune", ["config/extended.yaml"], [f"results={results}", f"datasets=[{dataset}]"]):
        if rule != "train_hypothesis":
            continue
        wildcards = dict(w.split("=", 1) for w in fields["wildcards"].split(", "))
        if wildcards["seeds"] != seeds or wildcards["t"] != str(t) or currency not in ("", wildcards["currency"]):
            continue
        files = dict(zip(("source", "weights", "labels"), fields["input"].split(", ")))
        rows.append(wildcards | files | {"output": fields["output"]})
    return rows


def inputs(job, config, grid):
    """What the job's step trains on, as learner.train_hypothesis reads it, and its network."""
    source = load_block(ROOT / job["source"], ("x",))
    block = source["seeds"]
    weights = load_block(ROOT / job["weights"], ("weights",), block)["weights"]
    y = labels.threshold(load_block(ROOT / job["labels"], ("relaxed",), block)["relaxed"])
    init_key = ["learner", job["dataset"], job["eps"], job["variant"], int(job["t"])]
    network = grids.network(
        grid, grids.parse(grid, "expril", job["setting"]), config["benchmarks"][job["dataset"]]["hidden"]
    )
    return source["x"], y, weights, network, [seed_int(*init_key, int(s)) for s in block]


def timed(train, *args):
    start = time.process_time()
    model = train(*args)
    return model, time.process_time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default="results/extended")
    parser.add_argument("--dataset", default="E")
    parser.add_argument("--seeds", default="10000-10004")
    parser.add_argument("--t", type=int, default=1)
    parser.add_argument("--currency", default="@approx", help="one currency's chains ('' for all)")
    args = parser.parse_args()
    torch.set_num_threads(1)

    config = planned_config(ROOT)
    update_config(config, yaml.safe_load((ROOT / "config/extended.yaml").read_text()))
    grid = grids.load(ROOT / config["comparison"]["grid"])
    training = config["training"]
    planned = jobs(args.results, args.dataset, args.seeds, args.t, args.currency)
    data = [inputs(job, config, grid) for job in planned]

    def train(x, y, w, network, init_seeds):
        return train_networks(x, y, w, network, training, init_seeds, "cpu", 1)

    alone, alone_cpu = [], 0.0
    for x, y, w, network, init_seeds in data:
        model, cpu = timed(train, x, y, w, network, init_seeds)
        alone.append(model)
        alone_cpu += cpu

    shapes = {}
    for i, (*_, network, _) in enumerate(data):
        shapes.setdefault(yaml.safe_dump(network), []).append(i)
    stacked_cpu, same, as_study = 0.0, 0, 0
    for members in shapes.values():
        x, y, w, network, _ = data[members[0]]
        stacked, cpu = timed(
            train,
            np.concatenate([data[i][0] for i in members]),
            np.concatenate([data[i][1] for i in members]),
            np.concatenate([data[i][2] for i in members]),
            network,
            [s for i in members for s in data[i][4]],
        )
        stacked_cpu += cpu
        offset = 0
        for i in members:
            runs = len(data[i][4])
            part = {k: v[offset : offset + runs] if v.ndim else v for k, v in stacked.items()}
            offset += runs
            same += all(np.array_equal(part[k], alone[i][k]) for k in alone[i])
            study = np.load(ROOT / planned[i]["output"])
            as_study += all(np.array_equal(part[k], study[k]) for k in alone[i])

    times = job_times(args.results)
    startup = (times.wall - times.step)[(times.rule == "train_hypothesis") & (times.dataset == args.dataset)].median()
    networks = sum(len(d[4]) for d in data)
    print(
        pd.DataFrame(
            [
                {
                    "dataset": args.dataset,
                    "t": args.t,
                    "jobs": len(data),
                    "networks": networks,
                    "shapes": len(shapes),
                    "one call per job (CPU s)": round(alone_cpu, 1),
                    "stacked (CPU s)": round(stacked_cpu, 1),
                    "ratio": round(stacked_cpu / alone_cpu, 2),
                    "start-up per job (s)": round(startup, 2),
                    "stacked = alone": f"{same}/{len(data)}",
                    "= the study's file": f"{as_study}/{len(data)}",
                }
            ]
        ).to_markdown(index=False)
    )


if __name__ == "__main__":
    main()
