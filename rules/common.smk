# Configuration checks, path helpers and wildcard constraints shared by every stage.
import functools
import hashlib
import inspect
import math
import os
import re
import types
from pathlib import Path

import yaml
from snakemake.utils import validate

from expril import settings, tables
from expril.plugins import base, context, gate, registry
from expril.privacy import mechanisms, noise
from expril.reports import ambiguity, design, identify, pairing, published
from expril.workflow import code_digest, grids
from expril.workflow.config import check_mechanism, check_settings, schema, schema_types
from expril.workflow.currency import choice_file, currencies, home, tuning_folder

# The user's plug-ins from outside the package join expril/plugins/'s, here and in every job
# (docs/extending.md), before the schema: it holds their settings.
registry.use(config.get("comparison", {}).get("plugins", []))
_schema = schema(Path(workflow.basedir) / "config.schema.yaml", registry.methods())
config.update(schema_types(config, _schema))
validate(config, schema="../config.schema.yaml", set_default=True)
check_settings(config, registry.methods())
check_mechanism(config)
for _name in config["datasets"]:
    if _name not in config["benchmarks"]:
        raise ValueError(
            f"config: datasets lists {_name!r}, which has no entry under 'benchmarks' "
            f"(known: {', '.join(config['benchmarks'])})"
        )

# Jobs import the method package from this repository, inside --sdm conda environments too.
os.environ.update(
    PYTHONPATH=os.pathsep.join(
        filter(None, [workflow.basedir, os.environ.get("PYTHONPATH")])
    )
)

R = config["results"]
EPSILONS = [settings.format_eps(e) for e in config["epsilons"]]
T = config["iterations"]
BLOCKS = settings.seed_blocks(config["runs"], config["seed_block"])
# Oracle rules carry a digest of the secret (never the secret) so a new secret redraws the noise.
SECRET_DIGEST = hashlib.sha256(noise.secret().encode()).hexdigest()[:16]
# The comparison's privacy currencies by name (expril/workflow/currency.py), the headline first;
# their runs carry their tag after the eps ({currency}: '@approx'), the reproduction's none ('').
CURRENCIES = currencies(config, registry.reported())
TAGGED = {c.tag: c for c in CURRENCIES.values()}
# The GPUs a job that trains a network asks of the scheduler (a cluster's, or --resources gpu=N).
TRAINING_GPUS = 1 if config["device"] == "cuda" else 0


# Built from the configuration, so that a path naming an unconfigured dataset, eps or variant
# matches no rule at all instead of failing later.
wildcard_constraints:
    dataset="|".join(map(re.escape, config["datasets"])),
    seeds=r"\d+-\d+",
    eps="|".join(map(re.escape, EPSILONS)),
    variant="|".join(config["variants"] + ["both"]),
    t=r"\d+",
    setting=r"(~[a-z]+=[A-Za-z0-9.-]+)*",
    fmap=r"(~D=\d+)?(~bandwidth=[0-9.]+)?",
    member=r"[A-Za-z0-9._]+",
    currency="|".join([""] + [re.escape(tag) for tag in TAGGED]),
    currency_name="|".join(CURRENCIES),


# Too small for a cluster job of their own: run by the Snakemake process that submits the rest.
localrules:
    init_hypothesis,
    aggregate_results,
    publish_summary,


def package_code(script):
    """Digest of the package code a workflow script runs (expril/workflow/code_digest.py): every script
    rule declares it as params.code, so an edit to that code reruns the rule's jobs."""
    root = Path(workflow.basedir)
    return code_digest.script_digest(
        root / "workflow_scripts" / f"{script}.py", root / "expril"
    )


def publish(folder, key=None):
    """Shell command of the publish rules: copy a report's small outputs (the input `key`, all
    without one) into a committed folder."""
    files = f"{{input.{key}}}" if key else "{input}"
    return f"(mkdir -p {folder} && cp {files} {folder}/) 2> {{log}}"


def spec(wildcards):
    return config["benchmarks"][wildcards.dataset]


def memory_mb(trains=False):
    """A rule's mem_mb: what a job on its seed block needs (settings.job_memory_mb). SLURM gets it
    through profiles/slurm; a local run ignores it unless --resources mem_mb=... caps the sum.
    """
    return lambda wildcards: settings.job_memory_mb(
        len(settings.block_seeds(wildcards.seeds)), spec(wildcards), trains
    )


