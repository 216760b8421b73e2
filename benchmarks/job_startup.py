"""The CPU a study job spends before its own work: a fresh interpreter that imports Snakemake's
script preamble, what its workflow script imports and the libraries every job of its kind loads,
per kind of job; with `--against DIR`, the same from another checkout (the code before a cut), the
two alternated.

    .venv/bin/python -m benchmarks.job_startup [--against DIR] [--repeats 5]

Each figure is the least CPU time (user + system, the process's own rusage) over `repeats` fresh
processes, so a busy machine inflates it less than wall time (RESULTS.md (s)). What the step then
imports for its own work (torch to train, OpenDP to release) is the step's, not counted here.
"""

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PREAMBLE = "import snakemake.script; from expril.workflow.joblog import setup_logging"
# A release writes a ledger and an evaluation a CSV, with pandas, whichever module imports it.
KINDS = {
    "bare: Python and the preamble": "",
    "data (expril.steps.world)": "from expril.steps import world",
    "ExPriL's release (curator)": "from expril.steps import curator; import pandas",
    "ExPriL's label estimate or training (learner)": "from expril.steps import learner",
    "evaluation (evaluator)": "from expril.steps import evaluator",
    "a plug-in's release (runner, every plug-in loaded)": (
        "from expril.plugins import runner, registry; registry.methods(); import pandas"
    ),
    "a plug-in's learner step (runner, every plug-in loaded)": (
        "from expril.plugins import runner, registry; registry.methods()"
    ),
}
CPU = "import resource; u = resource.getrusage(resource.RUSAGE_SELF); print(u.ru_utime + u.ru_stime)"


def cpu_seconds(code, checkout):
    """One fresh process's CPU time for `code`, importing expril from `checkout`."""
    out = subprocess.run(
        [sys.executable, "-c", "\n".join([PREAMBLE, code, CPU])],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, help="another checkout, measured alternately")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    arms = [ROOT] + ([args.against.resolve()] if args.against else [])
    print("| job | " + " | ".join(f"{arm} (s)" for arm in arms) + (" | ratio |" if args.against else ""))
    print("|---|" + "---|" * (len(arms) + bool(args.against)))
    for kind, code in KINDS.items():
        runs = [[cpu_seconds(code, arm) for arm in arms] for _ in range(args.repeats)]
        best = [min(times) for times in zip(*runs)]
        ratio = f" {best[0] / best[1]:.2f} |" if args.against else ""
        print(f"| {kind} | " + " | ".join(f"{b:.2f}" for b in best) + f" |{ratio}")


if __name__ == "__main__":
    main()
