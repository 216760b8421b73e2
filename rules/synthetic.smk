# Rivals built on synthetic data (docs/synthetic.md), on the same data, splits, seeds and network
# as ExPriL: marginal-based synthetic data (AIM or MST, from OpenDP) and DP-MERF, whose random
# feature map is the one of ExPriL's Pb. 1 by MMD (rules/learner.smk: feature_maps). Each release
# is a curator rule with a mechanism param and a ledger (expril/privacy/taint.py); the learner's rules read
# releases only.


rule dpmerf_release:
    input:
        target_val=rules.split_target.output.val,
        maps=rules.feature_maps.output[0],
    output:
        answers=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/dpmerf/embedding.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}/dpmerf/embedding.ledger.csv",
    log:
        f"{R}/logs/dpmerf_release/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/dpmerf_release/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("dpmerf_release"),
        mechanism=privacy_plan("dpmerf"),
    script:
        "../workflow_scripts/dpmerf_release.py"


rule train_dpmerf:
    input:
        maps=rules.feature_maps.output[0],
        release=rules.dpmerf_release.output.answers,
    output:
        model=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/dpmerf/model.npz",
        samples=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/dpmerf/samples.npz",
    log:
        f"{R}/logs/train_dpmerf/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/train_dpmerf/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
    params:
        code=package_code("train_dpmerf"),
        generator=COMPARISON["dpmerf"],
        hidden=lambda wc: spec(wc)["hidden"],
        training=config["training"],
        init_key=lambda wc: ["dpmerf", wc.dataset, wc.eps],
        rows=n_val,
        device=config["device"],
    script:
        "../workflow_scripts/train_dpmerf.py"


# On the learner's bins for the eps (rules/learner.smk: make_bins), as ExPriL's first query.
rule aim_release:
    input:
        target_val=rules.split_target.output.val,
        bins=rules.make_bins.output[0],
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
        history=lambda wc: aim_history(wc.dataset, wc.seeds),
    script:
        "../workflow_scripts/aim_release.py"


rule train_aim:
    input:
        source=rules.generate_data.output.source,
        bins=rules.make_bins.output[0],
        release=rules.aim_release.output.records,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/aim/model.npz",
    log:
        f"{R}/logs/train_aim/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/train_aim/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
    params:
        code=package_code("train_aim"),
        hidden=lambda wc: spec(wc)["hidden"],
        training=config["training"],
        init_key=lambda wc: ["aim", wc.dataset, wc.eps],
        device=config["device"],
    script:
        "../workflow_scripts/train_aim.py"
