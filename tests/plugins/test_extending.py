"""A user's own method, as docs/extending.md adds it: one module in expril/plugins/ and one entry in
config/tuning.yaml, in a copy of the project. It joins the comparison's tables, figures and ledgers,
passes the taint audit, and nothing else names it; a miswired one stops the workflow before any job."""

import shutil
import subprocess
import sys

import pandas as pd
import pytest

from expril.reports import published
from harness import ROOT, counts, dry_run_jobs, project_copy, replace_once, snakemake

EXAMPLE = ROOT / "tests/plugins/nbayes.py"
TUNING_ENTRY = "families:\n  nbayes:\n    model: [configured, tanh32, logreg]\n"


# The currency the example runs in, and the mechanism it spends there (comparison: currencies).
CURRENCY = ', "currencies": {"pure": {"mechanisms": {"nbayes": counts}}}'


def smoke(results, methods="C, I, nbayes"):
    """The smoke comparison on two datasets, as configured only, ExPriL beside the new method, on
    the study's tuning grid (where the user adds the method's entry), the new method in pure DP."""
    return [
        "--configfile",
        "config/extended.yaml",
        "tests/extended_smoke.yaml",
        "--config",
        f"results={results}",
        "datasets=[A,C]",
        f'comparison={{"methods": [{methods}], "grid": "config/tuning.yaml", "choice": "no/choice.yaml", '
        f'"columns": [as configured]{CURRENCY if "nbayes" in methods else ""}}}',
    ]


def add_example(project, tuning_entry=True):
    """Add the example method to a copy of the project as a user adds it."""
    shutil.copy(EXAMPLE, project / "expril/plugins/nbayes.py")
    if tuning_entry:
        replace_once(project / "config/tuning.yaml", "families:\n", TUNING_ENTRY)


def user_copy(tmp_path):
    """A copy of the project as a user has it: without the tests' copy of the example."""
    project = project_copy(tmp_path)
    (project / "tests/plugins/nbayes.py").unlink()
    return project


def naming(project, name):
    """The project's code and configuration files that name `name` (docs, tests and caches aside)."""
    found = set()
    for path in project.rglob("*"):
        relative = path.relative_to(project)
        top = relative.parts[0]
        if path.is_file() and top not in ("docs", "tests", "results") and not top.startswith("."):
            if name in path.read_text(errors="ignore"):
                found.add(str(relative))
    return found


