"""The ambiguity report: Table 2 and the paper's claims under each reading of each open choice,
so that a reader sees which conclusions depend on a reading and which hold under all of them.

Every reading is the configured one (config.yaml with the identified choice) with one choice
changed, run on that choice's benchmarks with fewer runs (RUNS); the other benchmarks, which the
claims also need, come from the configured readings' own run of the same seeds.
"""

import copy

import pandas as pd

from expril import settings
from expril.reports import fidelity, reproduction
from expril.reports.identify import FAMILIES, TRAINING, Family

RUNS = 10  # runs per reading (seeds 0..RUNS-1), fewer when the configuration has fewer
CONFIGURED = "configured"

# Choices that h* and h0* cannot identify: they change the source or the learner's bins only.
UNIDENTIFIED = (
    Family(
        "bins without noise",
        "noiseless_bins",
        ("A", "B", "C", "D", "E", "CTG-A", "CTG-B"),
        {"sqrt": {"noiseless": "sqrt"}, "matched": {"noiseless": "matched"}},
        section="bins",
    ),
    Family(
        "source mixture (C, D, E)",
        "source_means",
        ("C", "D", "E"),
        {"independent": {"source_means": "independent"}, "shared": {"source_means": "shared"}},
    ),
)
CHOICES = FAMILIES + (TRAINING,) + UNIDENTIFIED
CLAIMS = list(fidelity.CLAIM_TEXT)


def _value(config, spec, key):
    if key in ("redraw", "val_fraction"):
        return settings.benchmark_setting(config, spec, key)
    return spec.get(key)


def _holds(config, family, keys):
    if family.section != "benchmarks":
        return all(config[family.section].get(k) == v for k, v in keys.items())
    return all(_value(config, config["benchmarks"][d], k) == v for d in family.datasets for k, v in keys.items())


def configured_reading(config, family):
    """The label of the reading the configuration holds for `family`, or None."""
    return next((label for label, keys in family.readings.items() if _holds(config, family, keys)), None)


def choices(config):
    """The choices that touch a configured dataset, with their datasets restricted to those."""
    out = []
    for family in CHOICES:
        datasets = tuple(d for d in family.datasets if d in config["datasets"])
        if datasets:
            out.append(Family(family.name, family.slug, datasets, family.readings, family.section))
    return out


def runs(config):
    return min(config["runs"], RUNS)


def readings(config):
    """Every reading other than the configured one: [(family, label)]."""
    return [(f, label) for f in choices(config) for label in f.readings if label != configured_reading(config, f)]


def folder(family=None, label=None):
    """A reading's results folder below the report's, the configured run's without arguments."""
    return CONFIGURED if family is None else f"{family.slug}/{label}"


def reading_config(config, results, family=None, label=None):
    """The configuration of one reading's run (the configured run without family): fewer runs,
    its own results folder, and, for a reading, the family's keys set and its datasets only."""
    out = copy.deepcopy(config)
    n = runs(config)
    out.update(results=f"{results}/{folder(family, label)}", runs=n, seed_block=n)
    if family is not None:
        out["datasets"] = list(family.datasets)
        for target in (
            [out["benchmarks"][d] for d in family.datasets] if family.section == "benchmarks" else [out[family.section]]
        ):
            target.update(family.readings[label])
    return out


def _verdict_word(verdict):
    """'holds', 'does not hold' or 'not testable': how every fidelity verdict begins."""
    return next(w for w in ("holds", "does not hold", "not testable") if verdict.startswith(w))


def _cells(long, datasets, iterations):
    t2 = reproduction.table2(long, datasets, iterations)
    return t2[t2.method != "ratio"]


