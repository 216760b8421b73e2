"""Privacy you can check: the ledger, the noise secret, and the taint audit of the job plan."""

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from expril.io import load_npz, save_npz
from expril.method import binning, mlp
from expril.privacy import calibration, ledger, mechanisms, noise, taint
from expril.privacy.synthesis import AIM
from expril.reports import comparison, reproduction
from expril.steps import curator
from harness import ROOT, copy_args, project_copy, replace_once


def _privacy(eps, planned=3, d=10, mechanism="paper", scale=None):
    """T = 2 iterations: 3 queries with the IS step, 2 without; `scale` overrides the noise."""
    plan = mechanisms.get(mechanism)(eps, 0.0, d, 2, planned == 3)
    if scale is not None:
        plan.scale = scale
    return plan


@pytest.mark.parametrize("eps", [1.0, 2.0, 0.5, 5.0])
def test_planned_queries_spend_exactly_the_budget(tmp_path, eps):
    # Each query reads the previous one's ledger file, as the oracle jobs do: its eps_spent must
    # come back exactly (2/3 written as 0.666667 would sum above the budget of 2), and the ledger's
    # claim, each run's eps_total after each query, reaches the budget with the third.
    book = None
    for i, query in enumerate(["marginals", "errors_t0", "errors_t1"]):
        ledger.record(tmp_path / f"{i}.csv", book, "C", [0, 1], query, "oracle_errors", _privacy(eps))
        book = ledger.load(tmp_path / f"{i}.csv")
    assert len(book) == 6 and (book.eps_spent == eps / 3).all()
    assert book.eps_total.tolist() == pytest.approx([eps / 3] * 2 + [2 * eps / 3] * 2 + [eps] * 2, rel=1e-12)
    assert (book.eps_total <= eps * (1 + 1e-9)).all()
    assert list(book.columns) == ledger.COLUMNS


def test_each_ledger_row_says_what_keyed_its_noise_and_the_tables_warn_of_the_demo_secret(tmp_path, monkeypatch):
    monkeypatch.delenv(noise.SECRET_VARIABLE, raising=False)
    demo = ledger.record(tmp_path / "a.csv", None, "A", [0, 1], "errors_t0", "oracle_errors", _privacy(1.0, 2))
    aim = ledger.record(tmp_path / "b.csv", None, "A", [0, 1], "aim", "aim_release", AIM(1.0, 0.0), tmp_path / "h.csv")
    monkeypatch.setenv(noise.SECRET_VARIABLE, "a private secret")
    keyed = ledger.record(tmp_path / "c.csv", None, "A", [0, 1], "errors_t0", "oracle_errors", _privacy(1.0, 2))
    assert set(ledger.load(tmp_path / "a.csv").noise_key) == {"public demo secret"}
    assert set(aim.noise_key) == {"the library's own, unseeded"}  # OpenDP draws AIM's noise itself
    assert set(keyed.noise_key) == {"EXPRIL_ORACLE_SECRET"}
    note = reproduction.demo_note(pd.concat([demo, aim, keyed]))
    assert note.startswith("\n2 of the 6 releases' noise was keyed by the public demo secret")
    assert reproduction.demo_note(keyed) == ""


