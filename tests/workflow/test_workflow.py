"""The workflow as a user runs it: the full plan, and the smoke configuration end to end."""

import math

import pandas as pd
import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from expril import settings
from harness import ROOT, copy_args, counts, plan, project_copy, replace_once, snakemake

DATASETS = ["A", "B", "C", "D", "E", "CTG-A", "CTG-B"]
IS_DATASETS = ["C", "D", "E", "CTG-B"]


def eps_dirs(jobs):
    return {part for job in jobs for f in job["output"] for part in f.split("/") if part.startswith("eps")}


@pytest.mark.slow
def test_full_config_plans_every_run_variant_and_epsilon():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert config["datasets"] == DATASETS and config["runs"] == 100
    jobs = plan()
    blocks = math.ceil(100 / config["seed_block"])
    n = counts(jobs)
    per_block = len(DATASETS) * blocks
    assert n["generate_data"] == n["split_target"] == n["reference_models"] == per_block
    assert n["oracle_marginals"] == len(IS_DATASETS) * blocks * 2
    # per eps: h_1 (shared by C and I), then h_2 for C and for I
    assert n["train_hypothesis"] == n["estimate_labels"] == per_block * 2 * 3
    assert n["oracle_errors"] == per_block * 2 * 2  # queries on h_0 and h_1
    assert n["evaluate_hypotheses"] == per_block * 2
    covered = sorted(
        seed
        for job in jobs
        if job["rule"] == "generate_data" and "/A/" in job["output"][0]
        for seed in range(*(lambda lo, hi: (int(lo), int(hi) + 1))(*job["output"][0].split("/")[-2].split("-")))
    )
    assert covered == list(range(100))
    assert eps_dirs(jobs) == {"eps1", "epsinf"}


@pytest.mark.slow
def test_epsilons_from_the_command_line_and_in_scientific_notation():
    """--config passes list items as text, and a small epsilon would print as '1e-05', which the
    eps wildcard does not match: both plan, each epsilon in a directory named positionally."""
    jobs = plan("--configfile", "tests/smoke.yaml", "--config", "epsilons=[1e-5,0.5,inf]")
    assert eps_dirs(jobs) == {"eps0.00001", "eps0.5", "epsinf"}
    assert [settings.parse_eps(settings.format_eps(e)) for e in (1e-5, 1.5e-7, 0.5, 2)] == [1e-5, 1.5e-7, 0.5, 2]
    for bad in ("0", "nan"):
        result = snakemake("--dry-run", "--config", f"epsilons=[{bad},inf]", check=False)
        assert result.returncode != 0 and "instance['epsilons'][0]" in result.stdout + result.stderr


@pytest.mark.slow
def test_cuda_asks_a_gpu_for_the_training_jobs_only():
    """The CUDA path as far as a machine without a GPU can plan it: the jobs that train networks
    request one (the SLURM profile turns that into a GPU request), and no other job does."""

    def gpu_rules(device):
        jobs = plan("--configfile", "tests/smoke.yaml", "--config", f"device={device}")
        return {job["rule"] for job in jobs if "gpu=1" in job["resources"]}

    assert gpu_rules("cuda") == {"train_hypothesis", "reference_models"}
    assert gpu_rules("cpu") == set()


@pytest.mark.slow
def test_memory_requests_follow_the_seed_block():
    """The SLURM profile passes each job's mem_mb on: the steps that load a seed block ask for
    what a block of its size needs (settings.job_memory_mb), the light ones for the default."""
    spec = yaml.safe_load((ROOT / "config.yaml").read_text())["benchmarks"]["A"]

    def requests(block):
        jobs = plan("--workflow-profile", "profiles/slurm", "--config", "datasets=[A]", f"seed_block={block}")
        return {
            job["rule"]: int(dict(r.split("=", 1) for r in job["resources"])["mem_mb"])
            for job in jobs
            if any(f"/A/0-{block - 1}/" in f for f in job["output"])
        }

    small, large = requests(25), requests(100)
    for trains, rules in [
        (False, ["generate_data", "split_target", "oracle_errors", "estimate_labels", "evaluate_hypotheses"]),
        (True, ["train_hypothesis", "reference_models"]),
    ]:
        for rule in rules:
            assert (small[rule], large[rule]) == (
                settings.job_memory_mb(25, spec, trains),
                settings.job_memory_mb(100, spec, trains),
            ), rule
    assert (small["train_hypothesis"], large["train_hypothesis"]) == (1014, 2030)
    assert small["reweight_source"] == large["reweight_source"] == 1000


@pytest.mark.slow
def test_config_errors_name_the_key():
    result = snakemake("--dry-run", "--config", "runs=0", check=False)
    assert result.returncode != 0 and "instance['runs']" in result.stdout + result.stderr
    result = snakemake("--dry-run", "--config", "datasets=[A,Z]", check=False)
    message = result.stdout + result.stderr
    assert result.returncode != 0 and "datasets lists 'Z'" in message and "benchmarks" in message


def test_conda_env_pins_the_lock_versions():
    lock = dict(line.split("==") for line in (ROOT / "requirements.lock").read_text().split() if "==" in line)
    env = yaml.safe_load((ROOT / "envs/expril.yaml").read_text())
    pins = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    for pin in pins:
        name, version = pin.split("==")
        assert lock[name] == version, pin


