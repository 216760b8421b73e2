import pandas as pd

from expril import report, steps

steps.setup_logging(snakemake.log[0])


def concat(files):
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)


# A chain's last ledger holds every earlier query of its runs: drop the rows shared by chains,
# and sort, so the file does not depend on how runs were grouped into seed blocks.
ledger = concat(snakemake.input.ledgers).drop_duplicates().sort_values(
    ["dataset", "eps_budget", "seed", "query"], kind="stable", ignore_index=True)
paper_table2 = pd.read_csv(snakemake.input.paper_table2)
report.write_all(concat(snakemake.input.accuracy), concat(snakemake.input.reference), ledger,
                 snakemake.params.config, dict(snakemake.output), paper_table2)
