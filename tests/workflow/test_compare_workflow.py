"""The comparison as a user runs it (`snakemake tune`, then `snakemake compare`, rules/compare.smk):
the extended study's plan, its taint audit, and the smoke version end to end, tuned and as
configured, with cached partial reruns."""

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from expril.privacy import taint
from expril.reports import comparison, pairing, published
from harness import (
    ROOT,
    TUNING,
    copy_args,
    counts,
    dry_run_jobs,
    plan,
    project_copy,
    replace_once,
    snakemake,
)

EXTENDED = ["--configfile", "config/extended.yaml"]
TUNE_FILES = ["calibration.csv", "choice.yaml", "tuning.md"]
SMOKE = [*EXTENDED, "tests/extended_smoke.yaml"]
# The comparison's releases: the rules that apply a registered mechanism and write a ledger.
RELEASES = {
    "oracle_marginals",
    "oracle_errors",
    "oracle_proportions",
    "train_dpsgd",
    "aim_release",
    "dpmerf_release",
    "oracle_embedding",
    "mmd_errors",
}
RIVAL_RULES = {
    "llp_bins",
    "oracle_proportions",
    "train_llp",
    "train_dpsgd",
    "evaluate_rival",
    "compare_methods",
    "aim_release",
    "train_aim",
    "dpmerf_release",
    "dpmerf_samples",
    "train_dpmerf",
    "feature_maps",
    "oracle_embedding",
    "mmd_reweight",
    "mmd_errors",
    "mmd_labels",
    "mmd_train",
}
PLUGIN_LEARNERS = {
    "llp_bins",
    "train_llp",
    "train_aim",
    "dpmerf_samples",
    "train_dpmerf",
    "mmd_reweight",
    "mmd_labels",
    "mmd_train",
}
# The plug-in methods' rules (expril/plugins/): the comparison's rules but its own.
PLUGIN_RULES = RIVAL_RULES - {"evaluate_rival", "compare_methods", "feature_maps"}
# Without a choice file the comparison runs as configured only.
UNTUNED = ["--config", 'comparison={"choice": "no/choice.yaml"}']
# The configured currencies (config.yaml, comparison: currencies): the headline, where every method
# runs, and pure DP, where ExPriL, LLP and AIM run.
CURRENCIES = ["approx", "pure"]
# The extended study's datasets (config/extended.yaml): the paper's seven and the six real tables;
# calibrated: all but CTG-A and CTG-B, whose choices are transferred; with an IS step: C, D, E,
# CTG-B and the six real tables, of them calibrated all but CTG-B.
DATASETS, CALIBRATED, WITH_IS, CALIBRATED_WITH_IS = 13, 11, 10, 9


@pytest.mark.slow
def test_the_extended_study_plans_every_method_dataset_and_eps():
    config = yaml.safe_load((ROOT / "config/extended.yaml").read_text())
    assert config["epsilons"] == [0.1, 0.3, 1, 3, 10, "inf"] and config["runs"] == config["seed_block"] == 20
    n = counts(plan("compare", *EXTENDED, *UNTUNED))
    cells, mmd = DATASETS * 6, WITH_IS * 6  # datasets x eps, one seed block; ExPriL by MMD where an IS step is
    # ExPriL, LLP and AIM in both currencies (LLP's bins, public, redrawn in each), the others in one;
    # at eps = inf pure DP reads approx's runs (currency.home), but LLP's bins and release of its
    # checked cell there, whose digests a study publishes (pairing_digests): one more of each.
    shared = 2 * cells - DATASETS
    assert n["train_llp"] == n["aim_release"] == n["train_aim"] == shared
    assert n["llp_bins"] == n["oracle_proportions"] == shared + 1
    assert n["train_dpsgd"] == n["dpmerf_release"] == n["dpmerf_samples"] == n["train_dpmerf"] == cells
    assert n["feature_maps"] == DATASETS and n["oracle_embedding"] == n["mmd_reweight"] == mmd
    # ExPriL's bins, public: shared by the currencies where sized alike (Laplace's rule, and eps = inf),
    # sized for the Gaussian's sigma at (eps, 1e-5) apart (docs/comparison.md, Bins): 5 finite eps more
    assert n["oracle_marginals"] == shared and n["make_bins"] == cells + DATASETS * 5
    # ExPriL by MMD's chain (a plug-in with several releases, at (eps, 1e-5) only): T = 2 error
    # queries and h_1 shared by C and I, h_2 each's; its two reported models scored as the rivals' are
    assert n["mmd_errors"] == 2 * mmd and n["mmd_labels"] == n["mmd_train"] == 3 * mmd
    assert n["evaluate_rival"] == 6 * cells + 2 * mmd - 2 * DATASETS and n["evaluate_hypotheses"] == shared
    assert n["train_hypothesis"] == 3 * shared and n["compare_methods"] == 2 and "aggregate_results" not in n


