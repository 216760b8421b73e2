import pandas as pd

from expril import identify, io, steps

steps.setup_logging(snakemake.log[0])
runs = identify.runs_frame(dict(zip(snakemake.params.readings, snakemake.input.calibration)))
table = identify.summarise(runs, pd.read_csv(snakemake.input.paper_table2))
identify.check_finite(table)
choice = identify.select(table)
io.save_csv(snakemake.output.calibration, table, exact=True)
io.save_text(snakemake.output.choice, identify.choice_yaml(choice))
io.save_text(snakemake.output.markdown, identify.markdown(table, choice))
