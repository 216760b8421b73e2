from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.reports import rounds

rounds.report(
    round1=snakemake.input.round1,
    headline=snakemake.input.headline,
    pure=snakemake.input.pure,
    designs=snakemake.params.designs,
    methods=snakemake.params.methods,
    datasets=snakemake.params.datasets,
    out_csv=snakemake.output.csv,
    out_md=snakemake.output.md,
)
