from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.steps import evaluator

p = snakemake.params
evaluator.calibrate_reference(
    out_csv=snakemake.output[0],
    name=snakemake.wildcards.dataset,
    spec=p.spec,
    seeds=p.seeds,
    trainings=p.trainings,
    hidden=p.hidden,
    device=p.device,
    threads=snakemake.threads,
)
