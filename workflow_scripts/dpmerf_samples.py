from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import learner

learner.dpmerf_samples(
    maps_path=snakemake.input.maps,
    release_path=snakemake.input.release,
    out_path=snakemake.output[0],
    generator=snakemake.params.generator,
    init_key=snakemake.params.init_key,
    rows=snakemake.params.rows,
    device=snakemake.params.device,
    threads=snakemake.threads,
)
