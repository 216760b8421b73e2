# ExPriL (Lacombe, Jetley, Sebag, CAP 2021) reproduced end to end: data, oracle, learner,
# evaluation, Table 2 and Figure 1 (`all`); ExPriL against its rivals at equal privacy (`compare`,
# docs/comparison.md). See README.md.
from snakemake.utils import min_version

from expril.workflow import scheduler
from expril.workflow.config import readable_yaml

min_version("9.0")
# One scheduler wake-up timer at a time, not one per finished job (expril/workflow/scheduler.py).
scheduler.single_wake_timer()


configfile: readable_yaml("config.yaml")
# The readings identified from the paper's h* and h0* (rules/identify.smk, docs/identification.md).
configfile: readable_yaml("data/identification/choice.yaml")


report: "report/workflow.rst"


include: "rules/reproduction.smk"
include: "rules/compare_common.smk"
include: "rules/plugins.smk"
include: "rules/compare.smk"
include: "rules/stacked.smk"
include: "rules/identify.smk"
include: "rules/ambiguity.smk"


rule all:
    default_target: True
    input:
        rules.aggregate_results.output,