@pytest.mark.slow
def test_the_calibration_trains_each_shape_of_a_block_in_one_job():
    """On the calibration block, every h_t of one currency, iteration and model (its eps, settings
    and variants) is one stacked job's (rules/stacked.smk); the files are the ones the runs read."""
    jobs = plan("tune", *EXTENDED)
    stacked = [job for job in jobs if job["rule"].startswith("train_hypotheses_")]
    # the calibrated datasets x 2 currencies x T = 2 x 3 models
    assert len(stacked) == CALIBRATED * 2 * 2 * 3
    assert not [job for job in jobs if job["rule"] == "train_hypothesis"]
    calibration = [f for job in stacked for f in job["output"]]
    assert all("/10000-10004/" in f for f in calibration)
    # 12 settings x 4 eps, less the 6 that repeat others without noise (snr 16 or 1): 42 runs per
    # dataset in approx, each an h_1 shared by C and I; the 30 of them at T = 2 (as configured, snr
    # 16, snr 1; T1 moves apart from the bins: config/tuning.yaml one_at_a_time) an h_2 for each.
    # Pure DP's runs at eps = inf are approx's (currency.home): its 36 at the finite eps, 27 at T = 2
    assert len(calibration) == len(set(calibration)) == CALIBRATED * ((42 + 2 * 30) + (36 + 2 * 27))
    assert {f for job in jobs for f in job["input"] if f in set(calibration)} == set(calibration)


@pytest.mark.slow
def test_the_calibration_stacks_the_plug_ins_trainings():
    """The plug-ins' steps that train several runs at once (Step.per_run) are one job per dataset,
    currency, model (and ExPriL by MMD's h_t) on the calibration block: every model the calibration
    evaluates or trains on, and no run's own training job."""
    jobs = plan("tune", *EXTENDED)
    # A run per setting and eps: 12 settings x 4 eps, less those that repeat others without noise
    # (AIM's and LLP's knobs but the model are the noise's: 9; MMD's snr 16 and 1: 6), pure DP's at
    # eps = inf approx's (its 3 models). {rule: (jobs, files)}: the calibrated datasets (MMD: those
    # with an IS step) x the method's currencies x 3 models, and for MMD x its h_1 (C's and I's),
    # C's h_2 and I's h_2
    expected = {
        "train_llp": (CALIBRATED * 2 * 3, CALIBRATED * (39 + 36)),
        "train_aim": (CALIBRATED * 2 * 3, CALIBRATED * (39 + 36)),
        "train_dpmerf": (CALIBRATED * 3, CALIBRATED * 48),
        "mmd_train": (CALIBRATED_WITH_IS * 3 * 3, CALIBRATED_WITH_IS * 42 * 3),
    }
    read = {f for job in jobs for f in job["input"]}
    for rule, (n_jobs, n_files) in expected.items():
        stacked = [job for job in jobs if job["rule"].startswith(f"{rule}_")]
        assert len(stacked) == n_jobs, rule
        assert not [job for job in jobs if job["rule"] == rule]
        models = [f for job in stacked for f in job["output"]]
        assert len(models) == len(set(models)) == n_files, rule
        assert set(models) <= read