def test_a_release_whose_noise_cannot_be_replayed_keeps_every_draw_in_its_splits_history(tmp_path):
    """AIM's noise is OpenDP's, unseeded: a rerun spends a fresh eps on the same records. The
    job's ledger keeps the last release; the split's history keeps both, and the report says so."""
    history = tmp_path / "aim_history.csv"
    for _ in range(2):  # the release, then a rerun of it
        ledger.record(tmp_path / "l.csv", None, "A", [0, 1], "aim", "aim_release", AIM(0.5, 0.0), history)
    ledger.record(tmp_path / "l3.csv", None, "A", [0, 1], "aim", "aim_release", AIM(1.0, 0.0), history)
    assert len(ledger.load(tmp_path / "l.csv")) == 2
    spent = ledger.history_spent([history, tmp_path / "never_written.csv"])
    assert spent[["seed", "eps_budget", "releases", "eps"]].values.tolist() == [
        [0, 0.5, 2, 1.0],
        [0, 1.0, 1, 1.0],
        [1, 0.5, 2, 1.0],
        [1, 1.0, 1, 1.0],
    ]
    assert "2 pairs were drawn more than once" in comparison.history_note(spent)
    assert "at most 2 releases, ε 1 in all against a budget of 0.5 (A, seed 0)" in comparison.history_note(spent)
    with pytest.raises(ValueError, match="needs a history file"):
        ledger.record(tmp_path / "m.csv", None, "A", [0], "aim", "aim_release", AIM(1.0, 0.0))
    # Releases a rerun replays (keyed noise) need no history: the same answer reveals nothing new.
    ledger.record(tmp_path / "k.csv", None, "A", [0], "errors_t0", "oracle_errors", _privacy(1.0, 2))


def test_without_the_is_step_the_paper_noise_spends_two_thirds(tmp_path):
    book = None
    for query in ["errors_t0", "errors_t1"]:
        book = ledger.record(tmp_path / "l.csv", book, "A", [0], query, "oracle_errors", _privacy(1.0, planned=2))
    assert book.eps_total.tolist() == pytest.approx([1 / 3, 2 / 3], rel=1e-12)  # of the budget of 1
    assert calibration.laplace_scale(10, 2, 1.0) == 30.0  # Eq. 14: d (T+1) / eps


def test_query_beyond_the_plan_fails_before_writing(tmp_path):
    book = None
    for query in ["errors_t0", "errors_t1"]:
        book = ledger.record(tmp_path / "l.csv", book, "A", [0], query, "oracle_errors", _privacy(1.0, planned=2))
    with pytest.raises(ledger.BudgetError, match="planned for 2"):
        ledger.record(tmp_path / "extra.csv", book, "A", [0], "errors_t2", "oracle_errors", _privacy(1.0, planned=2))
    assert not (tmp_path / "extra.csv").exists()


def test_overspending_query_fails(tmp_path):
    first = ledger.record(tmp_path / "a.csv", None, "A", [0], "errors_t0", "oracle_errors", _privacy(1.0, planned=2))
    greedy = _privacy(1.0, planned=2, scale=1.0)  # eps 10 for one query
    with pytest.raises(ledger.BudgetError, match="above its budget"):
        ledger.record(tmp_path / "b.csv", first, "A", [0], "errors_t1", "oracle_errors", greedy)


def test_no_noise_spends_infinite_budget_only_when_allowed(tmp_path):
    book = ledger.record(tmp_path / "a.csv", None, "A", [0], "errors_t0", "oracle_errors", _privacy(math.inf))
    assert math.isinf(book["eps_spent"][0])
    with pytest.raises(ledger.BudgetError):
        ledger.record(tmp_path / "b.csv", None, "A", [0], "errors_t0", "oracle_errors", _privacy(1.0, scale=0.0))


def test_noise_depends_on_the_secret_and_the_whole_query_and_is_reproducible(monkeypatch):
    edges = [np.array([0.5, 1.5]), np.array([2.0])]

    def draw(secret="s1", query="errors_t0/abc", bins=edges, scale=30.0):
        return noise.stream(secret, "A", 3, query, bins, scale).laplace(size=5)

    assert np.array_equal(draw(), draw())
    # Another secret, model, bin edge, split of the edges between features or noise scale: fresh
    # noise, so that no two answers share a draw whose difference would cancel it.
    for other in [
        draw("s2"),
        draw(query="errors_t0/abd"),
        draw(bins=[np.array([0.5, 1.6]), edges[1]]),
        draw(bins=[np.array([0.5]), np.array([1.5, 2.0])]),
        draw(scale=15.0),
    ]:
        assert not np.allclose(draw(), other)
    monkeypatch.setenv(noise.SECRET_VARIABLE, "from-the-environment")
    assert noise.secret() == "from-the-environment"
    monkeypatch.delenv(noise.SECRET_VARIABLE)
    assert noise.secret() == noise.DEMO_SECRET


