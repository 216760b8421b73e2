from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import world

p = snakemake.params
world.generate_data(
    source_path=snakemake.output.source,
    target_path=snakemake.output.target,
    name=snakemake.wildcards.dataset,
    spec=p.spec,
    seeds=p.seeds,
    redraw=p.redraw,
)
