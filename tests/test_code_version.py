"""The code digest each script rule declares (params.code): which package code a workflow script
runs, and which scripts' digests an edit changes. Run on a copy of the package and the scripts."""
import shutil

import pytest

from expril import code_version
from workflow import ROOT, replace_once


@pytest.fixture
def project(tmp_path):
    for part in ("expril", "workflow_scripts"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def digests(project):
    return {s.stem: code_version.script_digest(s, project / "expril")
            for s in sorted((project / "workflow_scripts").glob("*.py"))}


def changed_by(project, path, old, new):
    before = digests(project)
    replace_once(path, old, new)
    after = digests(project)
    return {script for script in before if before[script] != after[script]}


def test_scripts_reach_the_steps_they_call_and_the_modules_those_use(project):
    functions, modules = code_version.reached(project / "workflow_scripts/train_hypothesis.py", project / "expril")
    assert {"train_hypothesis", "_train", "timed", "setup_logging"} <= functions
    assert "evaluate_hypotheses" not in functions
    # training is imported inside _train, mlp by training; datasets and report are not reached
    assert {"training", "mlp", "io"} <= modules and not {"datasets", "report", "steps"} & modules
    functions, modules = code_version.reached(project / "workflow_scripts/aggregate_results.py", project / "expril")
    assert functions == {"setup_logging"} and {"report", "fidelity", "io", "settings"} <= modules
    assert "training" not in modules


def test_an_edit_changes_the_digest_of_exactly_the_scripts_that_run_it(project):
    pkg = project / "expril"
    assert changed_by(project, pkg / "training.py", "return x, y, (w / totals",
                      "return x, y, 2 * (w / totals") == {"train_hypothesis", "reference_models"}
    assert changed_by(project, pkg / "steps.py", "def _accuracy(model, data):\n    return",
                      "def _accuracy(model, data):\n    return 1 -") == {"evaluate_hypotheses", "reference_models"}
    assert changed_by(project, pkg / "report.py", "import matplotlib\n",
                      "import matplotlib\nSCALE = 2\n") == {"aggregate_results"}
    # io is used by every step
    assert changed_by(project, pkg / "io.py", "import tempfile\n", "import tempfile\nBUFFER = 2\n") == set(digests(project))


def test_comments_and_layout_change_no_digest(project):
    pkg = project / "expril"
    assert changed_by(project, pkg / "training.py", "return x, y, (w / totals",
                      "# a comment\n    return x, y, (w  /  totals") == set()
    assert changed_by(project, pkg / "steps.py", "def _accuracy(model, data):\n",
                      "def _accuracy(model, data):  # why\n\n") == set()