@pytest.mark.slow
@pytest.mark.parametrize("args", [[], ["--configfile", "tests/smoke.yaml"], ["--config", "mechanism=counts"]])
def test_taint_audit_passes_the_workflow_and_sees_the_target_flow(args, monkeypatch):
    monkeypatch.chdir(ROOT)
    p = taint.plan(args)
    assert [str(v) for v in taint.audit(p.jobs, p.curator)] == [] and taint.unknown_roles(p.rules) == []
    assert taint.unreleased(p.jobs) == []
    tainted = taint.taint(p.jobs, p.curator)
    # The target's labels reach the references, the evaluation and the tables, not the learner:
    # the oracle's outputs are releases.
    assert {job.rule for job in p.jobs if job.release} == {"oracle_marginals", "oracle_errors"}
    assert {job.rule for job in p.jobs if set(job.output) & set(tainted)} == {
        "generate_data",
        "split_target",
        "reference_models",
        "evaluate_hypotheses",
        "aggregate_results",
    }
    assert {job.rule for job in p.jobs if set(job.input) & set(tainted)} == {
        "split_target",
        "oracle_marginals",
        "oracle_errors",
        "reference_models",
        "evaluate_hypotheses",
        "aggregate_results",
        "all",
    }


MODELS = "        models=lambda wc: [model_file("
LABELS = "        labels=labels_file,\n"
BINS_SOURCE = '        rules.generate_data.output.source,\n    output:\n        f"{R}/learner/'
FIRST_EPS_ACCURACY = (
    "        lambda wc: [] if wc.eps == EPSILONS[0] else "
    'f"{R}/eval/{wc.dataset}/{wc.seeds}/eps{EPSILONS[0]}/accuracy.csv",\n'
)
VALIDATION_COPY = '        validation=f"{R}/learner/{{dataset}}/{{seeds}}/validation.npz",\n'
COPY_RULE = """
rule stage_validation:
    input:
        f"{R}/curator/{{dataset}}/{{seeds}}/target_val.npz",
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/validation.npz",
    shell:
        "cp {input} {output}"
"""
# Each miswiring of rules/learner.smk (text replaced, or appended), the rules the audit then flags
# (the first and what reads its outputs) and one flagged read: (rule, curator file the chain
# starts from, rules along the chain, file read), by file name.
MISWIRINGS = {
    "estimate_labels reads target_val": (
        [(MODELS, '        leak=f"{R}/curator/{{dataset}}/{{seeds}}/target_val.npz",\n' + MODELS)],
        {"estimate_labels", "train_hypothesis"},
        ("estimate_labels", "target_val.npz", (), "target_val.npz"),
    ),
    "train_hypothesis reads h*": (
        [(LABELS, LABELS + '        star=f"{R}/reference/{{dataset}}/{{seeds}}/h_star.npz",\n')],
        {"train_hypothesis", "estimate_labels"},
        ("train_hypothesis", "target_val.npz", ("reference_models",), "h_star.npz"),
    ),
    # Bins chosen from the first epsilon's test accuracy (that epsilon's own runs excepted: a cycle).
    "make_bins reads an evaluation": (
        [(BINS_SOURCE, BINS_SOURCE.replace("    output:", FIRST_EPS_ACCURACY + "    output:"))],
        {"make_bins", "reweight_source", "estimate_labels", "train_hypothesis"},
        ("make_bins", "target_test.npz", ("evaluate_hypotheses",), "accuracy.csv"),
    ),
    "a new rule copies target_val for train_hypothesis": (
        [(LABELS, LABELS + VALIDATION_COPY), COPY_RULE],
        {"stage_validation", "train_hypothesis", "estimate_labels"},
        ("train_hypothesis", "target_val.npz", ("stage_validation",), "validation.npz"),
    ),
}


