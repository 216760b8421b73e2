from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import curator

curator.split_target(
    target_path=snakemake.input[0],
    val_path=snakemake.output.val,
    test_path=snakemake.output.test,
    name=snakemake.wildcards.dataset,
    val_fraction=snakemake.params.val_fraction,
)
