# ExPriL against its rivals at equal privacy (docs/comparison.md): learning from label proportions
# (LLP) and DP-SGD, and AIM and DP-MERF (rules/synthetic.smk, docs/synthetic.md), on the same data,
# splits and seeds as ExPriL, the same network and training as its h_t, scored on the same test
# split; ExPriL also with Pb. 1 by MMD (`C-mmd`, `I-mmd`: the eps<e>-mmd/ runs). Not part of `all`: `snakemake compare` writes the
# comparison (config/extended.yaml: the eps sweep). Each release is a curator rule with a mechanism
# param and a ledger (expril/privacy/taint.py); the learner's LLP rules read releases only.


wildcard_constraints:
    rival="llp|dpsgd|aim|dpmerf",


localrules:
    compare_methods,
    publish_comparison,


rule llp_bins:
    input:
        rules.generate_data.output.source,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/llp/bins.npz",
    log:
        f"{R}/logs/llp_bins/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/llp_bins/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("make_bins"),
        q=llp_bins_per_feature,
    script:
        "../workflow_scripts/make_bins.py"


rule oracle_proportions:
    input:
        target_val=rules.split_target.output.val,
        bins=rules.llp_bins.output[0],
    output:
        answers=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/llp/proportions.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/llp/proportions.ledger.csv",
    log:
        f"{R}/logs/oracle_proportions/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/oracle_proportions/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("oracle_proportions"),
        mechanism=privacy_plan("llp"),
    script:
        "../workflow_scripts/oracle_proportions.py"


rule train_llp:
    input:
        source=rules.generate_data.output.source,
        bins=rules.llp_bins.output[0],
        release=rules.oracle_proportions.output.answers,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/llp/model.npz",
    log:
        f"{R}/logs/train_llp/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/train_llp/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
    params:
        code=package_code("train_llp"),
        hidden=lambda wc: spec(wc)["hidden"],
        training=config["training"],
        solver=config["reweight"],
        mechanism=privacy_plan("llp"),
        init_key=lambda wc: ["llp", wc.dataset, wc.eps],
        device=config["device"],
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
    log:
        f"{R}/logs/train_dpsgd/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/train_dpsgd/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    params:
        code=package_code("train_dpsgd"),
        hidden=lambda wc: spec(wc)["hidden"],
        lr=config["training"]["lr"],
        batch_size=config["training"]["batch_size"],
        mechanism=privacy_plan("dpsgd"),
        init_key=lambda wc: ["dpsgd", wc.dataset, wc.eps],
    script:
        "../workflow_scripts/train_dpsgd.py"


rule evaluate_rival:
    input:
        target_test=rules.split_target.output.test,
        model=rival_model,
    output:
        f"{R}/eval/{{dataset}}/{{seeds}}/eps{{eps}}/{{rival}}.csv",
    log:
        f"{R}/logs/evaluate_rival/{{dataset}}/{{seeds}}/eps{{eps}}/{{rival}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate_rival/{{dataset}}/{{seeds}}/eps{{eps}}/{{rival}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("evaluate_rival"),
    script:
        "../workflow_scripts/evaluate_rival.py"


rule compare_methods:
    input:
        unpack(comparison_inputs),
    output:
        comparison_csv=f"{R}/comparison.csv",
        comparison_md=report(
            f"{R}/comparison.md",
            caption="../report/comparison.rst",
            category="Comparison",
        ),
        runs=f"{R}/comparison_runs.csv",
        tests=f"{R}/comparison_tests.csv",
        figure_pdf=f"{R}/privacy_utility.pdf",
        figure_png=report(
            f"{R}/privacy_utility.png",
            caption="../report/privacy_utility.rst",
            category="Comparison",
        ),
    log:
        f"{R}/logs/compare_methods.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("compare_methods"),
        methods=COMPARISON["methods"],
        datasets=config["datasets"],
        # Read where they exist, not inputs: a rerun of aim_release appends to them.
        aim_histories=[
            aim_history(d, b) for d in config["datasets"] for b in BLOCKS if "aim" in RIVALS
        ],
        iterations=T,
    script:
        "../workflow_scripts/compare_methods.py"


rule compare:
    input:
        rules.compare_methods.output,


# Not part of `compare`: after the extended study, `snakemake publish_comparison --configfile
# config/extended.yaml` copies its small outputs into summary/comparison/ (committed).
rule publish_comparison:
    input:
        [
            rules.compare_methods.output[name]
            for name in ("comparison_csv", "comparison_md", "tests", "figure_png")
        ],
    output:
        "summary/comparison/comparison.csv",
        "summary/comparison/comparison.md",
        "summary/comparison/comparison_tests.csv",
        "summary/comparison/privacy_utility.png",
    log:
        f"{R}/logs/publish_comparison.log",
    conda:
        "../envs/expril.yaml"
    shell:
        "(mkdir -p summary/comparison && for f in {input}; do cp $f summary/comparison/; done) 2> {log}"
