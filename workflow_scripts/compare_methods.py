from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.reports import comparison

comparison.compare(
    runs=snakemake.params.runs,
    reference_files=snakemake.input.reference,
    methods=snakemake.params.methods,
    datasets=snakemake.params.datasets,
    iterations=snakemake.params.iterations,
    designs=snakemake.params.designs,
    out=dict(snakemake.output),
    histories=snakemake.params.histories,
    published_folder=snakemake.params.published,
    currency=snakemake.params.currency,
)