def miswired_copy(tmp_path, edits):
    """A copy of the project with rules/learner.smk edited: (old, new) replaced, a string appended."""
    project = project_copy(tmp_path)
    learner = project / "rules" / "learner.smk"
    for edit in edits:
        if isinstance(edit, str):
            learner.write_text(learner.read_text() + edit)
        else:
            replace_once(learner, *edit)
    return copy_args(project)


def described(violations):
    return {(v.rule, Path(v.chain[0]).name, v.chain[1::2], Path(v.file).name) for v in violations}


@pytest.mark.slow
@pytest.mark.parametrize("name", MISWIRINGS)
def test_taint_audit_catches_a_miswired_learner(tmp_path, name):
    edits, rules, read = MISWIRINGS[name]
    p = taint.plan(miswired_copy(tmp_path, edits))
    violations = taint.audit(p.jobs, p.curator)
    assert {v.rule for v in violations} == rules and read in described(violations)
    # Loading the copy's Snakefile left this process importing from the project, not the copy.
    assert not any(str(tmp_path) in entry for entry in [*sys.path, os.environ.get("PYTHONPATH", "")])


@pytest.mark.slow
def test_a_learner_rule_copying_target_val_is_caught_without_a_reader(tmp_path):
    # Nothing reads its output: it is in the plan only when asked for.
    p = taint.plan([*miswired_copy(tmp_path, [COPY_RULE]), "results/learner/A/0-4/validation.npz"])
    violations = taint.audit(p.jobs, p.curator)
    assert described(violations) == {("stage_validation", "target_val.npz", (), "target_val.npz")}


