from expril.workflow.joblog import setup_logging

setup_logging(snakemake.log[0])
# After the redirect, so that an import error reaches the job's log.
import yaml

from expril import io
from expril.reports import pairing

pairing.digests(snakemake.params.cells, snakemake.params.files, snakemake.output.pairing)
io.save_text(snakemake.output.host, yaml.safe_dump(pairing.host(), sort_keys=False))
io.save_text(snakemake.output.study, yaml.safe_dump(snakemake.params.study, sort_keys=False))
