# The learner: sees its source data (no labels), the bins it defines, the oracle's answers and
# its own models. No rule here may read a curator/ file, nor a file derived from one other than
# the oracle's releases: expril/privacy/taint.py audits the job plan.


rule make_bins:
    input:
        rules.generate_data.output.source,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/marginal_bins.npz",
    log:
        f"{R}/logs/make_bins/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/make_bins/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("make_bins"),
        q=lambda wc: bins_per_feature(wc, snr(wc, "expril"), iterations(wc, "expril")),
    script:
        "../workflow_scripts/make_bins.py"


# The random Fourier feature map of each run (expril/method/rff.py), from the source, handed to the
# curator by the plug-in methods that release embeddings in random features (expril/plugins/).
rule feature_maps:
    input:
        source=rules.generate_data.output.source,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/feature_map{{fmap}}.npz",
    log:
        f"{R}/logs/feature_maps/{{dataset}}/{{seeds}}{{fmap}}.log",
    benchmark:
        f"{R}/benchmarks/feature_maps/{{dataset}}/{{seeds}}{{fmap}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("feature_maps"),
        # '~D=<features>' and '~bandwidth=<scale>' where they differ from the configured
        n_features=lambda wc: int(
            re.search(r"~D=(\d+)", wc.fmap)[1]
            if "~D=" in wc.fmap
            else config["comparison"]["random_features"]
        ),
        bandwidth=lambda wc: float(
            re.search(r"~bandwidth=([0-9.]+)", wc.fmap)[1]
            if "~bandwidth=" in wc.fmap
            else 1
        ),
    script:
        "../workflow_scripts/feature_maps.py"


rule reweight_source:
    input:
        unpack(reweight_inputs),
        source=rules.generate_data.output.source,
    output:
        weights=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/weights.npz",
        bins=f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/error_bins.npz",
    log:
        f"{R}/logs/reweight_source/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/reweight_source/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("reweight_source"),
        q=lambda wc: bins_per_feature(wc, snr(wc, "expril"), iterations(wc, "expril")),
        solver=config["reweight"],
        mechanism=privacy_plan("expril"),
    script:
        "../workflow_scripts/reweight_source.py"


rule init_hypothesis:
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/h0.npz",
    log:
        f"{R}/logs/init_hypothesis/{{dataset}}/{{seeds}}.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("init_hypothesis"),
        seeds=lambda wc: settings.block_seeds(wc.seeds),
    script:
        "../workflow_scripts/init_hypothesis.py"


rule estimate_labels:
    input:
        source=rules.generate_data.output.source,
        weights=lambda wc: reweighting_file(wc, "weights"),
        bins=lambda wc: reweighting_file(wc, "error_bins"),
        models=lambda wc: [model_file(wc, wc.variant, l) for l in equation_blocks(wc)],
        answers=lambda wc: [answer_file(wc, wc.variant, l) for l in equation_blocks(wc)],
        counts=lambda wc: (counts_file(wc) if chain_mechanism(wc).uses_counts else []),
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/labels_t{{t}}.npz",
    log:
        f"{R}/logs/estimate_labels/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/t{{t}}.log",
    benchmark:
        f"{R}/benchmarks/estimate_labels/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/t{{t}}.tsv"
    conda:
        "../envs/expril.yaml"
    resources:
        mem_mb=memory_mb(),
    params:
        code=package_code("estimate_labels"),
        solver=config["labels"],
        mechanism=privacy_plan("expril"),
        n_val=n_val,
    script:
        "../workflow_scripts/estimate_labels.py"


rule train_hypothesis:
    input:
        source=rules.generate_data.output.source,
        weights=lambda wc: reweighting_file(wc, "weights"),
        labels=labels_file,
    output:
        f"{R}/learner/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/model_t{{t}}.npz",
    log:
        f"{R}/logs/train_hypothesis/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/t{{t}}.log",
    benchmark:
        f"{R}/benchmarks/train_hypothesis/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/t{{t}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=TRAINING_GPUS,
        mem_mb=memory_mb(trains=True),
    params:
        code=package_code("train_hypothesis"),
        network=lambda wc: network(wc, "expril"),
        training=config["training"],
        init_key=hypothesis_key,
        device=config["device"],
    script:
        "../workflow_scripts/train_hypothesis.py"
