from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import learner

runs = zip(snakemake.input.weights, snakemake.input.labels, snakemake.output, snakemake.params.init_keys)
learner.train_hypotheses(
    runs=[{"weights_path": w, "labels_path": y, "out_path": out, "init_key": key} for w, y, out, key in runs],
    source_path=snakemake.input.source[0],
    network=snakemake.params.network,
    training=snakemake.params.training,
    device=snakemake.params.device,
    threads=snakemake.threads,
)
