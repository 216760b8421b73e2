"""A published study as the comparison's other methods (expril.reports.published): which cells are
rerun, how they are compared with the published runs, what is read."""

import math

import pandas as pd
import pytest

from expril.reports import published

RUNS = pd.DataFrame(
    {
        "dataset": ["A", "A", "A", "A", "B", "B", "A", "A"],
        "seed": [0, 1, 0, 1, 0, 1, 0, 1],
        "method": ["llp", "llp", "C", "C", "llp", "llp", "h_star", "h_star"],
        "eps": [1.0, 1.0, 1.0, 1.0, math.inf, math.inf, math.inf, math.inf],
        "column": ["tuned"] * 6 + ["reference"] * 2,
        "setting": ["~snr=16", "~snr=16", "configured", "configured", "configured", "configured", "", ""],
        "accuracy": [0.5952, 0.862857, 0.6, 0.7, 0.8, 0.9, 0.95, 0.96],
        "positive_share": [0.5] * 6 + [None] * 2,
    }
)


@pytest.fixture
def folder(tmp_path):
    RUNS.to_csv(tmp_path / published.RUNS, index=False)
    return tmp_path


def evaluation(path, accuracies):
    pd.DataFrame({"dataset": "A", "seed": [0, 1], "eps": 1.0, "method": "llp", "accuracy": accuracies}).to_csv(
        path, index=False
    )
    return str(path)


def test_the_checked_cells_are_the_first_and_last_dataset_at_the_smallest_and_largest_eps(folder):
    cells = published.checked_cells(folder, "llp", ["A", "B"], [1.0, math.inf])
    assert cells == [("A", "1", "tuned", "~snr=16"), ("B", "inf", "tuned", "")]
    with pytest.raises(ValueError, match="has no llp run on C at eps 1: was it published with this configuration"):
        published.checked_cells(folder, "llp", ["C", "B"], [1.0, math.inf])


def test_rerun_cells_equal_to_their_published_digits_pass_and_others_are_refused_by_cell(folder, tmp_path):
    cells = [("A", "1", "tuned", "~snr=16")]
    # 0.8628571428... is published as 0.862857: equal to the published digits
    same = evaluation(tmp_path / "same.csv", [0.5952, 302 / 350])
    published.check(folder, "llp", cells, [[same]], tmp_path / "checked.csv")
    assert pd.read_csv(tmp_path / "checked.csv").equal.all()
    other = evaluation(tmp_path / "other.csv", [0.5952, 0.86])
    with pytest.raises(ValueError, match=r"differ \(llp on A at eps 1 \(tuned\): seeds \[1\]\); another library"):
        published.check(folder, "llp", cells, [[other]], tmp_path / "refused.csv")
    assert not (tmp_path / "refused.csv").exists()


def test_the_published_runs_of_the_methods_not_run_here_are_read_with_the_references(folder):
    read = published.accuracies(folder, ["llp"])
    assert set(read.method) == {"C", "h_star"} and set(read[read.method == "h_star"].setting) == {""}
    assert published.methods(folder) == ["llp", "C"]
