# Rivals built on synthetic data (docs/synthetic.md), on the same data, splits, seeds and network
# as ExPriL: marginal-based synthetic data (AIM or MST, from OpenDP) and DP-MERF, whose random
# feature map is the one of ExPriL's Pb. 1 by MMD (rules/learner.smk: feature_maps). Each release
# is a curator rule with a mechanism param and a ledger (expril/privacy/taint.py); the learner's rules read
# releases only.


# DP-MERF's files are asked for with the suffix of the setting's generator (its random features
# and generator) up to the samples, and of the whole setting for the final network.
rule dpmerf_release:
    input:
        target_val=rules.split_target.output.val,
        maps=lambda wc: feature_map_file(wc, "dpmerf"),
    output:
        answers=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/dpmerf{{setting}}/embedding.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/dpmerf{{setting}}/embedding.ledger.csv",
    log:
        f"{R}/logs/dpmerf_release/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/dpmerf_release/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("dpmerf_release"),
        mechanism=privacy_plan("dpmerf"),
    script:
        "../workflow_scripts/dpmerf_release.py"


rule dpmerf_samples:
    input:
        maps=lambda wc: feature_map_file(wc, "dpmerf"),
        release=rules.dpmerf_release.output.answers,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/dpmerf{{setting}}/samples.npz",
    log:
        f"{R}/logs/dpmerf_samples/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/dpmerf_samples/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
    params:
        code=package_code("dpmerf_samples"),
        generator=dpmerf_generator,
        init_key=lambda wc: ["dpmerf", wc.dataset, wc.eps],
        rows=n_val,
        device=config["device"],
    script:
        "../workflow_scripts/dpmerf_samples.py"


rule train_dpmerf:
    input:
        samples=lambda wc: dpmerf_file(wc, "learner", "samples"),
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/dpmerf{{setting}}/model.npz",
    log:
        f"{R}/logs/train_dpmerf/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/train_dpmerf/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
    params:
        code=package_code("train_dpmerf"),
        network=lambda wc: network(wc, "dpmerf"),
        training=config["training"],
        init_key=lambda wc: ["dpmerf", wc.dataset, wc.eps],
        device=config["device"],
    script:
        "../workflow_scripts/train_dpmerf.py"


# On the learner's bins for the eps as configured (rules/learner.smk: make_bins), as ExPriL's first
# query; AIM's release is the same for every setting, which differ in the final network alone.
rule aim_release:
    input:
        target_val=rules.split_target.output.val,
        bins=configured_bins,
    output:
        records=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/aim/records.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/aim/records.ledger.csv",
    log:
        f"{R}/logs/aim_release/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/aim_release/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    params:
        code=package_code("aim_release"),
        mechanism=privacy_plan("aim"),
        rows=n_val,
        # Outside the outputs, which a rerun deletes: every release this split ever had.
        history=lambda wc: aim_history(wc.dataset, wc.seeds, wc.eps),
    script:
        "../workflow_scripts/aim_release.py"


rule train_aim:
    input:
        source=rules.generate_data.output.source,
        bins=configured_bins,
        release=rules.aim_release.output.records,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/aim{{setting}}/model.npz",
    log:
        f"{R}/logs/train_aim/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/train_aim/{{dataset}}/{{seeds}}/eps{{eps}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
    params:
        code=package_code("train_aim"),
        network=lambda wc: network(wc, "aim"),
        training=config["training"],
        init_key=lambda wc: ["aim", wc.dataset, wc.eps],
        device=config["device"],
    script:
        "../workflow_scripts/train_aim.py"
