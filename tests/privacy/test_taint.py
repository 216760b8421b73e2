"""The taint audit (expril/privacy/taint.py) on small job lists written by hand: no Snakemake here."""

import re

import pytest

from expril.plugins import registry
from expril.privacy.taint import (
    ROLES,
    Job,
    Violation,
    audit,
    is_release,
    is_stacked_release,
    module_rule,
    role,
    taint,
    unknown_roles,
    unreleased,
)
from harness import ROOT

CURATOR = "res/curator"
SPLIT = Job("split_target", ("res/curator/target.npz",), ("res/curator/val.npz", "res/curator/test.npz"))
ORACLE = Job(
    "oracle_errors",
    ("res/curator/val.npz", "res/learner/h0.npz"),
    ("res/oracle/errors.npz", "res/oracle/errors.ledger.csv"),
    release=True,
)
REFERENCE = Job("reference_models", ("res/curator/val.npz",), ("res/reference/h_star.npz",))
TRAIN = Job("train_hypothesis", ("res/data/source.npz", "res/oracle/errors.npz"), ("res/learner/h1.npz",))


def test_released_answers_are_clean_and_the_learner_may_read_them():
    jobs = [SPLIT, ORACLE, TRAIN]
    assert audit(jobs, CURATOR) == []
    assert set(taint(jobs, CURATOR)) == {"res/curator/target.npz", "res/curator/val.npz", "res/curator/test.npz"}


def test_the_same_answers_without_a_release_are_tainted():
    jobs = [SPLIT, Job(ORACLE.rule, ORACLE.input, ORACLE.output), TRAIN]
    assert audit(jobs, CURATOR) == [
        Violation(
            "train_hypothesis",
            "res/oracle/errors.npz",
            ("res/curator/val.npz", "oracle_errors", "res/oracle/errors.npz"),
        )
    ]


def test_a_release_rule_without_its_release_is_reported_even_where_no_learner_reads_it():
    """DP-SGD's model is read by the evaluator only: without its ledger no learner read flags it,
    but its rule is a release rule, so the lost release is reported."""
    model = ("res/oracle/dpsgd/model.pt", "res/oracle/dpsgd/model.ledger.csv")
    evaluate = Job("evaluate_rival", ("res/curator/test.npz", model[0]), ("res/eval/dpsgd.csv",))
    released = Job("train_dpsgd", ("res/curator/val.npz",), model, release=True)
    lost = Job("train_dpsgd", ("res/curator/val.npz",), model)
    assert audit([SPLIT, lost, evaluate], CURATOR) == []
    assert unreleased([SPLIT, released, ORACLE, evaluate]) == []
    assert unreleased([SPLIT, lost, ORACLE, evaluate]) == ["train_dpsgd"]
    # The curator's own data handling and the evaluator write no ledger and are not reported.
    assert unreleased([SPLIT, REFERENCE, evaluate]) == []


def test_a_direct_read_and_a_read_two_jobs_down_name_their_origin():
    copy = Job("stage", ("res/learner/star_copy.npz",), ("res/learner/star_copy2.npz",))
    reads = Job("estimate_labels", ("res/curator/val.npz", "res/learner/star_copy2.npz"), ("res/learner/y.npz",))
    star = Job("copy_star", ("res/reference/h_star.npz",), ("res/learner/star_copy.npz",))
    # Listed consumers first: the audit orders the jobs by their files, not by the list.
    violations = audit([reads, copy, star, REFERENCE, SPLIT], CURATOR)
    assert [str(v) for v in violations] == [
        "estimate_labels reads res/curator/val.npz",
        "copy_star reads res/reference/h_star.npz, derived: res/curator/val.npz -> reference_models "
        "-> res/reference/h_star.npz",
        "stage reads res/learner/star_copy.npz, derived: res/curator/val.npz -> reference_models "
        "-> res/reference/h_star.npz -> copy_star -> res/learner/star_copy.npz",
        "estimate_labels reads res/learner/star_copy2.npz, derived: res/curator/val.npz -> "
        "reference_models -> res/reference/h_star.npz -> copy_star -> res/learner/star_copy.npz -> stage "
        "-> res/learner/star_copy2.npz",
    ]


def test_evaluator_rules_read_tainted_files_and_other_folders_are_not_the_curator():
    evaluate = Job("evaluate_hypotheses", ("res/curator/test.npz", "res/learner/h1.npz"), ("res/eval/accuracy.csv",))
    aggregate = Job("aggregate_results", ("res/eval/accuracy.csv",), ("res/table2.csv",))
    reads_notes = Job("make_bins", ("res/curator_notes/a.csv",), ("res/learner/bins.npz",))
    jobs = [SPLIT, ORACLE, TRAIN, evaluate, aggregate, reads_notes, Job("all", ("res/table2.csv",), ())]
    assert audit(jobs, CURATOR) == []
    assert "res/table2.csv" in taint(jobs, CURATOR) and "res/curator_notes/a.csv" not in taint(jobs, CURATOR)


MECHANISM = {"name": "paper", "eps": 1.0, "delta": 0.0}
LEDGER = {"answers": "res/oracle/q.npz", "ledger": "res/oracle/q.ledger.csv"}


