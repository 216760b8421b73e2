# ExPriL against its rivals at equal privacy (docs/comparison.md): the plug-in methods (their rules:
# rules/plugins.smk) on the same data, splits and seeds as ExPriL, the same network family, scored
# on the same test split.
# Not part of `all`: `snakemake compare` writes the comparison (config/extended.yaml: the eps sweep).


wildcard_constraints:
    rival="|".join(map(re.escape, COMPARED)),


localrules:
    compare_methods,
    comparison_report,
    select_settings,
    publish_tuning,


rule evaluate_rival:
    input:
        target_test=rules.split_target.output.test,
        model=rival_model,
    output:
        f"{R}/eval/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}/{{rival}}{{setting}}.csv",
    log:
        f"{R}/logs/evaluate_rival/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}/{{rival}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate_rival/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}/{{rival}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("evaluate_rival"),
    script:
        "../workflow_scripts/evaluate_rival.py"


# What pairs a study's runs with a published one's (expril/reports/pairing.py), per currency: the
# digests of the checking method's cells' data, splits, bins, noisy answers and ledger rows, which
# no matrix product makes, the host, and the rule its bins follow (study.yaml, which a rerun
# follows); a study publishes them, and a rerun compares them.
rule pairing_digests:
    input:
        lambda wc: [
            f
            for cell in paired_files(wc.currency_name)
            for block in cell
            for f in block.values()
        ],
    output:
        pairing=f"{R}/pairing/{{currency_name}}/{pairing.PAIRING}",
        host=f"{R}/pairing/{{currency_name}}/{pairing.HOST}",
        study=f"{R}/pairing/{{currency_name}}/{pairing.STUDY}",
    log:
        f"{R}/logs/pairing_digests/{{currency_name}}.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("pairing_digests"),
        cells=lambda wc: checked_cells(wc.currency_name),
        files=lambda wc: paired_files(wc.currency_name),
        study=pairing.study(config),
    script:
        "../workflow_scripts/pairing_digests.py"


# Against a published study (`comparison: published`, docs/extending.md): the published cells of
# the checking method (registry.checking) rerun here first, per currency; mixed only if they pair
# with the published runs bit for bit (check_pairing: before any network is compared) and their
# accuracies are identical or equivalent (check_published).
rule check_pairing:
    input:
        f"{PUBLISHED}/{{currency_name}}/{pairing.PAIRING}" if PUBLISHED else [],
        rules.pairing_digests.output.pairing,
    output:
        f"{R}/published/{{currency_name}}/paired.csv",
    log:
        f"{R}/logs/check_pairing/{{currency_name}}.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("check_pairing"),
        folder=lambda wc: published_folder(wc.currency_name),
        method=lambda wc: registry.checking().name,
    script:
        "../workflow_scripts/check_pairing.py"


rule check_published:
    input:
        published=(
            f"{PUBLISHED}/{{currency_name}}/{published.RUNS}" if PUBLISHED else []
        ),
        paired=rules.check_pairing.output,
        hosts=[
            f"{PUBLISHED}/{{currency_name}}/{pairing.HOST}" if PUBLISHED else [],
            rules.pairing_digests.output.host,
        ],
        evaluations=lambda wc: [
            f for files in checked_evaluations(wc.currency_name) for f in files
        ],
    output:
        csv=f"{R}/published/{{currency_name}}/checked.csv",
        md=f"{R}/published/{{currency_name}}/checked.md",
    log:
        f"{R}/logs/check_published/{{currency_name}}.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("check_published"),
        folder=lambda wc: published_folder(wc.currency_name),
        method=lambda wc: registry.checking().name,
        cells=lambda wc: checked_cells(wc.currency_name),
        evaluations=lambda wc: checked_evaluations(wc.currency_name),
        n_test=lambda wc: checked_test_sizes(wc.currency_name),
    script:
        "../workflow_scripts/check_published.py"


