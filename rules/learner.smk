# The learner: sees its source data (no labels), the bins it defines, the oracle's answers and
# its own models. No rule here may take a curator/ file as input.


rule make_bins:
    input:
        f"{R}/data/{{dataset}}/{{seeds}}/source.npz",
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/marginal_bins.npz",
    params:
        code=package_code("make_bins"),
        q=bins_per_feature,
    log:
        f"{R}/logs/make_bins/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/make_bins/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/make_bins.py"


rule reweight_source:
    input:
        unpack(reweight_inputs),
    output:
        weights=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/weights.npz",
        bins=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/error_bins.npz",
    params:
        code=package_code("reweight_source"),
        q=bins_per_feature,
        solver=config["reweight"],
        mechanism=config["mechanism"],
    log:
        f"{R}/logs/reweight_source/{{dataset}}/{{seeds}}/eps{{eps}}.log",
    benchmark:
        f"{R}/benchmarks/reweight_source/{{dataset}}/{{seeds}}/eps{{eps}}.tsv"
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/reweight_source.py"


rule init_hypothesis:
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/h0.npz",
    params:
        code=package_code("init_hypothesis"),
        seeds=lambda wc: settings.block_seeds(wc.seeds),
    log:
        f"{R}/logs/init_hypothesis/{{dataset}}/{{seeds}}.log",
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/init_hypothesis.py"


rule estimate_labels:
    input:
        source=f"{R}/data/{{dataset}}/{{seeds}}/source.npz",
        weights=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/weights.npz",
        bins=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/error_bins.npz",
        models=lambda wc: [model_file(wc, wc.variant, l) for l in equation_blocks(wc)],
        answers=lambda wc: [answer_file(wc, wc.variant, l) for l in equation_blocks(wc)],
        counts=lambda wc: counts_file(wc) if config["mechanism"] == "counts" else [],
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/{{variant}}/labels_t{{t}}.npz",
    params:
        code=package_code("estimate_labels"),
        solver=config["labels"],
    log:
        f"{R}/logs/estimate_labels/{{dataset}}/{{seeds}}/eps{{eps}}/{{variant}}/t{{t}}.log",
    benchmark:
        f"{R}/benchmarks/estimate_labels/{{dataset}}/{{seeds}}/eps{{eps}}/{{variant}}/t{{t}}.tsv"
    conda:
        "../envs/expril.yaml"
    resources:
        mem_mb=memory_mb(),
    script:
        "../workflow_scripts/estimate_labels.py"


rule train_hypothesis:
    input:
        source=f"{R}/data/{{dataset}}/{{seeds}}/source.npz",
        weights=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/weights.npz",
        labels=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/{{variant}}/labels_t{{t}}.npz",
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}/{{variant}}/model_t{{t}}.npz",
    params:
        code=package_code("train_hypothesis"),
        hidden=lambda wc: spec(wc)["hidden"],
        training=config["training"],
        init_key=lambda wc: ["learner", wc.dataset, wc.eps, wc.variant, int(wc.t)],
        device=config["device"],
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
        mem_mb=memory_mb(trains=True),
    log:
        f"{R}/logs/train_hypothesis/{{dataset}}/{{seeds}}/eps{{eps}}/{{variant}}/t{{t}}.log",
    benchmark:
        f"{R}/benchmarks/train_hypothesis/{{dataset}}/{{seeds}}/eps{{eps}}/{{variant}}/t{{t}}.tsv"
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/train_hypothesis.py"
