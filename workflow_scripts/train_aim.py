from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import learner

learner.train_aim(
    source_path=snakemake.input.source,
    bins_path=snakemake.input.bins,
    release_path=snakemake.input.release,
    out_path=snakemake.output[0],
    network=snakemake.params.network,
    training=snakemake.params.training,
    init_key=snakemake.params.init_key,
    device=snakemake.params.device,
    threads=snakemake.threads,
)
