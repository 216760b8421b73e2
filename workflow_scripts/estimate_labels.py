from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import learner

learner.estimate_labels(
    source_path=snakemake.input.source,
    weights_path=snakemake.input.weights,
    bins_path=snakemake.input.bins,
    model_paths=list(snakemake.input.models),
    answer_paths=list(snakemake.input.answers),
    out_path=snakemake.output[0],
    solver=snakemake.params.solver,
    mechanism=snakemake.params.mechanism,
    counts_path=snakemake.input.get("counts"),
    n_val=snakemake.params.n_val,
)
