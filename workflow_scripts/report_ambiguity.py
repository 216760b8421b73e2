import pandas as pd

from expril import ambiguity, io, steps

steps.setup_logging(snakemake.log[0])
families = {f.slug: f for f in ambiguity.choices(snakemake.params.config)}
alternatives = [(families[slug], label, pd.read_csv(path))
                for (slug, label), path in zip(snakemake.params.readings, snakemake.input.readings)]
cells, claims, markdown = ambiguity.build(pd.read_csv(snakemake.input.configured), alternatives,
                                          snakemake.params.config, pd.read_csv(snakemake.input.paper_table2))
io.save_csv(snakemake.output.cells, cells)
io.save_csv(snakemake.output.claims, claims)
io.save_text(snakemake.output.markdown, markdown)