@pytest.mark.slow
def test_the_calibration_runs_each_plug_in_steps_runs_of_one_file_each_in_one_job():
    """A plug-in step whose runs write one file each (no wildcards of its own, no Step.per_run: the
    releases, LLP's bins, DP-MERF's generators, MMD's reweighting) is one job per dataset and
    currency on the calibration block: each file once, every one the calibration reads, and no run's
    own job."""
    jobs = plan("tune", *EXTENDED)
    read = {f for job in jobs for f in job["input"]}
    # the calibrated datasets (MMD: those with an IS step) x the method's currencies
    expected = {
        "llp_bins": CALIBRATED * 2,
        "oracle_proportions": CALIBRATED * 2,
        "aim_release": CALIBRATED * 2,
        "train_dpsgd": CALIBRATED,
        "dpmerf_release": CALIBRATED,
        "dpmerf_samples": CALIBRATED,
        "oracle_embedding": CALIBRATED_WITH_IS,
        "mmd_reweight": CALIBRATED_WITH_IS,
    }
    for rule, n_jobs in expected.items():
        stacks = [job for job in jobs if re.fullmatch(f"{rule}_(approx|pure)", job["rule"])]
        assert len(stacks) == n_jobs, rule
        assert not [job for job in jobs if job["rule"] == rule]
        files = [f for job in stacks for f in job["output"]]
        assert len(files) == len(set(files)), rule
        # DP-SGD's model is its release, which the evaluation reads; a release's ledger is read by
        # the checks that follow it, or by no job (the last release of a run)
        assert {f for f in files if not f.endswith(".ledger.csv")} <= read, rule


@pytest.mark.slow
def test_the_calibration_evaluates_each_method_of_a_dataset_in_one_job():
    """The calibration's evaluations are one job per dataset, currency and method (C and I one):
    every file the selection reads, and no run's own evaluation job."""
    jobs = plan("tune", *EXTENDED)
    assert not [job for job in jobs if job["rule"] in ("evaluate_rival", "evaluate_hypotheses")]
    stacks = [job for job in jobs if job["rule"].startswith("evaluate_")]
    # the calibrated datasets x (ExPriL, LLP and AIM in 2 currencies, DP-SGD and DP-MERF in one) + C
    # and I by MMD on those with an IS step
    assert len(stacks) == CALIBRATED * (3 * 2 + 2) + CALIBRATED_WITH_IS * 2
    written = [f for job in stacks for f in job["output"]]
    selected = {f for job in jobs if job["rule"] == "select_settings" for f in job["input"] if "/eval/" in f}
    assert len(written) == len(set(written)) and set(written) == selected
    # each stack reads the models of its runs: ExPriL's h_0..h_T, a rival's final model
    llp = next(job for job in stacks if job["rule"] == "evaluate_llp_A_approx")
    assert len(llp["output"]) == 39 and sum("/model.npz" in f for f in llp["input"]) == 39


@pytest.mark.slow
def test_the_tuned_study_runs_every_chosen_setting():
    """With the published choice (data/tuning/<currency>/, round 3's, read per currency), the
    comparison evaluates each method's chosen setting at every dataset and eps in each currency it
    runs in, beside its as-configured runs; at eps = inf, pure DP's are approx's (currency.home)."""
    outputs = {f for job in plan("compare", *EXTENDED) for f in job["output"]}
    for currency in CURRENCIES:
        choice = yaml.safe_load((TUNING / currency / "choice.yaml").read_text())
        assert choice
        for method, datasets in choice.items():
            for dataset, chosen in datasets.items():
                for eps, setting in chosen.items():
                    tag = "@approx" if eps == "inf" else f"@{currency}"
                    if method in ("C", "I"):
                        assert f"results/extended/eval/{dataset}/0-19/eps{eps}{tag}{setting}/accuracy.csv" in outputs
                    else:
                        assert f"results/extended/eval/{dataset}/0-19/eps{eps}{tag}/{method}{setting}.csv" in outputs


