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
    select_settings,
    publish_tuning,


rule llp_bins:
    input:
        rules.generate_data.output.source,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/llp{{setting}}/bins.npz",
    log:
        f"{R}/logs/llp_bins/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/llp_bins/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("make_bins"),
        q=lambda wc: bins_per_feature(wc, snr(wc, "llp"), iterations=1),
    script:
        "../workflow_scripts/make_bins.py"


rule oracle_proportions:
    input:
        target_val=rules.split_target.output.val,
        bins=rules.llp_bins.output[0],
    output:
        answers=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/llp{{setting}}/proportions.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/llp{{setting}}/proportions.ledger.csv",
    log:
        f"{R}/logs/oracle_proportions/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/oracle_proportions/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.tsv"
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
        # The release is LLP's bins and the proportions in them: the snr of the setting alone.
        bins=lambda wc: llp_file(wc, "learner", "bins"),
        release=lambda wc: llp_file(wc, "oracle", "proportions"),
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/llp{{setting}}/model.npz",
    log:
        f"{R}/logs/train_llp/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/train_llp/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
    params:
        code=package_code("train_llp"),
        network=lambda wc: network(wc, "llp"),
        training=config["training"],
        solver=config["reweight"],
        mechanism=privacy_plan("llp"),
        init_key=lambda wc: ["llp", wc.dataset, wc.eps],
        device=config["device"],
    script:
        "../workflow_scripts/train_llp.py"


# On the CPU, whatever `device` says (expril/rivals/dpsgd.py).
rule train_dpsgd:
    input:
        target_val=rules.split_target.output.val,
        source=rules.generate_data.output.source,
    output:
        model=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/dpsgd{{setting}}/model.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/dpsgd{{setting}}/model.ledger.csv",
    log:
        f"{R}/logs/train_dpsgd/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/train_dpsgd/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    params:
        code=package_code("train_dpsgd"),
        network=lambda wc: network(wc, "dpsgd"),
        recipe=dpsgd_recipe,
        mechanism=privacy_plan("dpsgd"),
        init_key=lambda wc: ["dpsgd", wc.dataset, wc.eps],
    script:
        "../workflow_scripts/train_dpsgd.py"


rule evaluate_rival:
    input:
        target_test=rules.split_target.output.test,
        model=rival_model,
    output:
        f"{R}/eval/{{dataset}}/{{seeds}}/eps{{eps}}/{{rival}}{{setting}}.csv",
    log:
        f"{R}/logs/evaluate_rival/{{dataset}}/{{seeds}}/eps{{eps}}/{{rival}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate_rival/{{dataset}}/{{seeds}}/eps{{eps}}/{{rival}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("evaluate_rival"),
    script:
        "../workflow_scripts/evaluate_rival.py"


rule compare_methods:
    input:
        evaluations=lambda wc: sorted({r["evaluation"] for r in reported_runs()}),
        ledgers=lambda wc: sorted({r["ledger"] for r in reported_runs()}),
        reference=expand(
            rules.reference_models.output.accuracy,
            dataset=config["datasets"],
            seeds=BLOCKS,
        ),
    output:
        comparison_csv=f"{R}/comparison.csv",
        comparison_md=report(
            f"{R}/comparison.md",
            caption="../report/comparison.rst",
            category="Comparison",
        ),
        runs=f"{R}/comparison_runs.csv",
        tests=f"{R}/comparison_tests.csv",
        ranks=f"{R}/comparison_ranks.csv",
        figure_pdf=f"{R}/privacy_utility.pdf",
        figure_png=report(
            f"{R}/privacy_utility.png",
            caption="../report/privacy_utility.rst",
            category="Comparison",
        ),
        cd_pdf=f"{R}/critical_difference.pdf",
        cd_png=report(
            f"{R}/critical_difference.png",
            caption="../report/critical_difference.rst",
            category="Comparison",
        ),
    log:
        f"{R}/logs/compare_methods.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("compare_methods"),
        runs=lambda wc: reported_runs(),
        methods=COMPARISON["methods"],
        datasets=config["datasets"],
        # Read where they exist, not inputs: a rerun of aim_release appends to them.
        aim_histories=[
            aim_history(d, b, e)
            for d in config["datasets"]
            for b in BLOCKS
            for e in EPSILONS
            if "aim" in RIVALS
        ],
        iterations=T,
    script:
        "../workflow_scripts/compare_methods.py"


rule compare:
    input:
        rules.compare_methods.output,


# Tuning (docs/comparison.md, "Tuning"): every setting of every method's grid on the calibration
# seeds, and the choice per method, dataset and eps. Not part of `compare`: `snakemake tune`, then
# `snakemake publish_tuning` writes data/tuning/ (committed), which the comparison reads.
rule select_settings:
    input:
        evaluations=lambda wc: sorted({r["evaluation"] for r in calibration_runs()}),
        grid=COMPARISON["grid"],
    output:
        calibration=f"{R}/tune/calibration.csv",
        choice=f"{R}/tune/choice.yaml",
        markdown=f"{R}/tune/tuning.md",
    log:
        f"{R}/logs/select_settings.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("select_settings"),
        runs=lambda wc: calibration_runs(),
        order=lambda wc: grid_order(),
        iterations=T,
        first_seed=GRID["calibration"]["first_seed"],
        epsilons=EPSILONS,
    script:
        "../workflow_scripts/select_settings.py"


rule tune:
    input:
        rules.select_settings.output,


rule publish_tuning:
    input:
        rules.select_settings.output,
    output:
        "data/tuning/calibration.csv",
        "data/tuning/choice.yaml",
        "data/tuning/tuning.md",
    log:
        f"{R}/logs/publish_tuning.log",
    conda:
        "../envs/expril.yaml"
    shell:
        publish("data/tuning")


# Not part of `compare`: after the extended study, `snakemake publish_comparison --configfile
# config/extended.yaml` copies its small outputs into summary/comparison/ (committed).
rule publish_comparison:
    input:
        [
            rules.compare_methods.output[name]
            for name in (
                "comparison_csv",
                "comparison_md",
                "runs",
                "tests",
                "ranks",
                "figure_png",
                "cd_png",
            )
        ],
    output:
        "summary/comparison/comparison.csv",
        "summary/comparison/comparison.md",
        "summary/comparison/comparison_runs.csv",
        "summary/comparison/comparison_tests.csv",
        "summary/comparison/comparison_ranks.csv",
        "summary/comparison/privacy_utility.png",
        "summary/comparison/critical_difference.png",
    log:
        f"{R}/logs/publish_comparison.log",
    conda:
        "../envs/expril.yaml"
    shell:
        publish("summary/comparison")
