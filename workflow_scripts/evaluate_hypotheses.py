from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import evaluator

evaluator.evaluate_hypotheses(
    test_path=snakemake.input.target_test,
    models={(v, t): snakemake.input[f"{v}_t{t}"] for v, t in snakemake.params.models},
    out_path=snakemake.output[0],
    name=snakemake.wildcards.dataset,
    eps=float(snakemake.wildcards.eps),
)