# One table per privacy currency (comparison: currencies), its runs and statistics its own.
rule compare_methods:
    input:
        evaluations=lambda wc: sorted(
            {r["evaluation"] for r in reported_runs(wc.currency_name)}
        ),
        ledgers=lambda wc: sorted(
            {r["ledger"] for r in reported_runs(wc.currency_name)}
        ),
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
        checked=rules.check_published.output.csv if PUBLISHED else [],
    output:
        comparison_csv=f"{R}/comparison/{{currency_name}}/comparison.csv",
        comparison_md=f"{R}/comparison/{{currency_name}}/comparison.md",
        runs=f"{R}/comparison/{{currency_name}}/comparison_runs.csv",
        tests=f"{R}/comparison/{{currency_name}}/comparison_tests.csv",
        ranks=f"{R}/comparison/{{currency_name}}/comparison_ranks.csv",
        figure_pdf=f"{R}/comparison/{{currency_name}}/privacy_utility.pdf",
        figure_png=report(
            f"{R}/comparison/{{currency_name}}/privacy_utility.png",
            caption="../report/privacy_utility.rst",
            category="Comparison",
            subcategory="{currency_name}",
        ),
        cd_pdf=f"{R}/comparison/{{currency_name}}/critical_difference.pdf",
        cd_png=report(
            f"{R}/comparison/{{currency_name}}/critical_difference.png",
            caption="../report/critical_difference.rst",
            category="Comparison",
            subcategory="{currency_name}",
        ),
    log:
        f"{R}/logs/compare_methods/{{currency_name}}.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("compare_methods"),
        runs=lambda wc: reported_runs(wc.currency_name),
        currency=lambda wc: CURRENCIES[wc.currency_name],
        methods=lambda wc: CURRENCIES[wc.currency_name].methods(COMPARISON["methods"]),
        datasets=config["datasets"],
        # Read where they exist, not inputs: a rerun of their release appends to them.
        histories=lambda wc: histories(wc.currency_name),
        published=lambda wc: published_folder(wc.currency_name),
        iterations=T,
        designs=DESIGNS,
    script:
        "../workflow_scripts/compare_methods.py"


# The report: each currency's section, the headline (the first currency) first.
rule comparison_report:
    input:
        expand(rules.compare_methods.output.comparison_md, currency_name=CURRENCIES),
    output:
        report(
            f"{R}/comparison.md",
            caption="../report/comparison.rst",
            category="Comparison",
        ),
    log:
        f"{R}/logs/comparison_report.log",
    conda:
        "../envs/expril.yaml"
    shell:
        "cat {input} > {output} 2> {log}"


rule compare:
    input:
        rules.comparison_report.output,
        expand(rules.compare_methods.output, currency_name=CURRENCIES),
        expand(rules.pairing_digests.output, currency_name=PAIRED),


# Tuning (docs/comparison.md, "Tuning"): every setting of every method's grid on the calibration
# seeds, and the choice per currency, method, dataset and eps. Not part of `compare`: `snakemake
# tune`, then `snakemake publish_tuning` writes <results>/tuning/<currency>/, which the comparison
# then reads, or, publishing the study itself (comparison: publish_study), data/tuning/<currency>/
# (committed).
rule select_settings:
    input:
        evaluations=lambda wc: sorted(
            {
                r["evaluation"]
                for r in calibration_runs(wc.currency_name)
                + finalist_runs(wc.currency_name)
            }
        ),
        grid=COMPARISON["grid"],
    output:
        calibration=f"{R}/tune/{{currency_name}}/calibration.csv",
        choice=f"{R}/tune/{{currency_name}}/choice.yaml",
        markdown=f"{R}/tune/{{currency_name}}/tuning.md",
        finalists=f"{R}/tune/{{currency_name}}/finalists.yaml",
    log:
        f"{R}/logs/select_settings/{{currency_name}}.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("select_settings"),
        runs=lambda wc: calibration_runs(wc.currency_name)
        + finalist_runs(wc.currency_name),
        order=lambda wc: grid_order(wc.currency_name),
        iterations=T,
        first_seed=GRID["calibration"]["first_seed"],
        first_runs=GRID["calibration"]["runs"],
        epsilons=EPSILONS,
        resampled=lambda wc: transferred(wc.currency_name),
        selection=GRID.get("selection"),
    script:
        "../workflow_scripts/select_settings.py"


rule tune:
    input:
        expand(rules.select_settings.output, currency_name=CURRENCIES),


rule publish_tuning:
    input:
        **{
            name: expand(rules.select_settings.output, currency_name=name)
            for name in CURRENCIES
        },
    output:
        [
            f"{tuning_folder(config)}/{name}/{file}"
            for name in CURRENCIES
            for file in ("calibration.csv", "choice.yaml", "tuning.md")
        ],
    log:
        f"{R}/logs/publish_tuning.log",
    conda:
        "../envs/expril.yaml"
    shell:
        " && ".join(
            publish(f"{tuning_folder(config)}/{name}", name) for name in CURRENCIES
        )


