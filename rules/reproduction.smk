# The reproduction's stages, for the Snakefile and, as a module under another configuration, for
# each reading of the ambiguity report (rules/ambiguity.smk).


include: "common.smk"
include: "settings.smk"
include: "plans.smk"
include: "data.smk"
include: "learner.smk"
include: "oracle.smk"
include: "evaluate.smk"
include: "aggregate.smk"
