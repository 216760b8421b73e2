"""The world's step: the benchmark data, the learner's source and the curator's target."""

from expril import datasets, tables
from expril.io import save_npz
from expril.steps.blocks import log, timed


@timed
def generate_data(source_path, target_path, name, spec, seeds, redraw):
    table = tables.load(name, spec) if tables.is_table(spec) else None
    block = datasets.generate_block(name, spec, seeds, redraw, table)
    save_npz(source_path, x=block["source_x"], seeds=block["seeds"])
    save_npz(target_path, x=block["target_x"], y=block["target_y"], seeds=block["seeds"])
    log.info("%s seeds %s: source %s, target %s", name, list(seeds), block["source_x"].shape, block["target_x"].shape)
