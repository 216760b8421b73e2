from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
import pandas as pd  # noqa: E402

from expril import io  # noqa: E402
from expril.reports import identify

runs = identify.runs_frame(dict(zip(snakemake.params.readings, snakemake.input.calibration)))
table = identify.summarise(runs, pd.read_csv(snakemake.input.paper_table2))
identify.check_finite(table)
choice = identify.select(table)
io.save_csv(snakemake.output.calibration, table, exact=True)
io.save_text(snakemake.output.choice, identify.choice_yaml(choice))
io.save_text(snakemake.output.markdown, identify.markdown(table, choice))
