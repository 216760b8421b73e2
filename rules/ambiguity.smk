# The ambiguity report (expril/ambiguity.py, docs/identification.md): the reproduction under each
# reading of each open choice, fewer runs, each reading a module of rules/reproduction.smk with
# its own configuration and results folder. Not part of `all`: `snakemake ambiguity`.

AMBIGUITY = f"{R}/ambiguity"


def _reading_module(name, reading_config):
    # The `module` statement takes a literal name; this is the call Snakemake compiles it to, so
    # that the readings, defined in expril/ambiguity.py, are not spelled out here a second time.
    workflow.module(name, snakefile="reproduction.smk", config=reading_config)
    workflow.userule(rules=["*"], from_module=name, exclude_rules=["publish_summary"], name_modifier=f"*_{name}")(
        lambda: None
    )


_reading_module("configured", ambiguity.reading_config(config, AMBIGUITY))
for _family, _label in ambiguity.readings(config):
    _reading_module(
        f"{_family.slug}_{_label.replace('.', '_')}", ambiguity.reading_config(config, AMBIGUITY, _family, _label)
    )


def reading_accuracies(family=None, label=None):
    return f"{AMBIGUITY}/{ambiguity.folder(family, label)}/accuracies.csv"


rule report_ambiguity:
    input:
        configured=reading_accuracies(),
        readings=[reading_accuracies(f, label) for f, label in ambiguity.readings(config)],
        paper_table2="data/paper/table2.csv",
    output:
        markdown=f"{AMBIGUITY}/ambiguity.md",
        cells=f"{AMBIGUITY}/ambiguity.csv",
        claims=f"{AMBIGUITY}/ambiguity_claims.csv",
    params:
        code=package_code("report_ambiguity"),
        readings=[(f.slug, label) for f, label in ambiguity.readings(config)],
        config={k: v for k, v in config.items() if k != "results"},
    log:
        f"{R}/logs/report_ambiguity.log",
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/report_ambiguity.py"


localrules:
    report_ambiguity,
    ambiguity,


rule ambiguity:
    input:
        rules.report_ambiguity.output,
