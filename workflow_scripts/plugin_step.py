from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.plugins import runner

runner.run(
    rule=snakemake.rule,
    inputs=dict(snakemake.input.items()),
    outputs=dict(snakemake.output.items()),
    params=dict(snakemake.params.items()),
    wildcards=dict(snakemake.wildcards.items()),
    threads=snakemake.threads,
)