@pytest.mark.slow
def test_the_paper_protocol_plans_no_rival():
    """Nor any run in a currency: the reproduction's paths carry no currency tag."""
    jobs = plan()
    assert not RIVAL_RULES & set(counts(jobs)) and "compare_methods" not in counts(jobs)
    assert not any("@" in f for job in jobs for f in job["output"] + job["input"])


@pytest.mark.slow
def test_the_comparison_passes_the_taint_audit_with_its_releases(monkeypatch):
    monkeypatch.chdir(ROOT)
    p = taint.plan(["compare", *SMOKE])
    assert [str(v) for v in taint.audit(p.jobs, p.curator)] == [] and taint.unreleased(p.jobs) == []
    assert {job.rule for job in p.jobs if job.release} == RELEASES
    tainted = taint.taint(p.jobs, p.curator)
    # The learner's LLP, AIM, DP-MERF and ExPriL by MMD rules read the source and the releases only;
    # DP-SGD's model is a release.
    assert not {job.rule for job in p.jobs if set(job.input) & set(tainted)} & (PLUGIN_LEARNERS | {"feature_maps"})
    assert {job.rule for job in p.jobs if set(job.output) & set(tainted)} >= {"evaluate_rival", "compare_methods"}


@pytest.mark.slow
def test_the_calibration_stacks_keep_the_roles_of_the_rules_whose_runs_they_run(monkeypatch):
    """rules/stacked.smk: an evaluation stack is the evaluator's (it reads the target's test split),
    a training stack the learner's, which reads nothing derived from the target."""
    monkeypatch.chdir(ROOT)
    p = taint.plan(["tune", *SMOKE])
    assert [str(v) for v in taint.audit(p.jobs, p.curator)] == [] and taint.unreleased(p.jobs) == []
    tainted = taint.taint(p.jobs, p.curator)
    stacks = {job.rule: job for job in p.jobs if job.base and job.base != job.rule}
    evaluations = {r for r, job in stacks.items() if job.base in ("evaluate_rival", "evaluate_hypotheses")}
    releases = {r for r, job in stacks.items() if job.base in RELEASES}
    learners = set(stacks) - evaluations - releases
    assert evaluations and all(
        stacks[r].role == "evaluator" and set(stacks[r].input) & set(tainted) for r in evaluations
    )
    # a stack of releases is a release: it reads the target's split, and what it writes is untainted
    # (MMD's error queries, which name their iteration, are left one job a run)
    assert {stacks[r].base for r in releases} == RELEASES & PLUGIN_RULES - {"mmd_errors"}
    assert all(stacks[r].role == "release" and stacks[r].release for r in releases)
    assert not {f for r in releases for f in stacks[r].output} & set(tainted)
    assert learners and all(stacks[r].role is None and not set(stacks[r].input) & set(tainted) for r in learners)
    assert {stacks[r].base for r in learners} >= {
        "train_hypothesis",
        "train_llp",
        "train_aim",
        "mmd_train",
        "llp_bins",
        "dpmerf_samples",
        "mmd_reweight",
    }


