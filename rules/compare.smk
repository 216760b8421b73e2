# ExPriL against its rivals at equal privacy (docs/comparison.md): the plug-in methods (their rules:
# rules/plugins.smk) on the same data, splits and seeds as ExPriL, the same network family, scored
# on the same test split.
# Not part of `all`: `snakemake compare` writes the comparison (config/extended.yaml: the eps sweep).


wildcard_constraints:
    rival="|".join(map(re.escape, COMPARED)),


localrules:
    compare_methods,
    publish_comparison,
    select_settings,
    publish_tuning,


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


# Against a published study (`comparison: published`, docs/extending.md): its cells of
# published.CHECKED rerun here first, and mixed only if equal to it.
rule check_published:
    input:
        published=f"{PUBLISHED}/{published.RUNS}" if PUBLISHED else [],
        evaluations=lambda wc: [f for files in checked_evaluations() for f in files],
    output:
        f"{R}/published/checked.csv",
    log:
        f"{R}/logs/check_published.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("check_published"),
        folder=PUBLISHED,
        cells=lambda wc: checked_cells(),
        evaluations=lambda wc: checked_evaluations(),
    script:
        "../workflow_scripts/check_published.py"


rule compare_methods:
    input:
        evaluations=lambda wc: sorted({r["evaluation"] for r in reported_runs()}),
        ledgers=lambda wc: sorted({r["ledger"] for r in reported_runs()}),
        # A published study brings its references, once checked; else h* is trained here.
        reference=(
            []
            if PUBLISHED
            else expand(
                rules.reference_models.output.accuracy,
                dataset=config["datasets"],
                seeds=BLOCKS,
            )
        ),
        checked=rules.check_published.output if PUBLISHED else [],
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
        # Read where they exist, not inputs: a rerun of their release appends to them.
        histories=lambda wc: histories(),
        published=PUBLISHED,
        iterations=T,
        designs=DESIGNS,
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
        resampled=lambda wc: transferred(),
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
