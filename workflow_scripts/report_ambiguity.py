from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
import pandas as pd  # noqa: E402

from expril import io  # noqa: E402
from expril.reports import ambiguity

families = {f.slug: f for f in ambiguity.choices(snakemake.params.config)}
alternatives = [
    (families[slug], label, pd.read_csv(path))
    for (slug, label), path in zip(snakemake.params.readings, snakemake.input.readings)
]
cells, claims, markdown = ambiguity.build(
    configured=pd.read_csv(snakemake.input.configured),
    alternatives=alternatives,
    config=snakemake.params.config,
    paper_table2=pd.read_csv(snakemake.input.paper_table2),
)
io.save_csv(snakemake.output.cells, cells)
io.save_csv(snakemake.output.claims, claims)
io.save_text(snakemake.output.markdown, markdown)