# Each miswiring of the plug-in framework's rules (rules/plugins.smk; a miswired plug-in is refused
# before the audit: tests/plugins): (old, new), the rules the audit then flags, one flagged read
# (rule, curator file the chain starts from, rules along the chain, file read), by file name, and
# the releases that no longer count as one.
COMPARE_MISWIRINGS = {
    "the learner's source is the curator's split": (
        ('"source": rules.generate_data.output.source,', '"source": rules.split_target.output.val,'),
        {"llp_bins", "train_llp", "train_aim", "mmd_reweight", "mmd_labels", "mmd_train"},
        ("train_aim", "target_val.npz", (), "target_val.npz"),
        set(),
    ),
    "the releases lose their ledger": (
        ('{"ledger": base.ledger_of(', '{"book": base.ledger_of('),
        {"train_llp", "train_aim", "dpmerf_samples", "train_dpmerf", "mmd_reweight", "mmd_labels", "mmd_train"},
        ("train_dpmerf", "target_val.npz", ("dpmerf_release", "dpmerf_samples"), "samples.npz"),
        {"oracle_proportions", "train_dpsgd", "aim_release", "dpmerf_release", "oracle_embedding", "mmd_errors"},
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", COMPARE_MISWIRINGS)
def test_taint_audit_catches_a_miswired_rival(tmp_path, name):
    """The comparison's audit (as test_the_comparison_passes_the_taint_audit_with_its_releases) on a
    copy of the project with the plug-ins' rules miswired: learner rules reading the curator's
    validation split, or releases whose ledger is no longer their `ledger` output (reported as such)."""
    (old, new), rules, read, lost = COMPARE_MISWIRINGS[name]
    project = project_copy(tmp_path)
    replace_once(project / "rules/plugins.smk", old, new)
    smoke = ["--configfile", str(project / "config/extended.yaml"), str(project / "tests/extended_smoke.yaml")]
    p = taint.plan(["compare", *copy_args(project), *smoke])
    violations = taint.audit(p.jobs, p.curator)
    described = {(v.rule, Path(v.chain[0]).name, v.chain[1::2], Path(v.file).name) for v in violations}
    assert {v.rule for v in violations} == rules and (read is None or read in described)
    releases = {job.rule for job in p.jobs if job.release}
    assert releases == RELEASES - lost
    assert taint.unreleased(p.jobs) == sorted(lost)


@pytest.mark.slow
def test_a_compared_variant_that_is_not_run_is_refused(tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"variants": ["I"]}))
    result = snakemake("--dry-run", "compare", *EXTENDED, str(tmp_path / "c.yaml"), check=False)
    assert result.returncode != 0 and "methods lists C-ExPriL" in result.stdout + result.stderr


def _choice(results, tuned=None):
    """Write to `results`, reading the choice the calibration wrote to `tuned` (default: `results`)."""
    choice = f"{tuned or results}/tune/{{currency}}/choice.yaml"
    return ["--config", f"results={results}", f'comparison={{"choice": "{choice}"}}']


@pytest.fixture(scope="session")
def extended_smoke(tmp_path_factory):
    """The smoke study as a user runs it: the calibration on the smoke grids, then the comparison,
    tuned and as configured."""
    results = tmp_path_factory.mktemp("extended_smoke")
    snakemake("tune", "--cores", "2", *SMOKE, *_choice(results))
    snakemake("compare", "--cores", "2", *SMOKE, *_choice(results))
    return results


def pending(results, tmp_path, change):
    (tmp_path / "change.yaml").write_text(yaml.safe_dump(change))
    out = snakemake("--dry-run", "compare", *SMOKE, str(tmp_path / "change.yaml"), *_choice(results))
    return [job for job in dry_run_jobs(out.stdout) if job["rule"] != "compare"]


