"""What a job imports: each process pays for the libraries its step's module imports (torch 3 s,
Opacus 8 to 14 s on this machine), so the steps' modules import none of the heavy ones; only the
steps that train, release with OpenDP or draw figures import them, inside the step."""

import json
import subprocess
import sys

import pytest

from harness import ROOT

HEAVY = {"torch", "opacus", "opendp", "jax", "mbi", "polars", "matplotlib", "seaborn"}


def loaded(code):
    """Every module a fresh process holds after running `code`."""
    code = f"import sys, json; {code}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def imported(module):
    return {name.split(".")[0] for name in loaded(f"import {module}")}


@pytest.mark.parametrize(
    "module",
    [
        "expril.steps.world",
        "expril.steps.curator",
        "expril.steps.learner",
        "expril.steps.evaluator",
        "expril.privacy.mechanisms",
    ],
)
def test_a_steps_module_imports_no_heavy_library(module):
    assert imported(module) & HEAVY == set()


@pytest.mark.parametrize(
    "code, library",
    [
        # Every plug-in's job loads them all (expril.plugins.runner); only a release reads a ledger.
        ("from expril.plugins import runner, registry; registry.methods()", "pandas"),
        # ExPriL's label estimates and trainings load the mechanisms; only the Dirichlet's search needs it.
        ("import expril.steps.learner", "scipy.special"),
    ],
)
def test_a_learner_job_loads_no_library_that_only_releases_use(code, library):
    """Start-up, paid by each of the study's thousands of jobs (issue 35): pandas costs about 0.5 s
    of CPU, scipy.special about 0.25 s."""
    assert library not in loaded(code)


def test_dpsgd_accounting_imports_no_opacus():
    """The DP-SGD plan's noise and eps come from Opacus's RDP analysis loaded alone, not through
    its package, whose import loads its privacy engine and torch."""
    code = (
        "import sys; from expril.privacy.dpsgd import DPSGD; "
        "p = DPSGD(1.0, 1e-5, 0.1, 3, 1.0); p.query_cost(); "
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'opacus', 'torch'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
