# Evaluation and the non-private references: the only rules whose inputs include target_test
# (reference_* also reads target_val, to train h* on it).


rule evaluate_hypotheses:
    input:
        unpack(evaluated_models),
        target_test=rules.split_target.output.test,
    output:
        f"{R}/eval/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/accuracy.csv",
    log:
        f"{R}/logs/evaluate_hypotheses/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate_hypotheses/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    resources:
        mem_mb=memory_mb(),
    params:
        code=package_code("evaluate_hypotheses"),
        models=lambda wc: [(v, t) for v, t, _ in hypothesis_models(wc)],
    script:
        "../workflow_scripts/evaluate_hypotheses.py"


rule reference_models:
    input:
        target_val=rules.split_target.output.val,
        target_test=rules.split_target.output.test,
    output:
        accuracy=f"{R}/reference/{{dataset}}/{{seeds}}/reference.csv",
        model=f"{R}/reference/{{dataset}}/{{seeds}}/h_star.npz",
    log:
        f"{R}/logs/reference_models/{{dataset}}/{{seeds}}.log",
    benchmark:
        f"{R}/benchmarks/reference_models/{{dataset}}/{{seeds}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=TRAINING_GPUS,
        mem_mb=memory_mb(trains=True),
    params:
        code=package_code("reference_models"),
        hidden=lambda wc: spec(wc)["hidden"],
        training=config["training"],
        device=config["device"],
    script:
        "../workflow_scripts/reference_models.py"