@pytest.mark.slow
def test_the_smoke_comparison_writes_every_output(extended_smoke):
    files = ["comparison.csv", "comparison.md", "comparison_runs.csv", "comparison_tests.csv", "comparison_ranks.csv"]
    files += ["privacy_utility.pdf", "privacy_utility.png", "critical_difference.png"]
    for currency in CURRENCIES:
        for name in [*(f"comparison/{currency}/{f}" for f in files), *(f"tune/{currency}/{f}" for f in TUNE_FILES)]:
            assert (extended_smoke / name).stat().st_size > 0, name
    # The report: one section per currency, the headline first, each naming its (eps, delta, relation).
    report = (extended_smoke / "comparison.md").read_text()
    headings = [line for line in report.splitlines() if line.startswith("## ")]
    assert headings == [
        "## (ε, δ = 1e-05), neighbours: add/remove one record: currency `approx`",
        "## (ε, δ = 0, pure ε-DP), neighbours: add/remove one record: currency `pure`",
    ]
    tables = {c: pd.read_csv(extended_smoke / f"comparison/{c}/comparison.csv") for c in CURRENCIES}
    for currency, n_methods, delta in (("approx", 8, 1e-5), ("pure", 4, 0.0)):
        table = tables[currency]
        assert list(table.columns) == comparison.TABLE_COLUMNS and set(table.n_runs) == {2}
        methods = table[~table.method.isin(comparison.REFERENCES)]
        assert len(methods) == 3 * n_methods * 2 * 2  # datasets x methods x eps x (tuned, as configured)
        assert (methods.eps_spent <= methods.eps).all() and set(methods.neighbours) == {"add/remove one record"}
        # Every method spends the currency's delta at eps 1 (the Gaussian ones) and none at inf.
        assert set(methods[methods.eps == 1].delta) == {delta} and set(methods[methods.eps > 1].delta) == {0.0}
        assert table["mean"].between(0, 100).all()
    approx, pure = (tables[c][~tables[c].method.isin(comparison.REFERENCES)] for c in CURRENCIES)
    assert set(approx[approx.method == "aim"].mechanisms) == {"aim-zcdp"}
    assert set(pure[pure.method == "aim"].mechanisms) == {"aim"}
    assert set(approx[approx.method == "C"].mechanisms) == {"gaussian-counts"}
    assert set(pure[pure.method == "C"].mechanisms) == {"counts"}
    # By MMD, the embedding query in zCDP where there is an IS step (C, CTG-B).
    mmd = approx[(approx.method == "C-mmd") & (approx.eps == 1) & (approx.column == "tuned")].set_index("dataset")
    assert mmd.mechanisms.to_dict() == {
        "A": "gaussian-counts",
        "C": "gaussian-counts; zcdp-embedding",
        "CTG-B": "gaussian-counts; zcdp-embedding",
    }
    # The tuned column runs the chosen settings; as configured, every method's first.
    choice = yaml.safe_load((extended_smoke / "tune/approx/choice.yaml").read_text())
    tuned = approx[approx.column == "tuned"].set_index(["method", "dataset", "eps"]).setting
    assert tuned[("dpsgd", "C", 1.0)] == (choice["dpsgd"]["C"]["1"] or "configured")
    assert set(approx[approx.column == "as configured"].setting) == {"configured"}
    calibration = pd.read_csv(extended_smoke / "tune/approx/calibration.csv")
    assert calibration.seed.min() >= 10000 and set(calibration.eps) == {1.0, float("inf")}
    # eps = inf runs once (currency.home): pure DP's table reads approx's runs, and evaluates none
    assert list(extended_smoke.glob("eval/*/*/epsinf@approx*"))
    assert not list(extended_smoke.glob("eval/*/*/epsinf@pure*"))
    runs = {c: pd.read_csv(extended_smoke / f"comparison/{c}/comparison_runs.csv") for c in CURRENCIES}
    shared = [
        r[(r.eps == np.inf) & r.method.isin(["C", "I", "llp", "aim"]) & (r.column == "as configured")]
        .set_index(["dataset", "method", "seed"])
        .accuracy.sort_index()
        for r in runs.values()
    ]
    assert len(shared[0]) == 3 * 4 * 2 and shared[0].equals(shared[1])
    tests = pd.read_csv(extended_smoke / "comparison/approx/comparison_tests.csv")
    assert 0 < len(tests) <= 3 * 7 * 2 and (tests.n_pairs == 2).all() and (tests.p_holm >= tests.p_value).all()


