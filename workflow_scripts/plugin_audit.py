from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.plugins import runner

runner.audit(
    method=snakemake.wildcards.method,
    plan=snakemake.params.plan,
    out_path=snakemake.output[0],
)
