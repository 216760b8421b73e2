"""A currency in which no configured method runs, against a published study (a user's method in
pure DP only, docs/extending.md): its table is the published study's alone, unchanged."""

import pandas as pd

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
    config = planned_config(ROOT)
    folder = ROOT / "summary/comparison/approx"
    out = {key: str(tmp_path / name) for key, name in OUTPUTS.items()}
    comparison.compare(
        runs=[],
        reference_files=[],
        methods=[],
        datasets=config["datasets"],
        iterations=config["iterations"],
        designs=design.designs(config),
        out=out,
        published_folder=str(folder),
        currency=currencies(config, registry.reported())["approx"],
    )
    assert pd.read_csv(out["comparison_csv"]).equals(pd.read_csv(folder / "comparison.csv"))
    assert pd.read_csv(out["tests"]).equals(pd.read_csv(folder / "comparison_tests.csv"))