@pytest.mark.slow
def test_the_smoke_comparison_reruns_only_what_a_change_needs(extended_smoke, tmp_path):
    assert pending(extended_smoke, tmp_path, {}) == []
    # A new eps: every method's jobs at that eps, then the comparison (its settings: the nearest
    # calibrated eps's).
    jobs = pending(extended_smoke, tmp_path, {"epsilons": [1, "inf", 3]})
    assert {job["rule"] for job in jobs} >= RIVAL_RULES - {"feature_maps"}
    assert all(
        re.search("/eps3(@approx|@pure)?(-mmd)?[~/]", f)
        for job in jobs
        if job["rule"] not in ("compare_methods", "comparison_report", "feature_maps")
        for f in job["output"]
    )
    # A method dropped (or added back): the comparisons only.
    assert counts(pending(extended_smoke, tmp_path, {"comparison": {"methods": ["C", "llp"]}})) == {
        "compare_methods": 2,
        "comparison_report": 1,
    }
    # DP-SGD's configured epochs: its audit, of the plan's new steps, then every DP-SGD run of its
    # currency, which waits for the audit (as configured and chosen), and their evaluations.
    choice = yaml.safe_load((extended_smoke / "tune/approx/choice.yaml").read_text())["dpsgd"]
    runs = {(d, e, s) for d, chosen in choice.items() for e, s in chosen.items()}
    runs |= {(d, e, "") for d in choice for e in ("1", "inf")}
    assert counts(pending(extended_smoke, tmp_path, {"comparison": {"dpsgd": {"epochs": 6}}})) == {
        "plugin_audit": 1,
        "train_dpsgd": len(runs),
        "evaluate_rival": len(runs),
        "compare_methods": 1,
        "comparison_report": 1,
    }
    # MST in AIM's place in pure DP: AIM's release there, and every AIM network trained on it.
    trained = {
        (d, e, s)
        for d, chosen in yaml.safe_load((extended_smoke / "tune/pure/choice.yaml").read_text())["aim"].items()
        for e, s in chosen.items()
    } | {(d, e, "") for d in ("A", "C", "CTG-B") for e in ("1", "inf")}
    mst = {"comparison": {"currencies": {"pure": {"mechanisms": {"aim": "mst"}}}}}
    assert counts(pending(extended_smoke, tmp_path, mst)) == {
        "plugin_audit": 1,  # AIM's in pure DP, of MST
        "aim_release": 6,
        "train_aim": len(trained),
        "evaluate_rival": len(trained),
        "compare_methods": 1,
        "comparison_report": 1,
    }


@pytest.mark.slow
def test_the_comparison_does_not_depend_on_the_seed_block(extended_smoke, tmp_path):
    """Dataset C (an IS step, so ExPriL by MMD releases its embedding) rerun one seed per block on
    the smoke study's choice: every run's accuracy is the smoke study's (blocks of 2) to the bit,
    AIM's excepted, whose noise OpenDP draws unseeded."""
    results = tmp_path / "blocks_of_one"
    snakemake("compare", "--cores", "2", *SMOKE, *_choice(results, extended_smoke), "datasets=[C]", "seed_block=1")

    def runs(folder):
        frame = pd.read_csv(folder / "comparison/approx/comparison_runs.csv")
        return frame[frame.dataset == "C"].sort_values(["method", "column", "eps", "seed"]).reset_index(drop=True)

    ones, twos = runs(results), runs(extended_smoke)
    assert len(ones) == len(twos) and set(ones.method) >= {"C", "I", "C-mmd", "llp", "dpsgd", "aim", "dpmerf"}
    pd.testing.assert_frame_equal(ones[ones.method != "aim"], twos[twos.method != "aim"])


@pytest.mark.slow
def test_a_csv_data_set_enters_the_comparison_from_its_config_entry(monkeypatch):
    """BC (config.yaml: a csv entry and its file, docs/workflow.md) in the smoke comparison: every
    method runs on it, by MMD too (it has an IS step), and its plan passes the taint audit."""
    monkeypatch.chdir(ROOT)
    config = ["--config", "datasets=[BC]", 'comparison={"choice": "no/choice.yaml"}']
    jobs = plan("compare", *SMOKE, *config)
    n = counts(jobs)
    # per eps: LLP and AIM in both currencies, but at eps = inf, where pure DP reads approx's runs
    # (LLP's release there still drawn: the checked cell's pairing), DP-SGD, DP-MERF and ExPriL by
    # MMD's two models at (eps, 1e-5) only; by MMD, T = 2 error queries per eps
    assert n["generate_data"] == 1 and n["oracle_embedding"] == 2 and n["evaluate_rival"] == (6 + 2) * 2 - 2
    assert n["oracle_proportions"] == 4 and n["aim_release"] == 3 and n["train_dpsgd"] == n["dpmerf_release"] == 2
    assert n["mmd_errors"] == 2 * 2
    assert any("data/breast_cancer/breast_cancer.csv" in job["input"] for job in jobs)
    p = taint.plan(["compare", *SMOKE, *config])
    assert taint.audit(p.jobs, p.curator) == [] and taint.unreleased(p.jobs) == []


