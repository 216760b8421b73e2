"""Cached partial reruns: after one real run of tests/reruns.yaml, a dry run with a changed setting
plans exactly the jobs that change needs, counted per rule.

Snakemake reruns a job when an output is missing, an input is newer, or a declared `params` entry
changed (a default rerun trigger), so every setting a step reads is one of its params. The small
config has one block of 2 runs, datasets A (no IS step) and C (IS step), eps 1 and inf and T = 2.
Per dataset and eps, one run is: make_bins and oracle_marginals (C only), reweight_source, 2 error
queries (on h_0 and h_1, shared by the variants), 3 label estimates and 3 trainings (h_1 shared,
h_2 per variant C and I) and one evaluation; per dataset and block, generate_data, split_target,
init_hypothesis and reference_models. aggregate_results reads the whole config, so it always reruns.
"""

import os
import signal
import subprocess
import time

import pytest
import yaml

from harness import ROOT, SNAKEMAKE, counts, dry_run_jobs, project_copy, replace_once, snakemake

CONFIG = "tests/reruns.yaml"

pytestmark = pytest.mark.slow  # each test runs the workflow, or plans against a run of it


@pytest.fixture(scope="session")
def results(tmp_path_factory):
    """tests/reruns.yaml run once; the tests below only dry-run against it."""
    results = tmp_path_factory.mktemp("reruns")
    snakemake("--configfile", CONFIG, "--config", f"results={results}")
    return results


def pending(results, tmp_path, change=None, forcerun=None, cwd=ROOT):
    """The jobs a dry run plans now, with the settings in `change` overriding and the file
    `forcerun` (with all that depends on it) redone. `change` goes in a config file:
    --config KEY=VALUE reads numbers inside lists and mappings as strings."""
    configfiles = [CONFIG]
    if change:
        (tmp_path / "change.yaml").write_text(yaml.safe_dump(change))
        configfiles.append(str(tmp_path / "change.yaml"))
    force = ["--forcerun", str(forcerun)] if forcerun else []
    out = snakemake("--dry-run", "--configfile", *configfiles, "--config", f"results={results}", *force, cwd=cwd).stdout
    return [job for job in dry_run_jobs(out) if job["rule"] != "all"]


def outputs(jobs):
    return [f for job in jobs if job["rule"] != "aggregate_results" for f in job["output"]]


def test_finished_run_plans_nothing(results, tmp_path):
    assert pending(results, tmp_path) == []


def test_new_epsilon_plans_only_its_runs(results, tmp_path):
    jobs = pending(results, tmp_path, {"epsilons": [1, "inf", 2]})
    assert counts(jobs) == {
        "make_bins": 1,
        "oracle_marginals": 1,
        "reweight_source": 2,
        "oracle_errors": 4,
        "estimate_labels": 6,
        "train_hypothesis": 6,
        "evaluate_hypotheses": 2,
        "aggregate_results": 1,
    }
    assert all("/eps2/" in f for f in outputs(jobs))


def test_new_runs_plan_only_the_new_seed_block(results, tmp_path):
    jobs = pending(results, tmp_path, {"runs": 4})
    assert counts(jobs) == {
        "generate_data": 2,
        "split_target": 2,
        "init_hypothesis": 2,
        "reference_models": 2,
        "make_bins": 2,
        "oracle_marginals": 2,
        "reweight_source": 4,
        "oracle_errors": 8,
        "estimate_labels": 12,
        "train_hypothesis": 12,
        "evaluate_hypotheses": 4,
        "aggregate_results": 1,
    }
    assert all("/2-3/" in f for f in outputs(jobs))


def test_new_dataset_plans_only_its_runs(results, tmp_path):
    jobs = pending(results, tmp_path, {"datasets": ["A", "C", "B"]})
    assert counts(jobs) == {
        "generate_data": 1,
        "split_target": 1,
        "init_hypothesis": 1,
        "reference_models": 1,
        "reweight_source": 2,
        "oracle_errors": 4,
        "estimate_labels": 6,
        "train_hypothesis": 6,
        "evaluate_hypotheses": 2,
        "aggregate_results": 1,
    }
    assert all("/B/" in f for f in outputs(jobs))


def test_training_epochs_rerun_trainings_and_what_follows(results, tmp_path):
    # Every network (h_1, h_2, h*) is retrained; the query on h_1 and the label estimates of h_2
    # that use its answer follow. The data, the bins, the weights and everything about h_0 stay.
    jobs = pending(results, tmp_path, {"training": {"epochs": 4}})
    assert counts(jobs) == {
        "train_hypothesis": 12,
        "reference_models": 2,
        "oracle_errors": 4,
        "estimate_labels": 8,
        "evaluate_hypotheses": 4,
        "aggregate_results": 1,
    }


