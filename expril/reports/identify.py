"""Identification of the readings the paper leaves open, from the two Table 2 columns that depend
on the data and the reference training alone: h* and h0*, each a mean and a std over runs.

Each open choice is a family of readings (FAMILIES, TRAINING). The calibration jobs compute h*
and h0* under every combination of readings on CALIBRATION_SEEDS, disjoint from the reported
runs, with the workflow's own data, split and reference steps; `select` then picks the
combination closest to the paper by `distance`, fixed before any calibration was run:

    D = sum over h* and h0* of ((mean - paper mean) / paper std)^2 + ln(std / paper std)^2

The first term is the reproduction's own yardstick (a mean within one paper std costs at most 1).
The second makes the spreads count, the only thing that tells apart readings that move the spread
and not the mean (what a run redraws, the CTG split sizes); as a log ratio, a std twice too large
costs what one half as large costs, and a factor e costs what one paper std of the mean costs.

Families are shared within a group of benchmarks (one generator, or one training for all): the
paper describes one generation process per group, with only Table 1's parameters varying, so one
reading per group rather than one per benchmark. ExPriL's accuracies enter nowhere: the jobs
read no oracle, learner or evaluation file, and only the paper's h* and h0* rows are used.
"""

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import yaml

CALIBRATION_SEEDS = range(1000, 1020)
MEASURES = ("h_star", "h0_star")
LATENT = ("C", "D", "E")
CTG = ("CTG-A", "CTG-B")


@dataclass(frozen=True)
class Family:
    """An open choice: the benchmarks it changes, and its readings, each a label and the keys it
    sets in the configuration's `section` (benchmarks: in each of those benchmarks' entries)."""

    name: str
    slug: str  # for file and rule names
    datasets: tuple
    readings: dict
    section: str = "benchmarks"


def _redraw(slug, datasets):
    return Family(
        f"redraw ({', '.join(datasets)})",
        f"redraw_{slug}",
        datasets,
        {"data": {"redraw": "data"}, "split": {"redraw": "split"}},
    )


# The first reading of each family is today's default.
FAMILIES = (
    _redraw("clusters", ("A", "B")),
    _redraw("latent", LATENT),
    _redraw("ctg", CTG),
    Family(
        "label roughness (f' weight gain)",
        "label_gain",
        LATENT,
        {f"gain{g}": {"label_gain": g} for g in (1, 2, 4, 8, 16)},
    ),
    Family(
        "class balance (threshold of f')",
        "class_balance",
        LATENT,
        {
            "median": {"label_threshold": "target_median"},
            "pooled": {"label_threshold": "pooled_median"},
            "zero": {"label_threshold": "zero"},
            **{f"share{w}": {"label_threshold": "drawn_quantile", "share_spread": w} for w in (0.05, 0.1, 0.15, 0.2)},
        },
    ),
    # 950 rows: the most a target pool of every run holds (pools: 1053-1073 +- 22 rows); 'the
    # rest' of a pool after 700 rows is represented by 250.
    Family(
        "CTG target rows (validation / test)",
        "ctg_rows",
        CTG,
        {
            "v350t350": {"n_target": 700, "val_fraction": 0.5},
            "v700t250": {"n_target": 950, "val_fraction": 14 / 19},
            "v250t700": {"n_target": 950, "val_fraction": 5 / 19},
            "v475t475": {"n_target": 950, "val_fraction": 0.5},
        },
    ),
    Family(
        "CTG-B LB split direction",
        "lb_selects",
        ("CTG-B",),
        {"lbsource": {"shift_selects": "source"}, "lbtarget": {"shift_selects": "target"}},
    ),
)
TRAINING = Family(
    "training (early stopping)",
    "training",
    ("A", "B", "C", "D", "E", "CTG-A", "CTG-B"),
    {"es10": {"patience": 10}, "fixed100": {"patience": 0}},
    section="training",
)

SUMMARY_COLUMNS = (
    ["group", "dataset", "member", "training", "runs"]
    + [f"{m}_{s}" for m in MEASURES for s in ("mean", "std", "paper_mean", "paper_std")]
    + ["distance"]
)


def calibration_seeds(runs):
    """CALIBRATION_SEEDS, refused when the reported runs (seeds 0..runs-1) reach them."""
    if runs > CALIBRATION_SEEDS[0]:
        raise ValueError(
            f"runs = {runs} reaches the calibration seeds from {CALIBRATION_SEEDS[0]}: "
            "identification must not see the reported runs"
        )
    return list(CALIBRATION_SEEDS)


def _families(dataset):
    return [f for f in FAMILIES if dataset in f.datasets]


