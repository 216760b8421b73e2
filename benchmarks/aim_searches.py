"""AIM's per-round noise scale searches: OpenDP's own against the remembered boundaries
(expril.rivals.aim._remembering_boundaries), in one process, on a calibration block of the tuning
study (it needs that block's split and bins: `snakemake tune` has run the dataset at that eps).

    .venv/bin/python -m benchmarks.aim_searches [--dataset D] [--eps 10] [--results results/extended]

One thread. A first release compiles JAX's estimator; then each search fits the block's other
releases, in zCDP at the eps's rho (delta 1e-5), and prints their CPU time and that of the
`binary_search_chain` calls inside them (RESULTS.md (p)). AIM's noise is OpenDP's, unseeded:
the two arms' releases differ, and so do their rounds.
"""

import argparse
import time

from expril.privacy import calibration
from expril.rivals import aim
from expril.steps.blocks import load_bins, load_block


def timed(search, spent):
    def chain(*args, **kwargs):
        start = time.process_time()
        try:
            return search(*args, **kwargs)
        finally:
            spent["seconds"] += time.process_time() - start
            spent["calls"] += 1

    chain.boundaries = {}  # marks it installed, so that aim._import keeps it
    return chain


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="D")
    parser.add_argument("--eps", default="10")
    parser.add_argument("--results", default="results/extended")
    parser.add_argument("--block", default="10000-10004")
    args = parser.parse_args()
    dp, _, _ = aim._import(1)
    import opendp.extras.mbi._aim as aim_internals

    folder = f"{args.results}/%s/{args.dataset}/{args.block}"
    val = load_block(f"{folder % 'curator'}/target_val.npz", ("x", "y"))
    edges = load_bins(f"{folder % 'learner'}/eps{args.eps}/marginal_bins.npz", val["seeds"])
    rho = calibration.zcdp_budget(float(args.eps), 1e-5)

    def release(b):
        aim.fit(val["x"][b], val["y"][b], edges[b], rho, "aim", 1, "rho")

    release(0)
    arms = {
        "OpenDP's binary_search_chain": dp.binary_search_chain,
        "remembered boundaries": aim._remembering_boundaries(dp.binary_search_param),
    }
    print(f"| search | CPU of {len(val['seeds']) - 1} releases (s) | searches | CPU in searches (s) |")
    print("|---|---|---|---|")
    for name, search in arms.items():
        spent = {"seconds": 0.0, "calls": 0}
        aim_internals.binary_search_chain = timed(search, spent)
        start = time.process_time()
        for b in range(1, len(val["seeds"])):
            release(b)
        print(f"| {name} | {time.process_time() - start:.2f} | {spent['calls']} | {spent['seconds']:.2f} |")


if __name__ == "__main__":
    main()
