import pandas as pd

from expril import report, steps

steps.setup_logging(snakemake.log[0])
accuracy = pd.concat([pd.read_csv(f) for f in snakemake.input.accuracy], ignore_index=True)
reference = pd.concat([pd.read_csv(f) for f in snakemake.input.reference], ignore_index=True)
paper_table2 = pd.read_csv(snakemake.input.paper_table2)
report.write_all(accuracy, reference, snakemake.params.config, dict(snakemake.output), paper_table2)