@pytest.mark.slow
def test_taint_audit_command_fails_on_a_miswired_learner(tmp_path):
    edits = MISWIRINGS["train_hypothesis reads h*"][0]
    result = subprocess.run(
        [sys.executable, "-m", "expril.privacy.taint", *miswired_copy(tmp_path, edits)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert re.search(
        r"^train_hypothesis reads results/reference/A/(\d+-\d+)/h_star.npz, derived: "
        r"results/curator/A/\1/target_val.npz -> reference_models -> results/reference/A/\1/h_star.npz$",
        result.stdout,
        re.M,
    )


def test_a_new_model_gets_fresh_noise(tmp_path):
    """Re-asking a query with another model must not reuse the noise draw: the difference of the
    two answers would then be the exact difference of the error counts."""

    rng = np.random.default_rng(0)
    x = rng.uniform(size=(1, 60, 2))
    y = (x[..., 0] > 0.5).astype(np.int8)
    save_npz(tmp_path / "val.npz", x=x, y=y, seeds=np.array([0]))
    edges = binning.make_bins(x[0], 4)
    save_npz(tmp_path / "bins.npz", seeds=np.array([0]), **binning.pack([edges]))
    ids, n_bins = binning.bin_ids(edges, x[0]), binning.bin_counts(edges).sum()
    noise = []
    for label in (0, 1):
        save_npz(tmp_path / f"h{label}.npz", seeds=np.array([0]), **mlp.constant_model(label, 1))
        curator.oracle_errors(
            tmp_path / "val.npz",
            tmp_path / "bins.npz",
            tmp_path / f"h{label}.npz",
            tmp_path / f"q{label}.npz",
            tmp_path / f"l{label}.csv",
            "A",
            "errors_t0",
            _privacy(1.0, planned=2, d=2, mechanism="counts").param(),
        )
        released = load_npz(tmp_path / f"q{label}.npz")["answers"][0]
        noise.append(released - binning.bin_sums(ids, n_bins, y[0] != label))
    assert not np.allclose(noise[0], noise[1])


def test_oracle_refuses_bins_that_do_not_match_its_noise_plan(tmp_path):
    """Bins over 3 features for a noise scale set for d = 2 would spend more than the ledger says;
    bins of another seed block would answer the wrong runs. Neither leaves a ledger or answer."""
    x = np.random.default_rng(0).normal(size=(1, 20, 2))
    save_npz(tmp_path / "val.npz", x=x, y=np.zeros((1, 20), dtype=np.int8), seeds=np.array([0]))
    wide = [np.array([0.0])] * 3
    save_npz(tmp_path / "wide.npz", seeds=np.array([0]), **binning.pack([wide]))
    save_npz(tmp_path / "other.npz", seeds=np.array([7]), **binning.pack([wide[:2]]))
    privacy = _privacy(1.0, planned=2, d=2).param()
    for bins, message in [("wide.npz", "cover 3 features.*d = 2"), ("other.npz", "holds seeds \\[7\\]")]:
        with pytest.raises(ValueError, match=message):
            curator.oracle_marginals(
                tmp_path / "val.npz", tmp_path / bins, tmp_path / "answers.npz", tmp_path / "ledger.csv", "A", privacy
            )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.npz", "val.npz", "wide.npz"]


def test_the_ledger_records_neighbours_eps_and_delta_and_the_run_total(tmp_path):
    book = None
    for query in ["marginals", "errors_t0", "errors_t1"]:
        book = ledger.record(tmp_path / "l.csv", book, "C", [4], query, "oracle_errors", _privacy(1.5))
    assert set(book.neighbours) == {mechanisms.RECORD} and set(book.delta_spent) == {0.0}
    assert list(book.eps_total) == pytest.approx([0.5, 1.0, 1.5]) and set(book.delta_budget) == {0.0}


def test_a_new_mechanism_is_one_class_and_the_ledger_composes_with_its_accountant(tmp_path, monkeypatch):
    """A made-up (eps, delta) mechanism whose queries compose in parallel (max, not sum): the ledger
    takes the run's totals and the budget check from the class, with no other change."""

    class Parallel(mechanisms.Counts):
        name, neighbours = "parallel", mechanisms.LABEL

        def query_cost(self, query):
            return self.eps, self.delta

        def compose(self, costs):
            return max(e for e, *_ in costs), max(d for _, d, *_ in costs)

    monkeypatch.setitem(mechanisms.MECHANISMS, "parallel", Parallel)
    plan = mechanisms.from_param(
        {
            "name": "parallel",
            "eps": 2.0,
            "delta": 1e-6,
            "features": 3,
            "iterations": 2,
            "importance_sampling": False,
            "secret_digest": "ignored",
        }
    )
    assert isinstance(plan, Parallel) and plan.planned_queries == 3  # uses_counts: a counts query
    book = None
    for query in ["marginals", "errors_t0", "errors_t1"]:
        book = ledger.record(tmp_path / "l.csv", book, "A", [0], query, "oracle_errors", plan)
    assert list(book.eps_total) == [2.0] * 3 and list(book.delta_total) == [1e-6] * 3
    assert set(book.neighbours) == {mechanisms.LABEL}
    with pytest.raises(ValueError, match="unknown mechanism 'nope'.*parallel"):
        mechanisms.get("nope")


def test_counts_releases_depend_on_the_bins_only_while_paper_marginals_divide_by_the_realised_size():
    """Adding one record moves one count per feature by one in a `counts` release, with the same
    noise; `paper`'s marginals divide by the realised n', so every bin's answer moves."""
    rng = np.random.default_rng(0)
    ids = np.stack([rng.integers(0, 4, 50), rng.integers(4, 7, 50)], axis=1)
    added = np.vstack([ids, [[2, 5]]])
    for name, moved in [("counts", 2), ("paper", 7)]:
        mechanism = mechanisms.get(name).at_scale(3.0, features=2)
        before, after = (mechanism.release_counts(x, 7, np.random.default_rng(1)) for x in (ids, added))
        assert np.count_nonzero(~np.isclose(before, after)) == moved
    counts = mechanisms.Counts.at_scale(3.0, features=2)
    delta = counts.release_counts(added, 7, np.random.default_rng(1)) - counts.release_counts(
        ids, 7, np.random.default_rng(1)
    )
    assert np.allclose(delta, np.eye(7)[2] + np.eye(7)[5])
