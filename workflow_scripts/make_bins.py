from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import learner

learner.make_bins(source_path=snakemake.input[0], out_path=snakemake.output[0], q=snakemake.params.q)
