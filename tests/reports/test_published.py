"""A published study as the comparison's other methods (expril.reports.published): which cells are
rerun, how they pair with the published runs and how their accuracies are compared, what is read."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from expril.reports import pairing, published

N_TEST = 100
RUNS = pd.DataFrame(
    {
        "dataset": ["A", "A", "A", "A", "B", "B", "A", "A"],
        "seed": [0, 1, 0, 1, 0, 1, 0, 1],
        "method": ["llp", "llp", "C", "C", "llp", "llp", "h_star", "h_star"],
        "eps": [1.0, 1.0, 1.0, 1.0, math.inf, math.inf, math.inf, math.inf],
        "column": ["tuned"] * 6 + ["reference"] * 2,
        "setting": ["~snr=16", "~snr=16", "configured", "configured", "configured", "configured", "", ""],
        "accuracy": [0.59, 0.86, 0.6, 0.7, 0.8, 0.9, 0.95, 0.96],
        "positive_share": [0.5] * 6 + [None] * 2,
        "n_test": N_TEST,
        "correct": [59, 86, 60, 70, 80, 90, 95, 96],
    }
)
CELLS = [("A", "1", "tuned", "~snr=16")]
HOST = {"processor": "P (x86_64)", "instruction_set": "AVX512", "torch": "2.13.0"}


@pytest.fixture
def folder(tmp_path):
    RUNS.to_csv(tmp_path / published.RUNS, index=False)
    return tmp_path


def digests(path, seeds=(0, 1), noise="n"):
    rows = [("A", "1", "tuned", "~snr=16", s, part, f"{part}{s}") for s in seeds for part in ("source", "release")]
    rows += [("A", "1", "tuned", "~snr=16", s, "ledger", f"{noise}{s}") for s in seeds]
    pd.DataFrame(rows, columns=pairing.COLUMNS).to_csv(path, index=False)
    return str(path)


def hosts(tmp_path):
    paths = [tmp_path / "published_host.yaml", tmp_path / "here_host.yaml"]
    for path, capability in zip(paths, ("AVX512", "AVX2")):
        path.write_text(yaml.safe_dump(HOST | {"instruction_set": capability}, sort_keys=False))
    return [str(p) for p in paths]


def check(folder, tmp_path, correct, name="checked"):
    """published.check of CELLS rerun here with `correct` counts."""
    evaluation = tmp_path / f"{name}_eval.csv"
    seeds = range(len(correct))
    pd.DataFrame({"dataset": "A", "seed": seeds, "eps": 1.0, "accuracy": np.asarray(correct) / N_TEST}).to_csv(
        evaluation, index=False
    )
    out, report = tmp_path / f"{name}.csv", tmp_path / f"{name}.md"
    published.check(folder, "llp", CELLS, [[str(evaluation)]], [N_TEST], hosts(tmp_path), out, report)
    return pd.read_csv(out), report.read_text()


def published_runs(folder, correct):
    """The published study's A-at-eps-1 LLP cell with these counts, one run per seed."""
    cell = pd.DataFrame(
        {"dataset": "A", "seed": range(len(correct)), "method": "llp", "eps": 1.0, "column": "tuned"}
        | {"setting": "~snr=16", "n_test": N_TEST, "correct": correct, "accuracy": np.asarray(correct) / N_TEST}
    )
    cell.to_csv(folder / published.RUNS, index=False)


def test_the_checked_cells_are_the_first_and_last_dataset_at_the_smallest_and_largest_eps(folder):
    study = published.runs(folder)
    cells = published.checked_cells(study, "llp", ["A", "B"], [1.0, math.inf], "x.csv")
    assert cells == [("A", "1", "tuned", "~snr=16"), ("B", "inf", "tuned", "")]
    with pytest.raises(
        ValueError, match="x.csv has no llp run on C at eps 1: was it published with this configuration"
    ):
        published.checked_cells(study, "llp", ["C", "B"], [1.0, math.inf], "x.csv")
    # A study's own runs (dicts, the setting as its path suffix) give the cells it publishes.
    own = [
        {"method": "llp", "dataset": d, "eps": e, "column": "tuned", "setting": ""} for d, e in (("A", 1.0), ("B", 2.0))
    ]
    assert published.checked_cells(own, "llp", ["A", "B"], [1.0, 2.0], "x") == [
        ("A", "1", "tuned", ""),
        ("B", "2", "tuned", ""),
    ]


def test_the_equivalence_test_gives_the_t_distributions_closed_form_p():
    # d = +-1 record of 100 over 4 pairs: mean 0, standard error 0.01 / sqrt(3), so t = sqrt(3) at a
    # margin of 1 point and 2 sqrt(3) at 2 points on 3 degrees of freedom, where the t distribution's
    # CDF is 1/2 + (u / (1 + u^2) + atan(u)) / pi with u = t / sqrt(3).
    def p(u):
        return 0.5 - (u / (1 + u * u) + math.atan(u)) / math.pi

    published_counts, here = [50, 50, 50, 50], [51, 49, 51, 49]
    assert published.equivalence(published_counts, here, 100, margin=0.01) == pytest.approx(p(1), rel=1e-9)
    assert p(1) == pytest.approx(0.0908451, abs=1e-7)  # not equivalent at level 0.05
    assert published.equivalence(published_counts, here, 100, margin=0.02) == pytest.approx(p(2), rel=1e-9)
    assert p(2) == pytest.approx(0.0202597, abs=1e-7)  # equivalent
    # Every pair shifted alike: no variance, the shift itself decides.
    assert published.equivalence([50, 60], [50.5, 60.5], 100) == 0.0
    assert published.equivalence([50, 60], [52, 62], 100) == 1.0


