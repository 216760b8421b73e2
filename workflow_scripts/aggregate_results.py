from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.reports import reproduction  # noqa: E402

reproduction.aggregate(
    accuracy_files=snakemake.input.accuracy,
    reference_files=snakemake.input.reference,
    ledger_files=snakemake.input.ledgers,
    paper_table2_file=snakemake.input.paper_table2,
    config=snakemake.params.config,
    out=dict(snakemake.output),
)
