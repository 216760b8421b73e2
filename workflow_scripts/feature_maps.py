from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import learner

learner.feature_maps(
    source_path=snakemake.input.source,
    out_path=snakemake.output[0],
    name=snakemake.wildcards.dataset,
    n_features=snakemake.params.n_features,
    bandwidth=snakemake.params.bandwidth,
)
