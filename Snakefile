# ExPriL (Lacombe, Jetley, Sebag, CAP 2021) reproduced end to end: data, oracle, learner,
# evaluation, Table 2 and Figure 1 (`all`); ExPriL against its rivals at equal privacy (`compare`,
# docs/comparison.md). See README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/learner.smk"
include: "rules/oracle.smk"
include: "rules/evaluate.smk"
include: "rules/synthetic.smk"
include: "rules/aggregate.smk"
include: "rules/compare.smk"


rule all:
    input:
        rules.aggregate_results.output,
