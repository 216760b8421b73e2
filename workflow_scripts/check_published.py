from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
from expril.reports import published

published.check(
    folder=snakemake.params.folder,
    method=snakemake.params.method,
    cells=snakemake.params.cells,
    evaluations=snakemake.params.evaluations,
    n_test=snakemake.params.n_test,
    hosts=snakemake.input.hosts,
    out_path=snakemake.output.csv,
    report_path=snakemake.output.md,
)
