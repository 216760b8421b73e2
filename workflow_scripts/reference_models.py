from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import evaluator

evaluator.reference_models(
    val_path=snakemake.input.target_val,
    test_path=snakemake.input.target_test,
    out_csv=snakemake.output.accuracy,
    out_model=snakemake.output.model,
    name=snakemake.wildcards.dataset,
    hidden=snakemake.params.hidden,
    training=snakemake.params.training,
    device=snakemake.params.device,
    threads=snakemake.threads,
)
