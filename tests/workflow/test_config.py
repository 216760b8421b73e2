"""What the workflow derives from its configuration: values given as text (`--config` leaves
list items and nested values as text) read as the types config.schema.yaml declares, and the
memory a job asks for."""

import math

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from expril import settings
from expril.plugins import registry
from expril.workflow.config import check_mechanism, check_settings, planned_config, readable_yaml, schema, schema_types
from harness import ROOT, plan

SCHEMA_FILE = ROOT / "config.schema.yaml"
SCHEMA = schema(SCHEMA_FILE, registry.methods())


def validated(typed):
    """The workflow's checks (rules/common.smk): the schema file, then the plug-ins' own settings."""
    validate(typed, str(SCHEMA_FILE))
    check_settings(typed, registry.methods())


def config(**changes):
    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    return {**base, **changes}


def test_a_config_file_is_left_as_it_is():
    assert schema_types(config(), SCHEMA) == config()


def test_nested_text_takes_the_type_its_key_declares():
    typed = schema_types(
        config(
            training={"epochs": "30", "batch_size": "64", "lr": "1e-3", "holdout": "0.2", "patience": "0"},
            bins={"snr": "4.5", "noiseless": "5"},
            benchmarks={
                "A": {
                    "generator": "clusters",
                    "dim": "2",
                    "clusters": "15",
                    "n_source": "300",
                    "n_target": "300",
                    "importance_sampling": "true",
                    "hidden": ["16", "32"],
                }
            },
        ),
        SCHEMA,
    )
    assert typed["training"] == {"epochs": 30, "batch_size": 64, "lr": 0.001, "holdout": 0.2, "patience": 0}
    assert typed["bins"] == {"snr": 4.5, "noiseless": 5}
    assert typed["benchmarks"]["A"] == {
        "generator": "clusters",
        "dim": 2,
        "clusters": 15,
        "n_source": 300,
        "n_target": 300,
        "importance_sampling": True,
        "hidden": [16, 32],
    }
    validated(typed)


def test_epsilons_read_as_numbers_and_inf_stays_the_word_a_file_gives():
    typed = schema_types(config(epsilons=["1", "0.5", "1e-5", "inf", ".inf"]), SCHEMA)["epsilons"]
    assert typed[:4] == [1, 0.5, 1e-5, "inf"] and math.isinf(typed[4])
    assert type(typed[0]) is int


def test_text_the_schema_accepts_as_text_stays_text():
    typed = schema_types(config(bins={"snr": 4, "noiseless": "sqrt"}, datasets=["A", "CTG-B"], results="42"), SCHEMA)
    assert typed["bins"]["noiseless"] == "sqrt" and typed["datasets"] == ["A", "CTG-B"] and typed["results"] == "42"


@pytest.mark.parametrize(
    "change, key",
    [
        (
            {"training": {"epochs": "thirty", "batch_size": 64, "lr": 0.001, "holdout": 0.2, "patience": 10}},
            "['training']['epochs']",
        ),
        ({"epsilons": ["nan", "inf"]}, "['epsilons'][0]"),  # nan passes a bound but means nothing
        ({"epsilons": ["0", "inf"]}, "['epsilons'][0]"),  # out of range, and no single type declared
        ({"bins": {"snr": 4, "noiseless": "1"}}, "['bins']['noiseless']"),
    ],
)
def test_text_no_reading_makes_valid_is_left_for_the_schema_to_name(change, key):
    typed = schema_types(config(**change), SCHEMA)
    assert typed == config(**change)
    with pytest.raises(WorkflowError, match=f"instance{key}".replace("[", r"\[").replace("]", r"\]")):
        validated(typed)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"comparison": {"random_features": "7"}}, "7 is not a multiple of 2"),
        ({"training": {"epochs": "0"}}, "0 is less than the minimum of 1"),
    ],
)
def test_a_number_out_of_bounds_is_reported_by_its_bound_not_as_text(change, message):
    """`--config 'comparison={"random_features": 7}'` gives text '7': read as the integer the key
    declares, validation says which bound it breaks, not "'7' is not of type 'integer'"."""
    base = config()
    changed = {key: {**base[key], **value} for key, value in change.items()}
    typed = schema_types(config(**changed), SCHEMA)
    with pytest.raises(WorkflowError, match=message):
        validated(typed)


def test_a_gaussian_oracle_validates_and_is_refused_without_delta():
    """`mechanism: gaussian-counts` is a registered oracle mechanism the schema accepts; with
    `delta: 0` its Gaussian noise has no guarantee at a finite eps, and planning stops on it."""
    gaussian = schema_types(config(mechanism="gaussian-counts", delta="1e-5"), SCHEMA)
    validated(gaussian)
    check_mechanism(gaussian)
    check_mechanism(config(mechanism="gaussian-counts", delta=0, epsilons=["inf"]))  # no noise, no delta
    check_mechanism(config(mechanism="counts", delta=0))  # Laplace: pure eps
    refused = config(mechanism="gaussian-counts", delta=0)
    validated(refused)
    with pytest.raises(ValueError, match=r"config: delta: 'gaussian-counts' adds Gaussian noise.*needs delta > 0"):
        check_mechanism(refused)
    for name, message in [("gauss", "unknown mechanism 'gauss'"), ("dp-merf", "does not answer ExPriL's bin")]:
        with pytest.raises(ValueError, match=f"config: mechanism: .*{message}"):
            check_mechanism(config(mechanism=name))


