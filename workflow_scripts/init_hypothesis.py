from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import learner

learner.init_hypothesis(out_path=snakemake.output[0], seeds=snakemake.params.seeds)
