from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.reports import tuning

tuning.write(
    runs=snakemake.params.runs,
    order=snakemake.params.order,
    iterations=snakemake.params.iterations,
    first_seed=snakemake.params.first_seed,
    first_runs=snakemake.params.first_runs,
    epsilons=snakemake.params.epsilons,
    resampled=snakemake.params.resampled,
    selection=snakemake.params.selection,
    out=dict(snakemake.output),
)
