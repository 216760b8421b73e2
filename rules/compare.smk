# ExPriL against its rivals at equal privacy (docs/comparison.md): learning from label proportions
# (LLP) and DP-SGD, and AIM and DP-MERF (rules/synthetic.smk, docs/synthetic.md), on the same data,
# splits and seeds as ExPriL, the same network and training as its h_t, scored on the same test
# split; ExPriL also with Pb. 1 by MMD (`C-mmd`, `I-mmd`: the eps<e>-mmd/ runs). Not part of `all`: `snakemake compare` writes the
# comparison (config/extended.yaml: the eps sweep). Each release is a curator rule with a mechanism
# param and a ledger (expril/taint.py); the learner's LLP rules read releases only.

COMPARISON = config["comparison"]
EXPRIL = {"C": "C", "I": "I", "C-mmd": "C", "I-mmd": "I"}   # compared ExPriL method: its variant
for _method in COMPARISON["methods"]:
    if _method in EXPRIL and EXPRIL[_method] not in config["variants"]:
        raise ValueError(f"config: comparison: methods lists {_method}-ExPriL, which 'variants' does not run")
RIVALS = [m for m in COMPARISON["methods"] if m not in EXPRIL]


wildcard_constraints:
    rival="llp|dpsgd|aim|dpmerf",


localrules:
    compare_methods,


def llp_mechanism(wildcards):
    """LLP's plan: the `counts` mechanism for one iteration, its bin counts query and its error
    query on h_0 = 1 spending the run's eps (lambda = 2d/eps)."""
    s = spec(wildcards)
    plan = mechanisms.Counts(settings.parse_eps(wildcards.eps), config["delta"], settings.feature_count(s), 1,
                             s["importance_sampling"])
    return plan.param() | {"secret_digest": SECRET_DIGEST}


def llp_bins_per_feature(wildcards):
    """q by the paper's signal-to-noise rule, for LLP's noise."""
    b = config["bins"]
    scale = mechanisms.from_param(llp_mechanism(wildcards)).scale
    return settings.bins_per_feature(n_val(wildcards), scale, b["snr"], b["noiseless"])


def dpsgd_mechanism(wildcards):
    """DP-SGD's plan: Poisson batches of the training's expected size on the validation split, the
    config's delta, clipping and epochs."""
    d = COMPARISON["dpsgd"]
    plan = mechanisms.DPSGD(settings.parse_eps(wildcards.eps), config["delta"],
                            settings.sample_rate(n_val(wildcards), config["training"]["batch_size"]),
                            d["epochs"], d["max_grad_norm"])
    return plan.param() | {"secret_digest": SECRET_DIGEST}


def rival_model(wildcards):
    return {"llp": rules.train_llp.output[0], "dpsgd": rules.train_dpsgd.output.model,
            "aim": rules.train_aim.output[0], "dpmerf": rules.train_dpmerf.output.model}[wildcards.rival]


def compared(pattern, **wildcards):
    return expand(pattern, dataset=config["datasets"], seeds=BLOCKS, eps=EPSILONS, **wildcards)


def mmd_runs(pattern, **wildcards):
    """ExPriL's files with Pb. 1 by MMD: the eps<e>-mmd/ runs on datasets with an IS step, the
    plain ones (no Pb. 1 to replace) elsewhere."""
    return sorted(
        {
            f
            for d in config["datasets"]
            for f in expand(pattern, dataset=d, seeds=BLOCKS, eps=EPSILONS,
                            weighting="-mmd" if importance_sampling(d) else "", **wildcards)
        }
    )