def _keyed(path, key):
    return pd.read_csv(path).sort_values(key).reset_index(drop=True)


@pytest.mark.slow
def test_a_method_run_against_the_published_study_gives_the_studys_tables(extended_smoke, tmp_path):
    """The smoke study as a published one (summary/comparison's two tables): LLP run alone beside it
    reads every other method and the references from it, and its cells rerun here pair with the
    published ones and equal them, so the tables are the study's own; an altered published run is
    refused, by cell."""
    folder = tmp_path / "published"
    for currency in CURRENCIES:
        (folder / currency).mkdir(parents=True)
        for name in (published.RUNS, published.TABLE):
            shutil.copy(extended_smoke / "comparison" / currency / name, folder / currency / name)
        for name in (pairing.PAIRING, pairing.HOST, pairing.STUDY):
            shutil.copy(extended_smoke / "pairing" / currency / name, folder / currency / name)
    choice = f"{extended_smoke}/tune/{{currency}}/choice.yaml"
    comparison = {"published": str(folder), "methods": ["llp"], "choice": choice}
    results = tmp_path / "res"
    snakemake("compare", "--cores", "2", *SMOKE, "--config", f"results={results}", f"comparison={comparison}")
    assert not (results / "reference").exists()  # h* is read, not trained
    for currency in CURRENCIES:
        checked = pd.read_csv(results / f"published/{currency}/checked.csv")
        assert (checked.difference == 0).all()
        assert set(zip(checked.dataset, checked.eps)) == {("A", 1), ("CTG-B", float("inf"))}
        assert "llp cells rerun here: identical" in (results / f"published/{currency}/checked.md").read_text()
        key = ["dataset", "method", "eps", "column"]
        mine = _keyed(results / f"comparison/{currency}/comparison.csv", key)
        study = _keyed(extended_smoke / f"comparison/{currency}/comparison.csv", key)
        assert mine.drop(columns=["mean", "std"]).equals(study.drop(columns=["mean", "std"]))
        # means and stds of the published runs' accuracies, as published (6 significant digits)
        assert np.allclose(mine[["mean", "std"]], study[["mean", "std"]], rtol=1e-5, equal_nan=True)
        tests = ["dataset", "eps", "method"]
        mine = _keyed(results / f"comparison/{currency}/comparison_tests.csv", tests)
        study = _keyed(extended_smoke / f"comparison/{currency}/comparison_tests.csv", tests)
        assert mine.drop(columns="difference").equals(study.drop(columns="difference"))
    # A published run of a checked cell altered: the mix is refused, naming the cell and the seed.
    runs = pd.read_csv(folder / "pure" / published.RUNS)
    altered = (runs.method == "llp") & (runs.dataset == "A") & (runs.eps == 1) & (runs.seed == 1)
    runs.loc[altered & (runs.column == "tuned"), ["accuracy", "correct"]] += [0.01, 3]  # 3 of 300 test records
    runs.to_csv(folder / "pure" / published.RUNS, index=False)
    result = snakemake(
        "compare", "--cores", "1", *SMOKE, "--config", f"results={results}", f"comparison={comparison}", check=False
    )
    assert result.returncode != 0
    refused = "cells rerun here differ (llp on A at eps 1 (tuned): 1 of 2 runs differ, by -3 to -3 of 300 test records"
    assert refused in result.stdout + result.stderr