def test_rerun_runs_with_the_published_counts_are_identical(folder, tmp_path):
    checked, report = check(folder, tmp_path, [59, 86])
    assert checked.difference.tolist() == [0, 0] and checked.published.tolist() == [59, 86]
    assert report.startswith("# The published study's llp cells rerun here: identical")
    assert "- published: processor P (x86_64), instruction_set AVX512" in report
    assert "- here: processor P (x86_64), instruction_set AVX2" in report
    assert "llp on A at eps 1 (tuned): identical: all 2 runs equal" in report


def test_runs_that_differ_by_a_few_records_are_equivalent_and_a_shifted_cell_is_refused(folder, tmp_path):
    base = [60, 70, 55, 65, 62, 58, 71, 66, 59, 64]
    published_runs(folder, base)
    moved = [c + d for c, d in zip(base, [0, 1, 0, -1, 0, 0, 2, 0, -1, 0])]
    checked, report = check(folder, tmp_path, moved)
    assert checked.difference.abs().sum() == 5
    assert "rerun here: equivalent on this host" in report
    assert "equivalent: 4 of 10 runs differ, by -1 to +2 of 100 test records (seeds [1, 3, 6, 8])" in report
    # Every run 3 records lower: 3 points, outside the 1-point margin.
    with pytest.raises(ValueError, match=r"differ \(llp on A at eps 1 \(tuned\): 10 of 10 runs differ, by -3 to -3"):
        check(folder, tmp_path, [c - 3 for c in base], name="shifted")
    assert not (tmp_path / "shifted.csv").exists() and not (tmp_path / "shifted.md").exists()


def test_a_rerun_that_does_not_pair_bitwise_is_refused_by_cell_seed_and_part(folder, tmp_path):
    there = digests(tmp_path / "published_pairing.csv")
    published.check_pairing(folder, "llp", [there, digests(tmp_path / "same.csv")], tmp_path / "paired.csv")
    assert pairing.read(tmp_path / "paired.csv").equals(pairing.read(there))
    other_noise = digests(tmp_path / "other_secret.csv", noise="m")
    refused = r"do not pair with the published runs \(llp on A at eps 1 \(tuned\): ledger of seeds \[0, 1\]\)"
    with pytest.raises(ValueError, match=refused):
        published.check_pairing(folder, "llp", [there, other_noise], tmp_path / "other.csv")
    assert not (tmp_path / "other.csv").exists()
    # A published study without a seed's digests does not pair either.
    missing = digests(tmp_path / "published_pairing.csv", seeds=(0,))
    with pytest.raises(ValueError, match=r"source of seeds \[1\]; llp on A at eps 1 \(tuned\): release"):
        published.check_pairing(folder, "llp", [missing, digests(tmp_path / "both.csv")], tmp_path / "missing.csv")


def test_a_seed_block_files_digests_are_per_seed(tmp_path):
    from expril.io import save_npz

    save_npz(tmp_path / "a.npz", seeds=np.array([3, 4]), x=np.array([[1.0, 2.0], [3.0, 4.0]]), n=np.array(7))
    save_npz(tmp_path / "b.npz", seeds=np.array([3, 4]), x=np.array([[1.0, 2.0], [3.0, 5.0]]), n=np.array(7))
    a, b = pairing.file_digests(tmp_path / "a.npz"), pairing.file_digests(tmp_path / "b.npz")
    assert sorted(a) == [3, 4] and a[3] == b[3] and a[4] != b[4]
    ledger = "dataset,seed,noise_key,eps_spent\nA,3,demo,0.5\nA,4,demo,0.5\n"
    (tmp_path / "l.csv").write_text(ledger)
    (tmp_path / "m.csv").write_text(ledger.replace("A,4,demo", "A,4,secret"))
    a, b = pairing.file_digests(tmp_path / "l.csv"), pairing.file_digests(tmp_path / "m.csv")
    assert a[3] == b[3] and a[4] != b[4]


def test_the_published_runs_of_the_methods_not_run_here_are_read_with_the_references(folder):
    read = published.accuracies(folder, ["llp"])
    assert set(read.method) == {"C", "h_star"} and set(read[read.method == "h_star"].setting) == {""}
    assert published.methods(folder) == ["llp", "C"]


def test_the_published_studys_bins_rule_is_its_recorded_one_and_laplaces_before_the_record(tmp_path):
    """study.yaml (pairing_digests) records the noise a study's bins are sized for; a folder without
    it (round 2's, summary/comparison/round2) is Laplace's, as round 2 sized them; currencies that disagree,
    or a rule not known, are refused by file."""
    folders = [tmp_path / "approx", tmp_path / "pure"]
    for folder in folders:
        folder.mkdir()
    assert published.bins_rule(folders) == "laplace"
    config = {"bins": {"snr": 4, "noiseless": "sqrt", "sized_for": "drawn"}}
    for folder in folders:
        (folder / pairing.STUDY).write_text(yaml.safe_dump(pairing.study(config)))
    assert published.bins_rule(folders) == "drawn"
    (folders[1] / pairing.STUDY).unlink()
    with pytest.raises(
        ValueError, match=r"pure: study.yaml: bins: one of 'drawn' or 'laplace' .*\['drawn', 'laplace'\]"
    ):
        published.bins_rule(folders)
    (folders[1] / pairing.STUDY).write_text("bins: uniform\n")
    with pytest.raises(ValueError, match=r"got \['drawn', 'uniform'\]"):
        published.bins_rule(folders)