def comparison_inputs(wildcards):
    """Every compared method's accuracies and ledgers, and the references."""
    release = {"llp": rules.oracle_proportions.output.ledger, "dpsgd": rules.train_dpsgd.output.ledger,
               "aim": rules.aim_release.output.ledger, "dpmerf": rules.dpmerf_release.output.ledger}
    inputs = {
        "reference": expand(rules.reference_models.output.accuracy, dataset=config["datasets"], seeds=BLOCKS),
        "rivals": compared(rules.evaluate_rival.output[0], rival=RIVALS),
        "expril": [],
        "ledgers": [f for rival in RIVALS for f in compared(release[rival])],
        "expril_mmd": [],
        "mmd_ledgers": [],
    }
    if set(COMPARISON["methods"]) & {"C", "I"}:
        inputs["expril"] = compared(rules.evaluate_hypotheses.output[0], weighting="")
        inputs["ledgers"] += run_ledgers()
    if set(COMPARISON["methods"]) & {"C-mmd", "I-mmd"}:
        inputs["expril_mmd"] = mmd_runs(rules.evaluate_hypotheses.output[0])
        # The ledger of every run's last query, which holds its earlier queries too.
        inputs["mmd_ledgers"] = mmd_runs(rules.oracle_errors.output.ledger, t=T - 1,
                                         variant=[variant_dir(v, T - 1) for v in config["variants"]])
    return inputs


rule llp_bins:
    input:
        rules.generate_data.output.source,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/llp/bins.npz",
    params:
        code=package_code("make_bins"),
        q=llp_bins_per_feature,
    log:
        f"{R}/logs/llp_bins/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/llp_bins/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/make_bins.py"


rule oracle_proportions:
    input:
        target_val=rules.split_target.output.val,
        bins=rules.llp_bins.output[0],
    output:
        answers=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/llp/proportions.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/llp/proportions.ledger.csv",
    params:
        code=package_code("oracle_proportions"),
        mechanism=llp_mechanism,
    log:
        f"{R}/logs/oracle_proportions/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/oracle_proportions/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/oracle_proportions.py"


rule train_llp:
    input:
        source=rules.generate_data.output.source,
        bins=rules.llp_bins.output[0],
        release=rules.oracle_proportions.output.answers,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/llp/model.npz",
    params:
        code=package_code("train_llp"),
        hidden=lambda wc: spec(wc)["hidden"],
        training=config["training"],
        solver=config["reweight"],
        mechanism=llp_mechanism,
        init_key=lambda wc: ["llp", wc.dataset, wc.eps],
        device=config["device"],
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
    log:
        f"{R}/logs/train_llp/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/train_llp/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/train_llp.py"


# Opacus on the CPU, whatever `device` says: its per-sample work is small next to its per-step
# overhead at these sizes.
rule train_dpsgd:
    input:
        target_val=rules.split_target.output.val,
        source=rules.generate_data.output.source,
    output:
        model=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/dpsgd/model.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/dpsgd/model.ledger.csv",
    params:
        code=package_code("train_dpsgd"),
        hidden=lambda wc: spec(wc)["hidden"],
        lr=config["training"]["lr"],
        batch_size=config["training"]["batch_size"],
        mechanism=dpsgd_mechanism,
        init_key=lambda wc: ["dpsgd", wc.dataset, wc.eps],
    threads: 1
    log:
        f"{R}/logs/train_dpsgd/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/train_dpsgd/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/train_dpsgd.py"


rule evaluate_rival:
    input:
        target_test=rules.split_target.output.test,
        model=rival_model,
    output:
        f"{R}/eval/{{dataset}}/{{seeds}}/eps{{eps}}/{{rival}}.csv",
    params:
        code=package_code("evaluate_rival"),
    log:
        f"{R}/logs/evaluate_rival/{{dataset}}/{{seeds}}/eps{{eps}}/{{rival}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate_rival/{{dataset}}/{{seeds}}/eps{{eps}}/{{rival}}.tsv"
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/evaluate_rival.py"


rule compare_methods:
    input:
        unpack(comparison_inputs),
    output:
        comparison_csv=f"{R}/comparison.csv",
        comparison_md=report(f"{R}/comparison.md", caption="../report/comparison.rst", category="Comparison"),
        runs=f"{R}/comparison_runs.csv",
        tests=f"{R}/comparison_tests.csv",
        figure_pdf=f"{R}/privacy_utility.pdf",
        figure_png=report(f"{R}/privacy_utility.png", caption="../report/privacy_utility.rst", category="Comparison"),
    params:
        code=package_code("compare_methods"),
        methods=COMPARISON["methods"],
        datasets=config["datasets"],
        iterations=T,
    log:
        f"{R}/logs/compare_methods.log",
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/compare_methods.py"


rule compare:
    input:
        rules.compare_methods.output,
