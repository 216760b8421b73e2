# The world: source and target data sets, and the curator's split of the target.
# Privacy boundary: files under curator/ hold target data with labels. target_val is read only
# by oracle_* and reference_* rules; target_test only by evaluate_* and reference_* rules.


rule generate_data:
    input:
        csv_file,
    output:
        source=f"{R}/data/{{dataset}}/{{seeds}}/source.npz",
        target=f"{R}/curator/{{dataset}}/{{seeds}}/target.npz",
    log:
        f"{R}/logs/generate_data/{{dataset}}/{{seeds}}.log",
    benchmark:
        f"{R}/benchmarks/generate_data/{{dataset}}/{{seeds}}.tsv"
    conda:
        "../envs/expril.yaml"
    resources:
        mem_mb=memory_mb(),
    params:
        code=package_code("generate_data"),
        spec=generator_spec,
        seeds=lambda wc: settings.block_seeds(wc.seeds),
        redraw=lambda wc: benchmark_setting(wc, "redraw"),
    script:
        "../workflow_scripts/generate_data.py"


rule split_target:
    input:
        rules.generate_data.output.target,
    output:
        val=f"{R}/curator/{{dataset}}/{{seeds}}/target_val.npz",
        test=f"{R}/curator/{{dataset}}/{{seeds}}/target_test.npz",
    log:
        f"{R}/logs/split_target/{{dataset}}/{{seeds}}.log",
    benchmark:
        f"{R}/benchmarks/split_target/{{dataset}}/{{seeds}}.tsv"
    conda:
        "../envs/expril.yaml"
    resources:
        mem_mb=memory_mb(),
    params:
        code=package_code("split_target"),
        val_fraction=lambda wc: benchmark_setting(wc, "val_fraction"),
    script:
        "../workflow_scripts/split_target.py"
