from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.reports import comparison  # noqa: E402

comparison.compare(
    expril_files=snakemake.input.expril,
    rival_files=snakemake.input.rivals,
    reference_files=snakemake.input.reference,
    ledger_files=snakemake.input.ledgers,
    mmd_files=snakemake.input.expril_mmd,
    mmd_ledger_files=snakemake.input.mmd_ledgers,
    methods=snakemake.params.methods,
    datasets=snakemake.params.datasets,
    iterations=snakemake.params.iterations,
    aim_histories=snakemake.params.aim_histories,
    out=dict(snakemake.output),
)