def generator_spec(wildcards):
    """The benchmark entry without the learner's settings and the protocol's (their own params),
    so that changing them keeps the data."""
    return {
        k: v
        for k, v in spec(wildcards).items()
        if k not in ("hidden", "importance_sampling", "redraw", "val_fraction")
    }


def importance_sampling(dataset):
    return config["benchmarks"][dataset]["importance_sampling"]


def currency_of(wildcards):
    """The run's currency (comparison: currencies) by its tag; None for the reproduction's runs."""
    return TAGGED.get(wildcards.currency)


def chain_mechanism(wildcards):
    """The registered mechanism of the run's ExPriL chain: its currency's, else `mechanism`."""
    currency = currency_of(wildcards)
    return mechanisms.get(currency.expril if currency else config["mechanism"])


def run_delta(wildcards):
    """The delta of the run's budget: its currency's, else `delta`."""
    currency = currency_of(wildcards)
    return currency.delta if currency else config["delta"]


def counts_query(wildcards):
    """Whether the run starts with the bin counts (marginals) query."""
    return chain_mechanism(wildcards).asks_counts(
        importance_sampling(wildcards.dataset)
    )


def benchmark_setting(wildcards, key):
    """redraw or val_fraction: the benchmark's own, else the global one."""
    return settings.benchmark_setting(config, spec(wildcards), key)


def n_val(wildcards):
    return settings.benchmark_n_val(config, spec(wildcards))


def bins_std(wildcards, iterations):
    """The noise std of a count of the run's chain that its bins are sized for (config `bins:
    sized_for`, a published study's where the comparison reads one: Histogram.bins_std, the
    Gaussian's in zCDP; None: the paper's Laplace rule)."""
    return settings.bins_std(
        config["bins"]["sized_for"],
        chain_mechanism(wildcards),
        settings.parse_eps(wildcards.eps),
        run_delta(wildcards),
        settings.feature_count(spec(wildcards)),
        iterations,
    )


def bins_per_feature(wildcards, snr, iterations):
    """q by the paper's signal-to-noise rule at `snr`, for the noise of a plan of `iterations`
    iterations at an equal share of the budget, whatever the plan's split (Eq. 14's lambda, or
    the Gaussian's std where the chain draws Gaussian noise)."""
    return settings.bins_per_feature(
        n_val(wildcards),
        settings.feature_count(spec(wildcards)),
        iterations,
        settings.parse_eps(wildcards.eps),
        snr,
        config["bins"]["noiseless"],
        bins_std(wildcards, iterations),
    )


def variant_dir(variant, t):
    """h_0 and h_1 are the same for C- and I-ExPriL (one block of equations): stored once as 'both'."""
    return "both" if t <= 1 else variant


def block_dir(wildcards):
    return f"{wildcards.dataset}/{wildcards.seeds}"


def eps_dir(wildcards):
    return f"eps{wildcards.eps}{wildcards.currency}{wildcards.setting}"


# A run's files before its first network (the weights and error bins, the error query on h_0 and
# the labels estimated from it) depend on its setting's axes but the model: settings that differ
# in the model alone share them.
def before_model(wildcards):
    """The eps folder of the run's files before its first network."""
    axes = [a for a in GRID["families"]["expril"] if a != "model"]
    return (
        f"eps{wildcards.eps}{wildcards.currency}{upstream(wildcards, 'expril', axes)}"
    )


def reweighting_file(wildcards, name):
    """Pb. 1's weights or the error queries' bins ('weights', 'error_bins')."""
    return f"{R}/learner/{block_dir(wildcards)}/{before_model(wildcards)}/{name}.npz"


def labels_file(wildcards):
    folder = before_model(wildcards) if int(wildcards.t) == 1 else eps_dir(wildcards)
    return f"{R}/learner/{block_dir(wildcards)}/{folder}/{wildcards.variant}/labels_t{wildcards.t}.npz"


def hypothesis_key(wildcards):
    """The key of h_t's initial weights, held-out split and batch order (seeds.seed_int with each
    run's seed): common to the settings of one eps and variant."""
    return [
        "learner",
        wildcards.dataset,
        wildcards.eps,
        wildcards.variant,
        int(wildcards.t),
    ]


def model_file(wildcards, variant, t):
    if t == 0:
        return f"{R}/learner/{block_dir(wildcards)}/h0.npz"
    return f"{R}/learner/{block_dir(wildcards)}/{eps_dir(wildcards)}/{variant_dir(variant, t)}/model_t{t}.npz"


