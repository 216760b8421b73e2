# The ambiguity report (expril/reports/ambiguity.py, docs/identification.md): the reproduction under each
# reading of each open choice, fewer runs, each reading a module of rules/reproduction.smk with
# its own configuration and results folder. Not part of `all`: `snakemake ambiguity`.

AMBIGUITY = f"{R}/ambiguity"

# The `module` statement takes a literal name; these are the calls Snakemake compiles it to, so
# that the readings, defined in expril/reports/ambiguity.py, are not spelled out here a second time.
for _name, _config in [("configured", ambiguity.reading_config(config, AMBIGUITY))] + [
    (
        f"{f.slug}_{label.replace('.', '_')}",
        ambiguity.reading_config(config, AMBIGUITY, f, label),
    )
    for f, label in ambiguity.readings(config)
]:
    workflow.module(_name, snakefile="reproduction.smk", config=_config)
    workflow.userule(
        rules=["*"],
        from_module=_name,
        exclude_rules=["publish_summary"],
        name_modifier=f"*_{_name}",
    )(lambda: None)


rule report_ambiguity:
    input:
        configured=reading_accuracies(),
        readings=[
            reading_accuracies(f, label) for f, label in ambiguity.readings(config)
        ],
        paper_table2="data/paper/table2.csv",
    output:
        markdown=f"{AMBIGUITY}/ambiguity.md",
        cells=f"{AMBIGUITY}/ambiguity.csv",
        claims=f"{AMBIGUITY}/ambiguity_claims.csv",
    log:
        f"{R}/logs/report_ambiguity.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("report_ambiguity"),
        readings=[(f.slug, label) for f, label in ambiguity.readings(config)],
        config={k: v for k, v in config.items() if k != "results"},
    script:
        "../workflow_scripts/report_ambiguity.py"


localrules:
    report_ambiguity,
    ambiguity,
    publish_ambiguity,


rule ambiguity:
    input:
        rules.report_ambiguity.output,


# Not part of `ambiguity`: after it, `snakemake publish_ambiguity` copies the report into
# summary/ambiguity/ (committed).
rule publish_ambiguity:
    input:
        rules.report_ambiguity.output,
    output:
        "summary/ambiguity/ambiguity.md",
        "summary/ambiguity/ambiguity.csv",
        "summary/ambiguity/ambiguity_claims.csv",
    log:
        f"{R}/logs/publish_ambiguity.log",
    conda:
        "../envs/expril.yaml"
    shell:
        publish("summary/ambiguity")
