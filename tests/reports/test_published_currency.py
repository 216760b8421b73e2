"""A currency in which no configured method runs, against a published study (a user's method in
pure DP only, docs/extending.md): its table is the published study's alone, unchanged, checked
against the published runs (its record), not against compare()'s earlier output."""

import pandas as pd
import pytest
import stats_reference

from expril.plugins import registry
from expril.reports import comparison, design
from expril.workflow.config import planned_config
from expril.workflow.currency import currencies
from harness import ROOT

# compare()'s outputs, as rules/compare.smk names them
OUTPUTS = {
    "comparison_csv": "comparison.csv",
    "comparison_md": "comparison.md",
    "runs": "comparison_runs.csv",
    "tests": "comparison_tests.csv",
    "ranks": "comparison_ranks.csv",
    "figure_pdf": "privacy_utility.pdf",
    "figure_png": "privacy_utility.png",
    "cd_pdf": "critical_difference.pdf",
    "cd_png": "critical_difference.png",
}


def test_a_currency_without_new_runs_reports_the_published_study_unchanged(tmp_path):
    """Its table holds the published cells with their published privacy, their means and standard
    deviations those of the published runs, and its tests are scipy's on those runs."""
    config = planned_config(ROOT)
    folder = ROOT / "summary/comparison/round2/approx"
    out = {key: str(tmp_path / name) for key, name in OUTPUTS.items()}
    designs = design.designs(config)
    comparison.compare(
        runs=[],
        reference_files=[],
        methods=[],
        datasets=config["datasets"],
        iterations=config["iterations"],
        designs=designs,
        out=out,
        published_folder=str(folder),
        currency=currencies(config, registry.reported())["approx"],
    )
    cell = ["dataset", "method", "eps", "column"]
    table = pd.read_csv(out["comparison_csv"]).set_index(cell).sort_index()
    published = pd.read_csv(folder / "comparison.csv").set_index(cell).sort_index()
    assert table.index.equals(published.index)
    record = ["setting", "eps_spent", "delta", "neighbours", "mechanisms"]
    assert table[record].fillna("").equals(published[record].fillna(""))
    runs = pd.read_csv(folder / "comparison_runs.csv")
    accuracy = runs.assign(accuracy=100 * runs.accuracy).groupby(cell).accuracy
    assert table["mean"].to_numpy() == pytest.approx(accuracy.mean()[table.index].to_numpy(), rel=1e-9)
    assert table["std"].to_numpy() == pytest.approx(accuracy.std()[table.index].fillna(0).to_numpy(), rel=1e-5)
    assert (table.n_runs == accuracy.size()[table.index]).all()
    stats_reference.assert_tests_are(pd.read_csv(out["tests"]), stats_reference.paired_tests(runs, True, designs), 1e-9)
