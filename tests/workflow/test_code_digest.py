"""The code digest each script rule declares (params.code): which package code a workflow script
runs, and which scripts' digests an edit changes. Run on a copy of the package and the scripts."""

import re
import shutil

import pytest

from expril.plugins import registry
from expril.workflow import code_digest
from harness import ROOT, replace_once

# The scripts that write tables and reports: they import no step module.
REPORTS = {
    "aggregate_results",
    "compare_methods",
    "round2_changes",
    "round3_changes",
    "check_published",
    "check_pairing",
    "pairing_digests",
    "select_readings",
    "report_ambiguity",
    "select_settings",
}


@pytest.fixture
def project(tmp_path):
    for part in ("expril", "workflow_scripts"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def digests(project):
    """Each script's digest, and each plug-in method module's (rules/plugins.smk: plugin_code)."""
    plugins = [
        p for p in sorted((project / "expril/plugins").glob("*.py")) if p.stem not in {*registry.FRAMEWORK, "__init__"}
    ]
    return {
        s.stem: code_digest.script_digest(s, project / "expril")
        for s in sorted((project / "workflow_scripts").glob("*.py"))
    } | {p.stem: code_digest.plugin_digest(p, project / "expril") for p in plugins}


def changed_by(project, file, old, new):
    before = digests(project)
    replace_once(project / "expril" / file, old, new)
    after = digests(project)
    return {script for script in before if before[script] != after[script]}


def test_scripts_reach_the_functions_they_call_and_those_these_use(project):
    units, modules = code_digest.reached(project / "workflow_scripts/train_hypothesis.py", project / "expril")
    # _train imports train_mlps inside its body; the decorator `timed` counts too
    assert {
        ("steps.learner", "train_hypothesis"),
        ("steps.blocks", "train_networks"),
        ("steps.blocks", "timed"),
        ("method.training", "train_mlps"),
        ("io", "save_npz"),
    } <= units
    assert ("steps.evaluator", "evaluate_hypotheses") not in units
    # steps.learner imports the privacy mechanisms at top level: what they run on import counts
    # though train_hypothesis uses none of their names (issue #16), and so does what each enclosing
    # package's __init__ runs; the reports are not imported
    assert {"method.training", "privacy.mechanisms", "privacy.histogram", "", "steps", "privacy"} <= modules
    assert "reports.reproduction" not in modules
    units, modules = code_digest.reached(project / "workflow_scripts/aggregate_results.py", project / "expril")
    assert ("workflow.joblog", "setup_logging") in units and ("reports.reproduction", "write_all") in units
    assert ("settings", "format_eps") in units and ("settings", "seed_blocks") not in units
    assert "method.training" not in modules


def test_an_edit_changes_the_digest_of_exactly_the_scripts_that_run_it(project):
    assert changed_by(project, "method/training.py", "return x, (w / totals", "return x, 2 * (w / totals") == {
        "train_hypothesis",
        "train_hypotheses",
        "reference_models",
        "llp",
        "aim",
        "dpmerf",
        "mmd",
        "calibrate_reference",
    }
    # h* is scored by _accuracy, the compared methods by _scores (accuracy and predicted-positive share)
    assert changed_by(
        project,
        "steps/evaluator.py",
        "def _accuracy(model, data):\n    return",
        "def _accuracy(model, data):\n    return 1 -",
    ) == {"reference_models", "calibrate_reference"}
    assert changed_by(project, "steps/evaluator.py", "predicted.mean(axis=1)}", "1 - predicted.mean(axis=1)}") == {
        "evaluate_hypotheses",
        "evaluate_rival",
        "evaluate_stack",
    }
    # settings: format_eps is used by the tables only (the ambiguity report's and the tuning's too), n_val by the
    # split, Table 1 and the identification
    assert changed_by(project, "settings.py", "str(int(eps))", "str(round(eps))") == {
        "aggregate_results",
        "compare_methods",
        "round2_changes",
        "round3_changes",
        "report_ambiguity",
        "select_settings",
    }
    assert changed_by(project, "settings.py", "round(n_target * val_fraction)", "int(n_target * val_fraction)") == {
        "split_target",
        "aggregate_results",
        "calibrate_reference",
    }
    # io's atomic writes are used by every step (a plug-in's by its module; the runner writes nothing)
    every = set(digests(project))
    assert changed_by(project, "io.py", "os.replace(tmp, path)", "os.rename(tmp, path)") == every - {
        "plugin_step",
        "plugin_stack",
    }


def test_a_plugin_methods_digest_is_its_own(project):
    """Each plug-in method's jobs carry its module's digest (rules/plugins.smk: plugin_code): an
    edit to one method reruns none of the others' jobs, and a new method changes no digest."""
    assert changed_by(project, "plugins/llp.py", "ctx.features, 1,", "ctx.features, 2,") == {"llp"}
    assert changed_by(project, "plugins/dpmerf.py", "4 * ctx.features", "8 * ctx.features") == {"dpmerf"}
    # ExPriL by MMD runs ExPriL's step functions in its own jobs: an edit to its module reruns
    # none of ExPriL's jobs, and an edit to ExPriL's step reruns both
    assert changed_by(project, "plugins/mmd.py", 'if a != "model"', 'if a not in ("model",)') == {"mmd"}
    assert changed_by(
        project, "steps/learner.py", "labels.threshold(relaxed[b]).mean()", "labels.threshold(relaxed[b]).sum()"
    ) == {
        "estimate_labels",
        "mmd",
    }
    before = digests(project)
    shutil.copy(ROOT / "tests/plugins/nbayes.py", project / "expril/plugins/nbayes.py")
    after = digests(project)
    assert set(after) - set(before) == {"nbayes"} and all(after[s] == before[s] for s in before)


@pytest.mark.parametrize("statement", ['np.seterr(all="raise")', '_OLD = np.seterr(all="raise")'])
def test_what_an_imported_module_runs_counts_though_the_script_uses_none_of_its_names(project, statement):
    # issue #16: the world's, the curator's and the evaluator's steps import datasets; the learner's,
    # the table and report scripts and a script importing settings only do not
    (project / "workflow_scripts/settings_only.py").write_text(
        "from expril import settings\n\nprint(settings.format_eps(1))\n"
    )
    every = set(digests(project))
    assert changed_by(project, "datasets.py", "\nHIDDEN_UNITS", f"\n{statement}\nHIDDEN_UNITS") == every - REPORTS - {
        "settings_only",
        "make_bins",
        "feature_maps",
        "reweight_source",
        "init_hypothesis",
        "estimate_labels",
        "train_hypothesis",
        "train_hypotheses",
        "plugin_step",
        "plugin_stack",
        "plugin_audit",
        # plug-ins that import neither the curator's nor the world's steps
        "aim",
        "dpsgd",
    }
    # training is imported inside the steps that train (steps.blocks.train_networks, DP-MERF's
    # generator), so by the processes that train only
    assert changed_by(project, "method/training.py", "\nALIGN", f"\n{statement}\nALIGN") == {
        "train_hypothesis",
        "train_hypotheses",
        "reference_models",
        "llp",
        "aim",
        "dpmerf",
        "mmd",
        "calibrate_reference",
    }


def test_decorators_and_classes_count_where_their_module_is_imported(project):
    # make_bins runs one @timed step, but importing steps calls timed on each (the plug-ins' runner
    # times a stack); the scripts that write tables and reports do not import steps
    every = set(digests(project))
    assert (
        changed_by(
            project,
            "steps/blocks.py",
            "    @functools.wraps(step)",
            "    step.timed = True\n    @functools.wraps(step)",
        )
        == every - REPORTS
    )
    # a class registered by a decorator and reached through the registry, not by its name
    (project / "expril/registered.py").write_text(
        "REGISTRY = {}\n\n\ndef register(cls):\n    REGISTRY[cls.__name__] = cls\n    return cls\n\n\n"
        "@register\nclass Double:\n    def apply(self, x):\n        return 2 * x\n"
    )
    (project / "workflow_scripts/plugin.py").write_text(
        'from expril import registered\n\nprint(registered.REGISTRY["Double"]().apply(1))\n'
    )
    assert changed_by(project, "registered.py", "2 * x", "3 * x") == {"plugin"}


def test_comments_docstrings_layout_and_unused_code_change_no_digest(project):
    assert (
        changed_by(project, "method/training.py", "return x, (w / totals", "# a comment\n    return x, (w  /  totals")
        == set()
    )
    assert changed_by(project, "steps/blocks.py", '"""A seed block', '"""Reworded: a seed block') == set()
    assert changed_by(project, "settings.py", "Size of the target's", "Size of the") == set()
    # an assignment of a literal runs no code: it counts where used, not where imported
    assert (
        changed_by(project, "reports/reproduction.py", "import matplotlib\n", "import matplotlib\nSCALE = 2\n") == set()
    )


def test_package_imports_the_digest_cannot_follow_are_errors(project):
    script = project / "workflow_scripts/make_bins.py"
    replace_once(script, "from expril.steps import learner", "import expril.steps.learner as learner")
    with pytest.raises(ValueError, match="make_bins.py: line 5: write package imports as"):
        code_digest.script_digest(script, project / "expril")
    replace_once(script, "import expril.steps.learner as learner", "from expril.steps import learner")
    replace_once(script, "learner.make_bins(", "learner.make_bin(")
    with pytest.raises(ValueError, match="learner.py has no top-level 'make_bin'"):
        code_digest.script_digest(script, project / "expril")
    replace_once(script, "from expril.steps import learner", "from expril.steps import learners")
    with pytest.raises(ValueError, match="make_bins.py: line 5: the package has no module 'steps.learners'"):
        code_digest.script_digest(script, project / "expril")
    replace_once(script, "from expril.steps import learners", "from expril.steps import learner")
    replace_once(script, "learner.make_bin(", "learner.make_bins(")
    module = project / "expril/method/labels.py"
    replace_once(module, "from expril.method.binning import", "from .binning import")
    with pytest.raises(ValueError, match=r"labels.py: line \d+: write package imports absolutely"):
        code_digest.script_digest(script, project / "expril")


def test_every_script_rule_declares_the_digest_of_its_own_script():
    rules = re.findall(
        r"^rule (\w+):\n(.*?)(?=^rule |\Z)",
        "".join(p.read_text() for p in sorted((ROOT / "rules").glob("*.smk"))),
        re.S | re.M,
    )
    scripts = {name: re.search(r'script:\s+"\.\./workflow_scripts/(\w+)\.py"', body) for name, body in rules}
    declared = {name: re.search(r'code=package_code\("(\w+)"\)', body) for name, body in rules}
    checked = {name for name, script in scripts.items() if script}
    assert len(checked) == 25
    assert all(declared[name] and declared[name].group(1) == scripts[name].group(1) for name in checked)