@pytest.fixture(scope="session")
def smoke(tmp_path_factory):
    """The smoke configuration run once, into a temporary results folder."""
    results = tmp_path_factory.mktemp("smoke")
    snakemake("--cores", "2", "--configfile", "tests/smoke.yaml", "--config", f"results={results}")
    return results


@pytest.mark.slow
def test_smoke_writes_every_output(smoke):
    for name in [
        "table2.csv",
        "table2.md",
        "table1.csv",
        "accuracies.csv",
        "figure1.pdf",
        "figure1.png",
        "fidelity.md",
        "fidelity.csv",
        "fidelity_claims.csv",
    ]:
        assert (smoke / name).stat().st_size > 0, name
    table1 = pd.read_csv(smoke / "table1.csv")
    assert list(table1["dataset"]) == DATASETS
    assert list(table1["queries"]) == [2, 2, 3, 3, 3, 2, 3]
    long = pd.read_csv(smoke / "accuracies.csv")
    expril = long[long["method"] == "expril"]
    assert len(expril) == len(DATASETS) * 2 * 2 * 2 * 3  # datasets x seeds x eps x variants x t
    assert long["accuracy"].between(0, 1).all()
    md = (smoke / "table2.md").read_text()
    assert all(f"| {d} |" in md for d in DATASETS)


@pytest.mark.slow
def test_smoke_reference_beats_majority_class(smoke):
    t2 = pd.read_csv(smoke / "table2.csv").pivot(index="dataset", columns="method", values="mean")
    assert set(t2.columns) >= {"h_star", "C", "I", "1DP-C", "1DP-I", "h0_star", "ratio"}
    assert (t2.loc[DATASETS, "h_star"] > t2.loc[DATASETS, "h0_star"]).all()


@pytest.mark.slow
def test_smoke_rerun_plans_nothing(smoke):
    out = snakemake("--dry-run", "--configfile", "tests/smoke.yaml", "--config", f"results={smoke}").stdout
    assert "Nothing to be done" in out


@pytest.mark.slow
def test_smoke_report_builds(smoke):
    report = smoke / "report.zip"
    snakemake("--report", str(report), "--configfile", "tests/smoke.yaml", "--config", f"results={smoke}")
    assert report.stat().st_size > 10_000


@pytest.mark.bitexact
@pytest.mark.slow
def test_tables_do_not_depend_on_seed_blocks_or_cores(smoke, tmp_path):
    """The smoke runs again, one seed per job on one core: every table is byte-identical."""
    snakemake("--cores", "1", "--configfile", "tests/smoke.yaml", "--config", f"results={tmp_path}", "seed_block=1")
    assert (tmp_path / "data" / "A" / "1-1").is_dir()  # the runs really were split
    for name in ["accuracies.csv", "table2.csv", "table2.md", "table1.csv", "fidelity.csv", "privacy_ledger.csv"]:
        assert (tmp_path / name).read_bytes() == (smoke / name).read_bytes(), name


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda c: c["benchmarks"]["A"].update(shfit=True), "shfit"),  # a misspelt key
        (lambda c: c.update(datasets=["A.x"]), "A.x"),  # not a wildcard-safe name
    ],
)
def test_schema_rejects_what_would_fail_later(change, expected):
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    change(config)
    with pytest.raises(WorkflowError, match=expected):
        validate(config, str(ROOT / "config.schema.yaml"))


@pytest.mark.parametrize(
    "target",
    [
        "results/smoke/eval/Z/0-1/eps1/accuracy.csv",  # Z: not configured
        "results/smoke/eval/A/0-1/eps1.2.3/accuracy.csv",  # not an eps
        "results/smoke/eval/A/0-1/eps0.5/accuracy.csv",
    ],
)  # not configured
@pytest.mark.slow
def test_a_path_outside_the_configuration_matches_no_rule(target):
    result = snakemake("--dry-run", target, "--configfile", "tests/smoke.yaml", check=False)
    assert result.returncode != 0 and f"No rule to produce {target}" in result.stdout + result.stderr
    configured = target.replace("/Z/", "/A/").replace("eps1.2.3", "eps1").replace("eps0.5", "epsinf")
    assert snakemake("--dry-run", configured, "--configfile", "tests/smoke.yaml").returncode == 0


@pytest.mark.slow
def test_an_import_error_reaches_the_jobs_log(tmp_path):
    """Scripts send stderr to the job's log before importing the method's modules. (The world's
    steps: the workflow itself imports the plug-in methods, and with them most other steps, when it
    plans, so an import error there stops the plan instead.)"""
    project = project_copy(tmp_path)
    replace_once(
        project / "expril/steps/world.py",
        "from expril.io import save_npz\n",
        'from expril.io import save_npz\n\nraise ImportError("broken on purpose")\n',
    )
    result = snakemake(
        *copy_args(project),
        "--cores",
        "1",
        "results/smoke/data/A/0-1/source.npz",
        "--configfile",
        "tests/smoke.yaml",
        check=False,
    )
    assert result.returncode != 0
    log = project / "results/smoke/logs/generate_data/A/0-1.log"
    assert "ImportError: broken on purpose" in log.read_text()
