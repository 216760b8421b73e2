from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import curator

curator.oracle_embedding(
    val_path=snakemake.input.target_val,
    maps_path=snakemake.input.maps,
    out_path=snakemake.output.answers,
    ledger_path=snakemake.output.ledger,
    name=snakemake.wildcards.dataset,
    mechanism=snakemake.params.mechanism,
)