def members(dataset):
    """Every combination of the dataset's readings: {name: benchmark keys}, today's first."""
    out = {}
    for labels in itertools.product(*(f.readings for f in _families(dataset))):
        readings = [f.readings[label] for f, label in zip(_families(dataset), labels)]
        out["_".join(labels)] = {k: v for r in readings for k, v in r.items()}
    return out


def calibration_spec(dataset, spec, member, protocol):
    """Benchmark `dataset`'s `spec` under the reading `member`: every key the dataset's families
    set comes from the member, none from the configuration (which holds the last choice); the
    global `protocol` (redraw, val_fraction) fills what neither sets."""
    keys = members(dataset)[member]
    identified = {key for f in _families(dataset) for reading in f.readings.values() for key in reading}
    return protocol | {k: v for k, v in spec.items() if k not in identified} | keys


def training_readings(training):
    return {label: training | keys for label, keys in TRAINING.readings.items()}


def groups():
    """Benchmarks that share a data family, merged: (datasets, families) per group."""
    out = []
    for family in FAMILIES:
        joined = [g for g in out if set(g[0]) & set(family.datasets)]
        datasets = set(family.datasets).union(*(g[0] for g in joined))
        families = [f for g in joined for f in g[1]] + [family]
        out = [g for g in out if g not in joined] + [(tuple(sorted(datasets)), families)]
    return [(tuple(d for d in TRAINING.datasets if d in ds), tuple(fs)) for ds, fs in out]


def paper_references(paper_table2):
    """{(dataset, measure): (mean, std)} from the paper's Table 2: its h* and h0* rows only."""
    rows = paper_table2[paper_table2.method.isin(MEASURES)]
    return {(r.dataset, r.method): (r.mean, r.std) for r in rows.itertuples()}


def distance(ours, paper):
    """`ours` and `paper`: {measure: (mean, std)} in %; D of the module docstring."""
    return sum(
        ((ours[m][0] - paper[m][0]) / paper[m][1]) ** 2 + math.log(ours[m][1] / paper[m][1]) ** 2 for m in MEASURES
    )


def summarise(runs, paper_table2):
    """One row per dataset, member and training reading: h* and h0* over the calibration runs
    (% , sample std), the paper's, and D. `runs`: dataset, member, training, seed, h_star,
    h0_star (accuracies in [0, 1]); any other column is refused, so nothing else can enter."""
    expected = {"dataset", "member", "training", "seed", *MEASURES}
    if set(runs.columns) != expected:
        raise ValueError(f"calibration runs have columns {sorted(runs.columns)}, expected {sorted(expected)}")
    paper = paper_references(paper_table2)
    group_of = {d: ", ".join(ds) for ds, _ in groups() for d in ds}
    rows = []
    for (dataset, member, training), r in runs.groupby(["dataset", "member", "training"], sort=False):
        ours = {m: (100 * r[m].mean(), 100 * r[m].std(ddof=1)) for m in MEASURES}
        theirs = {m: paper[dataset, m] for m in MEASURES}
        row = {
            "group": group_of[dataset],
            "dataset": dataset,
            "member": member,
            "training": training,
            "runs": len(r),
            "distance": distance(ours, theirs),
        }
        for m in MEASURES:
            row |= {
                f"{m}_mean": ours[m][0],
                f"{m}_std": ours[m][1],
                f"{m}_paper_mean": theirs[m][0],
                f"{m}_paper_std": theirs[m][1],
            }
        rows.append(row)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def _group_members(families):
    for labels in itertools.product(*(f.readings for f in families)):
        yield dict(zip((f.name for f in families), labels))


def _member_of(dataset, labels):
    return "_".join(labels[f.name] for f in _families(dataset))


def _best(table, datasets, families, training):
    """The group's member with the least summed D under `training`: (D, {family: label})."""
    d = table[table.training == training].set_index(["dataset", "member"]).distance
    scored = [(sum(d[ds, _member_of(ds, labels)] for ds in datasets), labels) for labels in _group_members(families)]
    return min(scored, key=lambda s: s[0])  # ties: the first, today's readings come first


def select(table):
    """The readings closest to the paper: the training reading with the least total D, each
    group's best member under it. Returns {"training": label, family name: label}."""
    totals = {}
    for training in TRAINING.readings:
        best = [_best(table, ds, fs, training) for ds, fs in groups()]
        totals[training] = (sum(b[0] for b in best), {k: v for b in best for k, v in b[1].items()})
    training = min(totals, key=lambda t: totals[t][0])
    return {TRAINING.name: training, **totals[training][1]}


def chosen_rows(table, choice):
    """The summary rows of the chosen readings, one per dataset."""
    keep = [(ds, _member_of(ds, choice)) for ds in TRAINING.datasets]
    rows = table[table.training == choice[TRAINING.name]].set_index(["dataset", "member"])
    return rows.loc[keep].reset_index()[SUMMARY_COLUMNS]


