from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.reports import published

published.check_pairing(
    folder=snakemake.params.folder,
    method=snakemake.params.method,
    digests=snakemake.input,
    out_path=snakemake.output[0],
)