@pytest.mark.parametrize(
    "params, output, release",
    [
        ({"code": "ab12", "mechanism": MECHANISM}, LEDGER, True),
        ({"mechanism": MECHANISM | {"name": "counts"}}, LEDGER, True),
        ({"mechanism": MECHANISM | {"name": "shuffle"}}, LEDGER, False),  # not registered
        ({"mechanism": MECHANISM}, {"answers": "res/oracle/q.npz"}, False),  # no ledger row
        ({"mechanism": MECHANISM}, {"ledger": "res/oracle/q.csv"}, False),
        ({"mechanism": MECHANISM}, {"answers": LEDGER["ledger"]}, False),  # a ledger, not named so
        ({"mechanism": "paper"}, {"weights": "res/learner/w.npz"}, False),  # reweight_source today
    ],
)
def test_a_release_applies_a_registered_mechanism_and_writes_a_ledger(params, output, release):
    assert is_release(params, output) is release


def test_a_stack_is_a_release_where_each_of_its_runs_is_one_and_it_writes_theirs_alone():
    """rules/stacked.smk: a stack's params hold its runs' own jobs (`runs`); an evaluation stack's
    are its scores' arguments (a dict), a training stack's runs write no ledger."""
    other = {"answers": "res/oracle/r.npz", "ledger": "res/oracle/r.ledger.csv"}
    runs = [
        {"params": {"mechanism": MECHANISM}, "outputs": LEDGER},
        {"params": {"mechanism": MECHANISM}, "outputs": other},
    ]
    written = [*LEDGER.values(), *other.values()]
    assert is_stacked_release({"runs": runs}, written)
    assert not is_stacked_release({"runs": runs}, [*written, "res/oracle/extra.npz"])  # a file no run accounts for
    assert not is_stacked_release({"runs": runs[:1] + [{"params": {}, "outputs": other}]}, written)
    assert not is_stacked_release({"runs": []}, []) and not is_stacked_release({"runs": {"rivals": []}}, [])
    training = [{"params": {"mechanism": MECHANISM}, "outputs": {"out_path": "res/learner/m.npz"}}]
    assert not is_stacked_release({"runs": training}, ["res/learner/m.npz"])


def test_roles_naming_a_rule_the_workflow_lacks_are_reported():
    rules = [*ROLES, "make_bins"]
    assert unknown_roles(rules) == []
    assert unknown_roles([r for r in rules if r != "evaluate_hypotheses"] + ["evaluate"]) == ["evaluate_hypotheses"]


def test_a_module_rule_has_its_rule_role_and_a_module_curator_is_tainted():
    modules = ["configured", "label_gain_gain2"]
    assert module_rule("split_target_label_gain_gain2", modules) == "split_target"
    assert module_rule("split_target", modules) is None
    curators = ("res/curator", "res/ambiguity/configured/curator")
    split = Job(
        "split_target_configured",
        ("res/ambiguity/configured/curator/target.npz",),
        ("res/ambiguity/configured/curator/val.npz",),
        base="split_target",
    )
    reads = Job(
        "make_bins_configured", ("res/ambiguity/configured/curator/val.npz",), ("res/bins.npz",), base="make_bins"
    )
    assert [v.rule for v in audit([split, reads], curators)] == ["make_bins_configured"]
    assert audit([split], "res/curator") == []  # outside the folders named, nothing is tainted


def _rule_steps():
    """{rule: (steps module, function)} for every rule whose script calls a step; None where the
    script calls none (the tables and reports)."""
    rules = re.findall(
        r"^rule (\w+):\n(.*?)(?=^rule |\Z)",
        "".join(p.read_text() for p in sorted((ROOT / "rules").glob("*.smk"))),
        re.S | re.M,
    )
    found = {}
    for name, body in rules:
        script = re.search(r'script:\s+"\.\./(workflow_scripts/\w+\.py)"', body)
        if script:
            call = re.search(r"^(\w+)\.(\w+)\(", (ROOT / script.group(1)).read_text(), re.M)
            found[name] = (
                call.groups() if call and call.group(1) in ("world", "curator", "learner", "evaluator") else None
            )
    return found


def test_a_rules_step_lives_in_the_module_of_its_audited_role():
    """The package's files and the audit's ROLES say the same thing: a curator or release rule runs a
    step of expril.steps.curator, an evaluator rule one of steps.evaluator (or a report), and every
    other rule, audited as the learner's, one of steps.learner or steps.world."""
    modules = {"learner": ("learner", "world"), "release": ("curator",)}
    found = _rule_steps()
    assert len(found) == 25 and {"make_bins", "oracle_errors", "evaluate_rival", "generate_data"} <= set(found)
    for rule, step in found.items():
        role = ROLES.get(rule, "learner")
        if step is None:
            assert role == "evaluator", rule
        else:
            assert step[0] in modules.get(role, (role,)), (rule, step)


def test_a_plugin_methods_release_is_audited_as_a_release_and_its_other_steps_as_the_learners():
    """A plug-in method's rules (rules/plugins.smk) take their roles from its steps: ROLES names none."""
    for method in registry.methods().values():
        for step in method.steps:
            assert step.rule not in ROLES
            assert role(step.rule) == ("release" if step.release else None), step.rule
            # a step of ExPriL's a plug-in reuses (ExPriL by MMD's) keeps the side of its module
            module = step.run.__module__
            if module.startswith("expril.steps."):
                sides = ("curator",) if step.release else ("learner", "world")
                assert module.rsplit(".", 1)[1] in sides, step.rule