def build(configured, alternatives, config, paper_table2):
    """The report from the configured run's long table (reproduction.long_table) and each reading's,
    `alternatives`: [(family, label, long)]. Returns (cells, claims, markdown): Table 2's cells
    of each choice's datasets under each reading, and each claim's verdict under each reading."""
    iterations = config["iterations"]
    cell_rows, claim_rows = [], []

    def add(family, label, long, is_configured, found):
        for row in _cells(long, list(family.datasets), iterations).itertuples(index=False):
            cell_rows.append(
                {
                    "choice": family.name,
                    "reading": label,
                    "configured": is_configured,
                    "dataset": row.dataset,
                    "method": row.method,
                    "mean": row.mean,
                    "std": row.std,
                    "n_runs": row.n_runs,
                }
            )
        for claim, (_, verdict) in found.items():
            claim_rows.append(
                {
                    "choice": family.name,
                    "reading": label,
                    "configured": is_configured,
                    "claim": claim,
                    "outcome": _verdict_word(verdict),
                    "verdict": verdict,
                }
            )

    base_claims = fidelity.claims(configured, config)
    for family in choices(config):
        add(family, configured_reading(config, family) or CONFIGURED, configured, True, base_claims)
        for alt_family, alt_label, long in alternatives:
            if alt_family.slug == family.slug:
                # the reading's own datasets, the configured run's for the others
                own = long[long.dataset.isin(family.datasets)]
                combined = pd.concat([configured[~configured.dataset.isin(family.datasets)], own], ignore_index=True)
                add(family, alt_label, combined, False, fidelity.claims(combined, config))
    paper = paper_table2.rename(columns={"mean": "paper_mean", "std": "paper_std"})
    cells = pd.DataFrame(cell_rows).merge(paper, on=["dataset", "method"], how="left")
    claims = pd.DataFrame(claim_rows)
    return cells, claims, _markdown(cells, claims, base_claims, config)


def _text(mean, std):
    return "n/a" if pd.isna(mean) else (f"{mean:.1f}" if pd.isna(std) else f"{mean:.1f} ± {std:.1f}")


def _markdown(cells, claims, base_claims, config):
    n = runs(config)
    lines = [
        "# How the results depend on the readings the paper leaves open",
        "",
        f"Each reading changes one choice from the configured readings (config.yaml with "
        f"data/identification/choice.yaml) and reruns that choice's benchmarks, {n} runs (seeds 0-{n - 1}; "
        "the paper has 100); the claims take the other benchmarks from the configured run of the "
        "same seeds. With this few runs, a verdict resting on one significance test can flip by chance: "
        "read a difference between readings as a lead, not as a finding. Docs: docs/identification.md.",
        "",
        "## The claims",
        "",
        "| choice | reading | " + " | ".join(CLAIMS) + " |",
        "|---|---|" + "---|" * len(CLAIMS),
    ]
    wide = claims.pivot_table(
        index=["choice", "reading", "configured"], columns="claim", values="outcome", aggfunc="first", sort=False
    ).reset_index()
    for row in wide.itertuples(index=False):
        outcome = dict(zip(wide.columns, row))
        mark = " (configured)" if outcome["configured"] else ""
        lines.append(
            f"| {outcome['choice']} | {outcome['reading']}{mark} | " + " | ".join(outcome[c] for c in CLAIMS) + " |"
        )
    lines += ["", "Under the configured readings:", ""]
    lines += [f"- {claim}: {verdict}" for claim, (_, verdict) in base_claims.items()]
    lines += ["", "Which verdicts a choice can change:", ""]
    for choice, group in claims.groupby("choice", sort=False):
        moved = [c for c in CLAIMS if group[group.claim == c].outcome.nunique() > 1]
        lines.append(f"- {choice}: " + (", ".join(moved) if moved else "none"))
    lines += ["", "## Table 2 cells of each choice's benchmarks", ""]
    for choice, group in cells.groupby("choice", sort=False):
        order = list(dict.fromkeys(group.reading))
        configured = group[group.configured].reading.iloc[0]
        lines += [
            f"### {choice}",
            "",
            "| dataset | method | paper | "
            + " | ".join(f"{r} (configured)" if r == configured else r for r in order)
            + " |",
            "|---|---|---|" + "---|" * len(order),
        ]
        for (dataset, method), row in group.groupby(["dataset", "method"], sort=False):
            by_reading = row.set_index("reading")
            lines.append(
                f"| {dataset} | {method} | {_text(row.paper_mean.iloc[0], row.paper_std.iloc[0])} | "
                + " | ".join(_text(by_reading.loc[r, "mean"], by_reading.loc[r, "std"]) for r in order)
                + " |"
            )
        lines.append("")
    return "\n".join(lines)
