"""Running the Snakemake workflow from tests: dry-run job plans and real runs."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from expril.workflow.snapshot import dry_run_jobs, per_rule

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TUNING = ROOT / "data" / "tuning"  # the published choice (`snakemake tune`, then `publish_tuning`)
# A plug-in job's configuration for the gate's and the knobs' unit tests: one small dataset.
PLUGIN_CONFIG = {
    "results": "res",
    "delta": 1e-5,
    "benchmarks": {"A": {"generator": "clusters", "dim": 2, "n_target": 600, "importance_sampling": False}},
    "val_fraction": 0.5,
    "bins": {"snr": 4, "noiseless": "sqrt", "sized_for": "drawn"},
}
# The file keys of config.yaml's CTG entries, for report tests that count its features: the
# path from the repository root, so that they do not depend on the folder pytest runs in.
CTG_FILE = {"generator": "csv", "csv": str(ROOT / "data/cardiotocography/CTG.csv"), "label": "NSP", "drop": ["CLASS"]}


def snakemake(*args, check=True, cwd=ROOT, env=None):
    """Run Snakemake in the repository (or a copy of it), with `env`'s variables added to the
    environment; return the completed process (output captured)."""
    env = {**os.environ, **env} if env else None
    result = subprocess.run([*SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{(result.stdout + result.stderr)[-4000:]}")
    return result


def plan(*args):
    """Every job Snakemake would run (forced), as dicts with rule, input, output and resources lists."""
    return dry_run_jobs(snakemake("--dry-run", "--forceall", *args).stdout)


def project_copy(tmp_path):
    """A copy of the project to edit or lock without touching this one, without results or state."""
    project = tmp_path / "project"
    shutil.copytree(
        ROOT,
        project,
        ignore=shutil.ignore_patterns(".git", ".venv", ".snakemake", ".pytest_cache", "__pycache__", "results"),
    )
    return project


def copy_args(project):
    """Snakemake arguments that run the workflow of a project copy."""
    return ["--snakefile", str(project / "Snakefile"), "--directory", str(project)]


def replace_once(path, old, new):
    """Edit a file in a test's copy of the project."""
    text = path.read_text()
    assert text.count(old) == 1, f"{path}: {old!r} is not there exactly once"
    path.write_text(text.replace(old, new))


counts = per_rule  # a plan's jobs per rule
