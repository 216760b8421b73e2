from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.reports import rounds

currencies = snakemake.params.currencies
rounds.round3_report(
    round2=dict(zip(currencies, snakemake.input.round2)),
    round3=dict(zip(currencies, snakemake.input.round3)),
    designs=snakemake.params.designs,
    methods=snakemake.params.methods,
    datasets=snakemake.params.datasets,
    currencies=currencies,
    out_csv=snakemake.output.csv,
    out_md=snakemake.output.md,
)