# Not part of `compare`: after the extended study, `snakemake publish_comparison --configfile
# config/extended.yaml` copies its small outputs into summary/comparison/ (committed): the report,
# and each currency's tables and figures in a folder of its own.
PUBLISHED_FILES = (
    "comparison_csv",
    "comparison_md",
    "runs",
    "tests",
    "ranks",
    "figure_png",
    "cd_png",
)
# And, where the checking method runs (PAIRED), what pairs its runs with a rerun's, its host and
# its bins rule (rule pairing_digests): a study is checked against them when it is the published one.
PAIRING_FILES = (pairing.PAIRING, pairing.HOST, pairing.STUDY)


# Defined only where no published study is read: its outputs are that study's files, which would
# otherwise make it a candidate producer of the very files the check reads (a cycle Snakemake
# reports, then resolves to the files on disk).
if not PUBLISHED:

    rule publish_comparison:
        input:
            **{
                name: [
                    expand(rules.compare_methods.output[key], currency_name=name)
                    for key in PUBLISHED_FILES
                ]
                + (
                    expand(rules.pairing_digests.output, currency_name=name)
                    if name in PAIRED
                    else []
                )
                for name in CURRENCIES
            },
            report=rules.comparison_report.output,
        output:
            f"{SUMMARY}/comparison.md",
            [summary_file(name, key) for name in CURRENCIES for key in PUBLISHED_FILES],
            [f"{SUMMARY}/{name}/{file}" for name in PAIRED for file in PAIRING_FILES],
        log:
            f"{R}/logs/publish_comparison.log",
        localrule: True
        conda:
            "../envs/expril.yaml"
        shell:
            " && ".join(
                [publish(SUMMARY, "report")]
                + [publish(f"{SUMMARY}/{name}", name) for name in CURRENCIES]
            )


# Round 1 of the study (summary/comparison/round1/, before the currencies, equal effort and the
# statistics that fit the runs) against round 2 as published (round2/), cell by cell
# (expril/reports/rounds.py): `snakemake round2_changes --configfile config/extended.yaml`.
rule round2_changes:
    input:
        round1=multiext(ROUND1, ".csv", "_tests.csv", "_runs.csv"),
        headline=lambda wc: round2_runs(pure=False),
        pure=lambda wc: round2_runs(pure=True),
    output:
        csv=f"{ROUND2}/round_changes.csv",
        md=f"{ROUND2}/round_changes.md",
    log:
        f"{R}/logs/round2_changes.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("round2_changes"),
        designs=DESIGNS,
        methods=COMPARISON["methods"],
        datasets=config["datasets"],
    script:
        "../workflow_scripts/round2_changes.py"


# Round 2 as published (round2/) against round 3 (summary/comparison/, as publish_comparison wrote
# it), cell by cell in each currency: `snakemake round3_changes --configfile config/extended.yaml`.
rule round3_changes:
    input:
        round2=[summary_file(name, "runs", ROUND2) for name in CURRENCIES],
        round3=[summary_file(name, "runs") for name in CURRENCIES],
    output:
        csv=f"{SUMMARY}/round_changes.csv",
        md=f"{SUMMARY}/round_changes.md",
    log:
        f"{R}/logs/round3_changes.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("round3_changes"),
        currencies=CURRENCIES,
        designs=DESIGNS,
        methods=COMPARISON["methods"],
        datasets=config["datasets"],
    script:
        "../workflow_scripts/round3_changes.py"


rule plugin_audit:
    """A method's releases audited empirically (gate.audited), once per version of its code: its
    releases wait for it, and the workflow stops here where one is refuted."""
    output:
        f"{R}/plugins/audit/{{method}}{{currency}}.csv",
    log:
        f"{R}/logs/plugin_audit/{{method}}{{currency}}.log",
    benchmark:
        f"{R}/benchmarks/plugin_audit/{{method}}{{currency}}.tsv"
    wildcard_constraints:
        method="|".join(PLUGINS),
    conda:
        "../envs/expril.yaml"
    threads: 1
    params:
        plan=audit_plan,
        code=package_code("plugin_audit"),
        method_code=lambda wc: method_code(PLUGINS[wc.method]),
    script:
        "../workflow_scripts/plugin_audit.py"