@pytest.mark.slow
def test_a_users_method_joins_the_comparison_from_one_module_and_one_tuning_entry(tmp_path):
    """The comparison without it first; with it, the plan is its jobs and the report's alone."""
    project, res = user_copy(tmp_path), tmp_path / "res"
    snakemake("compare", "--cores", "2", *smoke(res, "C, I"), cwd=project)
    add_example(project)
    assert naming(project, "nbayes") == {"expril/plugins/nbayes.py", "config/tuning.yaml"}
    planned = dry_run_jobs(snakemake("--dry-run", "compare", *smoke(res), cwd=project).stdout)
    assert counts(planned) == {  # in pure DP only: 2 datasets x 2 eps; its audit once
        "plugin_audit": 1,
        "nbayes_release": 4,
        "nbayes_train": 4,
        "evaluate_rival": 4,
        "compare_methods": 1,
        "comparison_report": 1,
        "compare": 1,
    }
    assert all("/nbayes" in f for job in planned if job["rule"] == "evaluate_rival" for f in job["output"])
    snakemake("compare", "--cores", "2", *smoke(res), cwd=project)
    pure = res / "comparison/pure"
    table = pd.read_csv(pure / "comparison.csv")
    mine = table[table.method == "nbayes"]
    assert len(mine) == 4 and set(mine.dataset) == {"A", "C"} and set(mine.n_runs) == {2}
    # Its privacy, read from its ledgers: the run's eps at eps 1 in pure DP, nothing at inf.
    assert set(mine[mine.eps == 1].eps_spent) == {1.0} and set(mine.delta) == {0.0}
    assert set(mine.mechanisms) == {"counts"}
    book = pd.read_csv(res / "oracle/A/0-1/eps1@pure/nbayes/release.ledger.csv")
    assert list(book["query"]) == ["nbayes/counts"] * 2 + ["nbayes/negatives"] * 2 and set(book.seed) == {0, 1}
    assert "Naive Bayes" in (res / "comparison.md").read_text()
    assert set(pd.read_csv(pure / "comparison_runs.csv").method) >= {"C", "I", "nbayes"}
    assert "rank_nbayes" in pd.read_csv(pure / "comparison_ranks.csv").columns
    tests = pd.read_csv(pure / "comparison_tests.csv")
    assert "nbayes" in set(tests.method)
    for figure in ("privacy_utility.png", "critical_difference.png"):
        assert (pure / figure).stat().st_size > 0
    audit = subprocess.run(
        [sys.executable, "-m", "expril.privacy.taint", "compare", *smoke(res)],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert audit.returncode == 0 and ", 0 violations;" in audit.stdout, audit.stdout + audit.stderr


@pytest.mark.slow
def test_a_method_without_a_tuning_entry_stops_the_workflow_before_any_job(tmp_path):
    project = user_copy(tmp_path)
    add_example(project, tuning_entry=False)
    result = snakemake("--dry-run", "compare", *smoke(tmp_path / "res"), cwd=project, check=False)
    assert result.returncode != 0
    refused = "plug-in method 'nbayes' (expril.plugins.nbayes) refused: it has no tuning entry"
    assert refused in result.stdout + result.stderr


@pytest.mark.slow
def test_a_users_method_against_the_published_study_plans_its_jobs_and_the_check_alone(tmp_path):
    """With `comparison: published` (round 2 in summary/comparison/round2, a folder per currency) and no
    results yet, as on a fresh clone, the plan is the new method's jobs, the data and bins they read,
    the check (LLP's first and last published cell of each currency, rerun) and the reports: no job of
    any other method (the run itself, on the smoke study: test_compare_workflow). Round 2 publishes
    its methods tuned only, against which a method run as configured is refused
    (test_published_check): here its copy is relabelled as configured. Round 1's study, published
    before the currencies, is refused by name."""
    project = user_copy(tmp_path)
    add_example(project)
    for currency in ("approx", "pure"):
        shutil.copytree(project / "summary/comparison/round2" / currency, tmp_path / "published" / currency)
        runs = pd.read_csv(tmp_path / "published" / currency / published.RUNS)
        runs.loc[runs.column == "tuned", "column"] = "as configured"
        runs.to_csv(tmp_path / "published" / currency / published.RUNS, index=False)
    comparison = f'{{"published": "{tmp_path}/published", "methods": [nbayes], "columns": [as configured]{CURRENCY}}}'
    seven = "datasets=[A,B,C,D,E,CTG-A,CTG-B]"  # round 2's (config/extended.yaml names round 3's thirteen)
    config = ["--configfile", "config/extended.yaml", "--config", f"results={tmp_path}/res", seven]
    config.append(f"comparison={comparison}")
    planned = dry_run_jobs(snakemake("--dry-run", "compare", *config, cwd=project).stdout)
    cells, checked = 7 * 6, 2 * 2  # nbayes: datasets x eps (one block of 20 runs, pure DP); LLP: 2 per currency
    assert counts(planned) == {
        "generate_data": 7,
        "split_target": 7,
        "make_bins": cells,
        "nbayes_release": cells,
        "nbayes_train": cells,
        "plugin_audit": 3,  # nbayes's in pure DP, LLP's in both currencies
        "llp_bins": checked,
        "oracle_proportions": checked,
        "train_llp": checked - 1,  # at eps = inf pure DP's run is approx's (its bins and release still drawn)
        "evaluate_rival": cells + checked - 1,
        "pairing_digests": 2,
        "check_pairing": 2,
        "check_published": 2,
        "compare_methods": 2,
        "comparison_report": 1,
        "compare": 1,
    }
    round1 = [*config[:-1], f"comparison={comparison.replace(f'{tmp_path}/published', 'summary/comparison/round1')}"]
    result = snakemake("--dry-run", "compare", *round1, cwd=project, check=False)
    assert result.returncode != 0
    assert "published: summary/comparison/round1 holds no approx/comparison_runs.csv" in result.stdout + result.stderr
