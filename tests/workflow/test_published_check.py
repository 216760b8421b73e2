"""The published-study check on a host of another kind (rules/compare.smk: pairing_digests,
check_pairing, check_published; docs/extending.md, "Against the published study"): a study of
LLP's checked cells made here is rerun under another MKL code path, forced in the subprocess, and
under another oracle secret or another data split. Twenty runs of 100 epochs per cell on the
study's test size (1,250 records; a small source keeps training short): at the smoke sizes, 20
epochs left every accuracy unchanged under the forced path, 100 (early stopping at work) move
some. Ten runs on 300 test records were too few for the equivalence test to have power on an AMD
EPYC host, where one run of ten moved by 12 records (TOST p = 0.065); here that host moved 30 of
the 40 runs, by -10 to +12 of 1,250 records, centred (p < 1e-9 per cell)."""

import shutil

import pandas as pd
import pytest
import yaml

from expril.reports import pairing, published
from harness import snakemake

CONFIG = {
    "datasets": ["A"],
    "runs": 20,
    "seed_block": 20,
    "benchmarks": {"A": {"n_source": 600, "n_target": 2500}},
    "training": {"epochs": 100},
    "comparison": {"methods": ["llp"], "choice": "no/choice.yaml", "columns": ["as configured"]},
}
N_TEST = CONFIG["benchmarks"]["A"]["n_target"] // 2  # the study's 1,250: half of it the curator's (val_fraction 0.5)
SEEDS = list(range(CONFIG["runs"]))
CELLS = tuple(f"A/0-{SEEDS[-1]}/eps{eps}@approx" for eps in ("1", "inf"))


def run(tmp_path, results, targets, published_folder=None, env=None, check=True, extra=()):
    (tmp_path / "check.yaml").write_text(yaml.safe_dump(CONFIG))
    comparison = {"published": str(published_folder)} if published_folder else {}
    return snakemake(
        "--cores",
        "1",
        "--configfile",
        "config/extended.yaml",
        "tests/extended_smoke.yaml",
        str(tmp_path / "check.yaml"),
        "--config",
        f"results={results}",
        f"comparison={comparison}",
        *extra,
        "--",
        *(f"{results}/{t}" for t in targets),
        check=check,
        env=env,
    )


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """LLP's two checked cells run here, published as publish_comparison writes a study: its runs
    (these cells'), the digests that pair them and this host. Pure DP's folder repeats it: the
    workflow asks that every currency's exists, and the tests check (eps, 1e-5)'s."""
    tmp_path = tmp_path_factory.mktemp("published_check")
    results = tmp_path / "study"
    run(tmp_path, results, [*(f"eval/{c}/llp.csv" for c in CELLS), "pairing/approx/pairing.csv"])
    runs = pd.concat([pd.read_csv(results / f"eval/{c}/llp.csv") for c in CELLS], ignore_index=True)
    runs = runs.assign(column="as configured", setting="configured", n_test=N_TEST)
    runs["correct"] = (runs.accuracy * N_TEST).round().astype(int)
    folder = tmp_path / "published"
    for currency in ("approx", "pure"):
        (folder / currency).mkdir(parents=True)
        runs.to_csv(folder / currency / published.RUNS, index=False)
        for name in (pairing.PAIRING, pairing.HOST, pairing.STUDY):
            shutil.copy(results / "pairing/approx" / name, folder / currency / name)
    return tmp_path, folder


@pytest.mark.slow
def test_a_rerun_under_another_mkl_code_path_pairs_bitwise_and_is_equivalent(study):
    tmp_path, folder = study
    results = tmp_path / "compatible"
    run(tmp_path, results, ["published/approx/checked.csv"], folder, env={"MKL_CBWR": "COMPATIBLE"})
    checked = pd.read_csv(results / "published/approx/checked.csv")
    assert len(checked) == 40 and (checked.difference != 0).any()  # the forced path moved some runs
    # other draws of the same training: a few records each way (1 point at most here), centred
    assert checked.difference.abs().max() <= 0.02 * N_TEST and abs(checked.difference.mean()) <= 0.01 * N_TEST
    report = (results / "published/approx/checked.md").read_text()
    assert "llp cells rerun here: equivalent on this host" in report
    assert "mkl_branch auto (by the instruction set)" in report and "mkl_branch COMPATIBLE" in report
    assert "runs differ, by " in report and "TOST p = " in report


@pytest.mark.slow
@pytest.mark.parametrize(
    "change, extra, refused",
    [
        ({"EXPRIL_ORACLE_SECRET": "another secret"}, (), f"oracle_proportions of seeds {SEEDS}"),
        ({}, ("val_fraction=0.4",), f"target_test of seeds {SEEDS}"),
    ],
    ids=["another oracle secret", "another data split"],
)
def test_a_rerun_with_other_noise_or_another_split_does_not_pair_and_is_refused(study, change, extra, refused):
    tmp_path, folder = study
    results = tmp_path / "other"
    shutil.rmtree(results, ignore_errors=True)
    result = run(tmp_path, results, ["published/approx/paired.csv"], folder, env=change, check=False, extra=extra)
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "the published cells rerun here do not pair with the published runs (llp on A at eps 1" in out
    assert refused in out


def test_a_study_published_tuned_only_refuses_a_method_run_as_configured(tmp_path):
    """Ranked against none: the new method's primary column (as configured) is not the study's."""
    folder = tmp_path / "published"
    for currency in ("approx", "pure"):
        (folder / currency).mkdir(parents=True)
        rows = [("llp", "tuned"), ("h_star", "reference")]
        pd.DataFrame(rows, columns=["method", "column"]).assign(setting="").to_csv(
            folder / currency / published.RUNS, index=False
        )
        for name in (pairing.PAIRING, pairing.HOST):
            (folder / currency / name).write_text("")
    result = run(tmp_path, tmp_path / "res", ["compare"], folder, check=False, extra=("--dry-run",))
    assert result.returncode != 0
    assert (
        f"{folder}/approx reports its methods tuned only, so yours, as configured, would be ranked against none"
        in result.stdout + result.stderr
    )


@pytest.mark.slow
def test_a_study_without_its_bins_rule_is_rerun_with_laplaces_bins(study):
    """A published folder without study.yaml is a study from before the record (round 2's), whose
    bins were sized for Laplace's noise: the rerun sizes LLP's by it (55 bins per feature on A at
    eps 1, not the Gaussian's 39), so this study's (Gaussian-sized) cell at eps 1 does not pair,
    while at eps = inf, whose bins no noise sizes, every part pairs."""
    tmp_path, folder = study
    before = tmp_path / "before"
    shutil.copytree(folder, before, dirs_exist_ok=True)
    for currency in ("approx", "pure"):
        (before / currency / pairing.STUDY).unlink()
    results = tmp_path / "laplace"
    result = run(tmp_path, results, ["published/approx/paired.csv"], before, check=False)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    refusal = next(line for line in out.splitlines() if "do not pair with the published runs" in line)
    assert f"llp on A at eps 1 (as configured): llp_bins of seeds {SEEDS}" in refusal
    assert "eps inf" not in refusal
    assert yaml.safe_load((folder / "approx" / pairing.STUDY).read_text()) == {"bins": "drawn"}
