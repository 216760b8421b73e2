from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import evaluator

evaluator.evaluate_stack(
    test_path=snakemake.input.target_test[0],
    rivals=snakemake.params.runs["rivals"],
    hypotheses=snakemake.params.runs["hypotheses"],
    name=snakemake.params.dataset,
)
