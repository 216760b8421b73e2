from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import curator

curator.aim_release(
    val_path=snakemake.input.target_val,
    bins_path=snakemake.input.bins,
    out_path=snakemake.output.records,
    ledger_path=snakemake.output.ledger,
    history_path=snakemake.params.history,
    name=snakemake.wildcards.dataset,
    mechanism=snakemake.params.mechanism,
    rows=snakemake.params.rows,
    threads=snakemake.threads,
)
