from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import curator

curator.train_dpsgd(
    val_path=snakemake.input.target_val,
    source_path=snakemake.input.source,
    out_path=snakemake.output.model,
    ledger_path=snakemake.output.ledger,
    name=snakemake.wildcards.dataset,
    network=snakemake.params.network,
    recipe=snakemake.params.recipe,
    mechanism=snakemake.params.mechanism,
    init_key=snakemake.params.init_key,
    setting=snakemake.wildcards.setting,
    threads=snakemake.threads,
)
