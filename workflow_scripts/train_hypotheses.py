from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import learner

learner.train_hypotheses(
    source_path=snakemake.input.source[0],
    weights_paths=list(snakemake.input.weights),
    labels_paths=list(snakemake.input.labels),
    out_paths=list(snakemake.output),
    network=snakemake.params.network,
    training=snakemake.params.training,
    init_keys=snakemake.params.init_keys,
    device=snakemake.params.device,
    threads=snakemake.threads,
)
