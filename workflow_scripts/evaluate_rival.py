from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import evaluator

evaluator.evaluate_rival(
    test_path=snakemake.input.target_test,
    model_path=snakemake.input.model,
    out_path=snakemake.output[0],
    name=snakemake.wildcards.dataset,
    method=snakemake.wildcards.rival,
    eps=float(snakemake.wildcards.eps),
)