def test_label_ridge_reruns_the_learner_loop(results, tmp_path):
    jobs = pending(results, tmp_path, {"labels": {"ridge": 0.002}})
    assert counts(jobs) == {
        "estimate_labels": 12,
        "train_hypothesis": 12,
        "oracle_errors": 4,
        "evaluate_hypotheses": 4,
        "aggregate_results": 1,
    }


def test_more_iterations_keep_data_and_noiseless_bins(results, tmp_path):
    # With a finite eps, lambda = d x queries / eps grows with T: the bins (q follows lambda) and
    # every query's noise change, so all of a run is redone, as it must be. With eps = inf the
    # bins stay; the oracle still answers again, because each answer's ledger records the
    # planned number of queries (params.mechanism, the run's privacy plan), and so does all that
    # reads the plan (reweight_source on A too) or follows the answers.
    jobs = pending(results, tmp_path, {"iterations": 3, "epsilons": ["inf"]})
    assert counts(jobs) == {
        "oracle_marginals": 1,
        "reweight_source": 2,
        "oracle_errors": 8,
        "estimate_labels": 10,
        "train_hypothesis": 10,
        "evaluate_hypotheses": 2,
        "aggregate_results": 1,
    }


def test_lost_intermediate_is_redone_only_on_request(results, tmp_path):
    # A missing file whose dependents are up to date is treated like a temp() file: not redone.
    labels = results / "learner/A/0-1/epsinf/both/labels_t1.npz"
    moved = labels.rename(labels.with_suffix(".moved"))
    try:
        assert pending(results, tmp_path) == []
    finally:
        moved.rename(labels)


def test_redoing_one_file_reruns_only_its_dependents(results, tmp_path):
    labels = results / "learner/A/0-1/epsinf/both/labels_t1.npz"
    jobs = pending(results, tmp_path, forcerun=labels)
    # labels_t1 -> h_1 -> the query on h_1 -> labels and h_2 for C and for I -> evaluation
    assert counts(jobs) == {
        "estimate_labels": 3,
        "train_hypothesis": 3,
        "oracle_errors": 1,
        "evaluate_hypotheses": 1,
        "aggregate_results": 1,
    }
    assert all("/A/0-1/epsinf/" in f for f in outputs(jobs))


def test_code_edit_reruns_the_rules_that_run_it(tmp_path):
    """Snakemake's code trigger sees a rule's script, not the package the script imports: the
    digest of the package code each script runs (params.code) makes an edit rerun exactly the
    jobs that run it, and what follows. Run in a copy of the project, which the test edits."""
    project = project_copy(tmp_path)
    small = {"datasets": ["A"], "epsilons": ["inf"]}
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small))
    results = tmp_path / "results"
    snakemake("--configfile", CONFIG, str(tmp_path / "small.yaml"), "--config", f"results={results}", cwd=project)

    def after(path, old, new):
        replace_once(project / path, old, new)
        return counts(pending(results, tmp_path, small, cwd=project))

    assert (
        after(
            "expril/method/reweight.py", "    n = ids.shape[0]\n", "    # one weight per sample\n    n = ids.shape[0]\n"
        )
        == {}
    )
    assert after(
        "expril/reports/reproduction.py",
        'f"{settings.format_eps(eps)}DP-{variant}"',
        'f"{settings.format_eps(eps)}-DP-{variant}"',
    ) == {"aggregate_results": 1}
    # The weights, then the queries, label estimates and networks built on them (h_1 shared, h_2
    # per variant) and the evaluation; the data, the split, h_0 and h* stay. (The edits add up:
    # aggregate_results is still pending from the one above.)
    assert after("expril/method/reweight.py", "np.full(n, 1 / n)", "np.full(n, 1.0 / n)") == {
        "reweight_source": 1,
        "oracle_errors": 2,
        "estimate_labels": 3,
        "train_hypothesis": 3,
        "evaluate_hypotheses": 1,
        "aggregate_results": 1,
    }


def test_a_killed_run_recovers_with_unlock(tmp_path):
    """kill -9 leaves Snakemake's lock behind: the next run stops with an error that names
    --unlock, and after `--unlock` the run picks up and finishes. Run in a copy of the project,
    whose .snakemake/ holds the lock."""
    project, results = project_copy(tmp_path), tmp_path / "results"
    args = ["--configfile", CONFIG, "--config", "datasets=[A]", "epsilons=[inf]", f"results={results}"]
    run = subprocess.Popen(
        [*SNAKEMAKE, *args], cwd=project, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    while not (results / "logs").exists() and run.poll() is None:  # until the first job starts
        time.sleep(0.1)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert run.returncode == -signal.SIGKILL and any((project / ".snakemake/locks").iterdir())
    locked = snakemake(*args, check=False, cwd=project)
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    snakemake("--unlock", *args, cwd=project)
    snakemake(*args, cwd=project)
    assert (results / "table2.csv").stat().st_size > 0