def test_a_plug_ins_own_settings_are_typed_and_checked_against_the_schema_it_declares():
    comparison = config()["comparison"]
    typed = schema_types(config(comparison=comparison | {"dpsgd": {"epochs": "5", "max_grad_norm": "1e-1"}}), SCHEMA)
    assert typed["comparison"]["dpsgd"] == {"epochs": 5, "max_grad_norm": 0.1}
    check_settings(typed, registry.methods())
    refused = [
        ({"epochs": 5, "max_grad_norm": 0}, "dpsgd: max_grad_norm: 0 is less than or equal to the minimum of 0"),
        ({"epochs": 5}, "dpsgd: 'max_grad_norm' is a required property"),
        ({"epochs": 5, "max_grad_norm": 1, "clip": 2}, r"dpsgd: Additional properties are not allowed \('clip'"),
    ]
    for section, message in refused:
        with pytest.raises(ValueError, match=f"config: comparison: {message}.*expril.plugins.dpsgd declares"):
            check_settings(config(comparison=comparison | {"dpsgd": section}), registry.methods())
    with pytest.raises(ValueError, match="comparison: dpmerf: hidden: 0: 0 is less than the minimum of 1"):
        check_settings(
            config(comparison=comparison | {"dpmerf": comparison["dpmerf"] | {"hidden": [0]}}), registry.methods()
        )
    without = {k: v for k, v in comparison.items() if k != "dpmerf"}
    with pytest.raises(ValueError, match="comparison: dpmerf: missing; the plug-in expril.plugins.dpmerf reads"):
        check_settings(config(comparison=without), registry.methods())


def test_a_malformed_config_file_is_named_with_its_line(tmp_path):
    bad = tmp_path / "config.yaml"
    bad.write_text("runs: 2\ntraining:\n  epochs: [1\n  lr: 3\n")
    with pytest.raises(ValueError, match=r"config.yaml: line 4, column 5: .*expected ','"):
        readable_yaml(bad)
    assert readable_yaml(ROOT / "config.yaml") == ROOT / "config.yaml"
    # Every config file the Snakefile reads goes through the check.
    snakefile = (ROOT / "Snakefile").read_text()
    assert snakefile.count("configfile:") == snakefile.count("configfile: readable_yaml(") == 2


def test_scripts_outside_the_workflow_read_the_configuration_it_plans_with(tmp_path):
    """config.yaml, the identification's choice merged into it key by key, and the schema's
    defaults, as the Snakefile and rules/common.smk give them (benchmarks/ read it so)."""
    (tmp_path / "data/identification").mkdir(parents=True)
    (tmp_path / "config.schema.yaml").write_text(SCHEMA_FILE.read_text())
    base = config()
    assert "label_gain" not in base["benchmarks"]["C"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(base))
    choice = {"benchmarks": {"CTG-B": {"shift_selects": "target"}, "C": {"source_means": "shared"}}}
    (tmp_path / "data/identification/choice.yaml").write_text(yaml.safe_dump(choice))
    planned = planned_config(tmp_path)
    assert planned["benchmarks"]["CTG-B"]["shift_selects"] == "target"
    assert planned["benchmarks"]["CTG-A"]["shift_selects"] == "source"  # the schema's default for csv
    assert planned["benchmarks"]["C"]["source_means"] == "shared"
    assert planned["benchmarks"]["C"]["label_gain"] == 1.0  # the schema's default for latent
    # The choice adds to a benchmark's keys, it does not replace the benchmark.
    assert planned["benchmarks"]["CTG-B"]["n_target"] == base["benchmarks"]["CTG-B"]["n_target"]
    assert "label_gain" not in planned["benchmarks"]["A"]  # clusters: no latent defaults


@pytest.mark.slow
def test_nested_values_from_the_command_line_plan():
    """Snakemake hands these over as text: the plan follows them (A gets the IS step's counts
    query, C loses it) instead of stopping on "'30' is not of type 'integer'"."""
    jobs = plan(
        "--configfile",
        "tests/smoke.yaml",
        "--config",
        'training={"epochs": 30, "lr": 1e-3}',
        'benchmarks={"A": {"importance_sampling": true}, "C": {"importance_sampling": false}}',
    )
    counted = {job["output"][0].split("/")[-4] for job in jobs if job["rule"] == "oracle_marginals"}
    assert counted == {"A", "D", "E", "CTG-B"}


def test_memory_request_grows_with_the_block_the_samples_and_the_width():
    a, ctg = config()["benchmarks"]["A"], config()["benchmarks"]["CTG-A"]
    # 1.5 x (base + seeds x 7 bytes x (2,500 + 2,500 samples) x (2 features + 256 units))
    assert settings.job_memory_mb(100, a, trains=True) == 2030  # 1.5 x (450 + 903)
    assert settings.job_memory_mb(100, a, trains=False) == 1730  # 1.5 x (250 + 903)
    assert settings.job_memory_mb(25, a, trains=True) == 1014  # 1.5 x (450 + 225.75)
    # CTG: 21 features (no `dim` key), 700 + 700 samples
    assert settings.job_memory_mb(100, ctg, trains=True) == 1083  # 1.5 x (450 + 271.46)
