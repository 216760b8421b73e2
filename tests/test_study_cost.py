"""The cost model (benchmarks/study_cost.py): the projection after several measured cuts (--cut), and a
finished study's measured cost from its jobs' benchmark files and Snakemake's metadata (--spent), on
fake trees."""

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.study_cost import busy_seconds, combined, spent


def test_cuts_on_disjoint_jobs_add_their_savings_and_chained_cuts_multiply():
    """Two cuts, each halving its jobs' time. On disjoint jobs, one of 60 % and one of 40 % of the
    method's time: 1 - 0.3 - 0.2. Measured one on the other's code over the whole sample (share 1):
    0.5 x 0.5."""
    assert combined([(0.6, 0.5), (0.4, 0.5)]) == pytest.approx(0.5)
    assert combined([(1.0, 0.5), (1.0, 0.5)], chained=True) == pytest.approx(0.25)
    assert combined([(1.0, 0.8)]) == combined([(1.0, 0.8)], chained=True) == pytest.approx(0.8)


def _job(results, path, wall, cpu, end):
    """A job's benchmark file, and the metadata record of its two outputs as Snakemake writes them
    (naming its log, submitted 30 s before it started `wall` seconds before `end`, the first output
    done a second earlier); its benchmark file is dated otherwise, as a restored study dates it."""
    tsv = results / "benchmarks" / path
    tsv.parent.mkdir(parents=True, exist_ok=True)
    tsv.write_text(f"s\th:m:s\tmax_rss\tcpu_time\n{wall}\t0:00:00\t10.0\t{cpu}\n")
    os.utime(tsv, (1e9, 1e9))
    log = str(Path("logs", path).with_suffix(".log"))
    for i, done in enumerate((end - 1, end)):
        record = results / ".snakemake" / "metadata" / f"{path.replace('/', '_')}{i}"
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"log": [log], "starttime": end - wall - 30, "endtime": done}))


def test_the_spent_cost_sums_each_jobs_benchmark_per_method_currency_and_part(tmp_path):
    """Six jobs: ExPriL's calibration stack and an evaluation stack in approx, a pure run's
    training, the data (no currency), an audit (no seed block); the reported runs start after a
    pause of 100 s between the invocations."""
    t0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    jobs = [
        ("train_hypotheses/A/10000-10004/train_hypotheses_approx_t1_tanh32.tsv", 30.0, 25.0, t0 + 30),
        ("train_hypotheses/A/10000-10004/train_hypotheses_approx_t2_tanh32.tsv", 20.0, 18.0, t0 + 40),
        ("evaluate_rival/A/10000-10004/eps_all@approx/dpsgd.tsv", 5.0, 4.0, t0 + 45),
        ("train_hypothesis/A/0-19/eps1@pure/C/t1.tsv", 50.0, 45.0, t0 + 200),
        ("generate_data/A/0-19.tsv", 10.0, 9.0, t0 + 160),
        ("plugin_audit/dpsgd@approx.tsv", 7.0, 6.0, t0 + 7),
    ]
    for job in jobs:
        _job(tmp_path, *job)
    lines = spent(tmp_path, tmp_path / "cost", root=tmp_path)
    cost = pd.read_csv(tmp_path / "cost" / "cost.csv").set_index(["method", "currency", "part"])
    assert cost.to_dict("index") == {
        ("DP-SGD", "approx", "calibration"): {"jobs": 1, "wall_s": 5.0, "cpu_s": 4.0},
        ("DP-SGD", "approx", "other"): {"jobs": 1, "wall_s": 7.0, "cpu_s": 6.0},
        ("ExPriL (C and I)", "approx", "calibration"): {"jobs": 2, "wall_s": 50.0, "cpu_s": 43.0},
        ("ExPriL (C and I)", "pure", "reported"): {"jobs": 1, "wall_s": 50.0, "cpu_s": 45.0},
        ("shared", "none", "reported"): {"jobs": 1, "wall_s": 10.0, "cpu_s": 9.0},
    }
    spans = pd.read_csv(tmp_path / "cost" / "spans.csv").set_index("part")
    # calibration: 0-30, 20-40, 40-45: 45 s, all busy; reported: 150-160, 150-200; all: 0-45, 150-200
    assert spans.loc["calibration", ["jobs", "elapsed_s", "busy_s"]].tolist() == [3, 45.0, 45.0]
    assert spans.loc["reported", ["jobs", "elapsed_s", "busy_s"]].tolist() == [2, 50.0, 50.0]
    assert spans.loc["all", ["jobs", "elapsed_s", "busy_s"]].tolist() == [6, 200.0, 95.0]
    assert spans.loc["all", "first_start"] == "2027-01-15T08:00:00+00:00"
    assert "| ExPriL (C and I) | approx | calibration | 2 | 0.01 | 0.01 |" in lines
    assert "| all | approx | calibration | 3 | 0.02 | 0.01 |" in lines
    assert (tmp_path / "cost" / "cost.md").read_text() == "\n".join(lines) + "\n"


def test_busy_seconds_count_overlapping_jobs_once_and_leave_pauses_out():
    assert busy_seconds([0, 5, 20], [10, 8, 25]) == 15.0
    assert busy_seconds([0, 2], [10, 12]) == 12.0
    assert busy_seconds([], []) == 0.0


def test_a_job_snakemake_recorded_no_metadata_of_is_named(tmp_path):
    _job(tmp_path, "generate_data/A/0-19.tsv", 10.0, 9.0, 1_800_000_000.0)
    for record in (tmp_path / ".snakemake" / "metadata").iterdir():
        record.unlink()
    with pytest.raises(SystemExit, match="records no job of log logs/generate_data/A/0-19.log"):
        spent(tmp_path, tmp_path / "cost", root=tmp_path)