def answer_file(wildcards, variant, t):
    folder = before_model(wildcards) if t == 0 else eps_dir(wildcards)
    return f"{R}/oracle/{block_dir(wildcards)}/{folder}/{variant_dir(variant, t)}/errors_t{t}.npz"


# The knobs of a run's setting that its bins and its bin counts query depend on.
BINS_KNOBS = ["snr", "iterations"]
COUNTS_KNOBS = BINS_KNOBS + ["split"]


def marginal_bins_file(wildcards, family):
    """The learner's bins of the bin counts query, by its setting's snr and T; tagged with the
    currency where the chain sizes them for its own noise (bins_std; none at eps = inf, where
    every currency's are the noiseless rule's), else shared by the currencies.
    """
    bins = upstream(wildcards, family, BINS_KNOBS)
    tag = (
        wildcards.currency if bins_std(wildcards, iterations(wildcards, family)) else ""
    )
    return f"{R}/learner/{block_dir(wildcards)}/eps{wildcards.eps}{tag}{bins}/marginal_bins.npz"


def counts_file(wildcards):
    """The bin counts query of the run's chain, on the bins of its setting's snr and T, at its
    split."""
    counts = upstream(wildcards, "expril", COUNTS_KNOBS)
    return f"{R}/oracle/{block_dir(wildcards)}/eps{wildcards.eps}{wildcards.currency}{counts}/marginals.npz"


def previous_ledger(wildcards):
    """The ledger of the query before this one in the run's chain (none for the first)."""
    t = int(wildcards.t)
    if t > 0:
        return answer_file(wildcards, wildcards.variant, t - 1).replace(
            ".npz", ".ledger.csv"
        )
    if counts_query(wildcards):
        return counts_file(wildcards).replace(".npz", ".ledger.csv")
    return []


def equation_blocks(wildcards):
    """Iterations whose hypotheses enter the label estimate at t: all (C-ExPriL) or the latest (I)."""
    t = int(wildcards.t)
    return [t - 1] if wildcards.variant == "I" else list(range(t))


def csv_file(wildcards):
    """A csv entry's file, an input of the jobs that read it (its sha256 is in their params). A
    package's file is not: its path is the environment's, which differs from one installation to
    the next (a venv elsewhere would rerun the dataset's every job), and its sha256, checked as it
    is read, already names its content."""
    entry = spec(wildcards)
    if not tables.is_table(entry):
        return []
    # A package not installed stops the plan here, naming the entry.
    path = tables.source(entry)
    return str(path) if entry["generator"] == "csv" else []


def reweight_inputs(wildcards):
    inputs = {}
    if counts_query(wildcards):
        inputs["bins"] = marginal_bins_file(wildcards, "expril")
    if importance_sampling(wildcards.dataset):
        inputs["marginals"] = counts_file(wildcards)
    return inputs


def hypothesis_models(wildcards):
    """(variant, t, file) of every h_t (t = 0..T, T the setting's) of every variant for this
    dataset, block and eps."""
    return [
        (v, t, model_file(wildcards, v, t))
        for v in config["variants"]
        for t in range(iterations(wildcards) + 1)
    ]


def evaluated_models(wildcards):
    return {f"{v}_t{t}": path for v, t, path in hypothesis_models(wildcards)}


def run_ledgers():
    """The ledger of every run's last query (it holds the run's earlier queries too)."""
    last = T - 1
    return sorted(
        {
            f"{R}/oracle/{d}/{b}/eps{e}/{variant_dir(v, last)}/errors_t{last}.ledger.csv"
            for d in config["datasets"]
            for b in BLOCKS
            for e in EPSILONS
            for v in config["variants"]
        }
    )


def calibration_files():
    """{(dataset, member): file}: identification's calibration of every reading of every paper
    benchmark (rules/identify.smk)."""
    return {
        (d, m): f"{R}/identify/{d}/{m}.csv"
        for d in identify.TRAINING.datasets
        for m in identify.members(d)
    }


def calibration_spec(wildcards):
    protocol = {k: config[k] for k in ("redraw", "val_fraction")}
    return identify.calibration_spec(
        wildcards.dataset, spec(wildcards), wildcards.member, protocol
    )


def reading_accuracies(family=None, label=None):
    """The accuracies of one reading's run for the ambiguity report (rules/ambiguity.smk), of the
    configured readings' run without arguments."""
    return f"{R}/ambiguity/{ambiguity.folder(family, label)}/accuracies.csv"
