from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import learner

learner.reweight_source(
    source_path=snakemake.input.source,
    weights_path=snakemake.output.weights,
    bins_out=snakemake.output.bins,
    q=snakemake.params.q,
    solver=snakemake.params.solver,
    mechanism=snakemake.params.mechanism,
    bins_path=snakemake.input.get("bins"),
    marginals_path=snakemake.input.get("marginals"),
    embedding_path=snakemake.input.get("embedding"),
    maps_path=snakemake.input.get("maps"),
)