def family_profile(table, choice):
    """For each family and reading: the least total D of the family's group with that reading
    fixed and every other choice of the group at its best (training as chosen; for TRAINING,
    over all groups). Shows how sharply the data decide each choice."""
    rows = []
    training = choice[TRAINING.name]
    for datasets, families in groups():
        for family in families:
            for label in family.readings:
                fixed = [f if f is not family else replace(f, readings={label: f.readings[label]}) for f in families]
                rows.append(
                    {
                        "family": family.name,
                        "reading": label,
                        "distance": _best(table, datasets, fixed, training)[0],
                        "chosen": choice[family.name] == label,
                    }
                )
    for label in TRAINING.readings:
        rows.append(
            {
                "family": TRAINING.name,
                "reading": label,
                "distance": sum(_best(table, ds, fs, label)[0] for ds, fs in groups()),
                "chosen": label == training,
            }
        )
    return pd.DataFrame(rows)


def choice_config(choice):
    """The configuration keys of the chosen readings: {benchmarks: {name: keys}, training: keys}."""
    benchmarks = {}
    for family in FAMILIES:
        for dataset in family.datasets:
            benchmarks.setdefault(dataset, {}).update(family.readings[choice[family.name]])
    return {
        "benchmarks": {d: benchmarks[d] for d in TRAINING.datasets},
        "training": TRAINING.readings[choice[TRAINING.name]],
    }


def choice_yaml(choice):
    header = (
        "# Written by `snakemake identify` (rules/identify.smk, expril/reports/identify.py); do not edit.\n"
        "# The readings of the choices the paper leaves open whose h* and h0* on the calibration\n"
        "# seeds come closest to the paper's (docs/identification.md). The Snakefile reads this\n"
        "# file after config.yaml, so these keys override its own.\n"
    )
    lines = ["# chosen readings:"] + [f"#   {k}: {v}" for k, v in choice.items()]
    return (
        header
        + "\n".join(lines)
        + "\n"
        + yaml.safe_dump(choice_config(choice), sort_keys=False, default_flow_style=None, width=100)
    )


def _cell(mean, std):
    return f"{mean:.1f} ± {std:.1f}"


def markdown(table, choice):
    """identification.md: the chosen readings against the paper, each family's profile, and the
    best members of every group."""
    chosen = chosen_rows(table, choice)
    fits = sum(
        abs(r[f"{m}_mean"] - r[f"{m}_paper_mean"]) <= r[f"{m}_paper_std"]
        for _, r in chosen.iterrows()
        for m in MEASURES
    )
    runs = sorted(table.runs.unique())
    lines = [
        "# Identification of the open readings from h* and h0*",
        "",
        f"Calibration seeds {CALIBRATION_SEEDS[0]}-{CALIBRATION_SEEDS[-1]} ({', '.join(map(str, runs))} runs per "
        "member); D = sum over h*, h0* of ((mean - paper) / paper std)^2 + ln(std / paper std)^2.",
        "",
        "## Chosen readings",
        "",
    ]
    lines += [f"- {family}: **{label}**" for family, label in choice.items()]
    lines += [
        "",
        f"{fits} of {2 * len(chosen)} means lie within the paper's std.",
        "",
        "| dataset | member | training | h* ours | h* paper | h0* ours | h0* paper | D |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in chosen.iterrows():
        lines.append(
            f"| {r.dataset} | {r.member} | {r.training} | {_cell(r.h_star_mean, r.h_star_std)} | "
            f"{_cell(r.h_star_paper_mean, r.h_star_paper_std)} | {_cell(r.h0_star_mean, r.h0_star_std)} | "
            f"{_cell(r.h0_star_paper_mean, r.h0_star_paper_std)} | {r.distance:.2f} |"
        )
    lines += [
        "",
        "## Each family: the least total D of its group with the reading fixed",
        "",
        "| family | reading | D | chosen |",
        "|---|---|---|---|",
    ]
    for r in family_profile(table, choice).itertuples():
        lines.append(f"| {r.family} | {r.reading} | {r.distance:.2f} | {'yes' if r.chosen else ''} |")
    lines += ["", "The whole table, every member and dataset: `calibration.csv`.", ""]
    return "\n".join(lines)


def runs_frame(files):
    """The calibration jobs' CSVs ({(dataset, member): path}) as one frame of runs."""
    frames = [pd.read_csv(path).assign(dataset=dataset, member=member) for (dataset, member), path in files.items()]
    runs = pd.concat(frames, ignore_index=True)
    return runs[["dataset", "member", "training", "seed", *MEASURES]]


def check_finite(table):
    bad = table[~np.isfinite(table.distance)]
    if len(bad):
        raise ValueError(f"calibration rows without a finite distance (a std of 0?):\n{bad}")
