"""Privacy budget ledger: one row per oracle query and run, checked when the query is answered.

Each oracle job writes the ledger of its chain of queries (the previous query's ledger plus its
own rows), so the ledger of a run's last query is that run's whole account. A query beyond the
run's plan, or a total above the run's budget, fails the job before anything is released. The
costs and their composition come from the mechanism (expril.privacy.mechanisms); this module records.

Each function imports pandas itself: every plug-in imports this module, and its learner steps,
which never release, would pay pandas's import (about 0.5 s of CPU) in each of their jobs.
"""

from pathlib import Path

from expril.io import save_csv
from expril.privacy import noise

COLUMNS = [
    "dataset",
    "seed",
    "eps_budget",
    "delta_budget",
    "query",
    "rule",
    "mechanism",
    "neighbours",
    "sensitivity",
    "scale",
    "rho",
    "noise_key",
    "eps_spent",
    "delta_spent",
    "eps_total",
    "delta_total",
]


class BudgetError(RuntimeError):
    pass


def record(path, previous, dataset, seeds, query, rule, mechanism, history=None):
    """Append this query's rows to the chain's ledger after checking plan and budget; for a
    mechanism whose noise cannot be replayed, to the split's `history` too (`append_history`)."""
    import pandas as pd

    eps, delta = mechanism.query_cost(query)
    sizes = {"sensitivity": float("nan"), "scale": float("nan"), "rho": float("nan")} | mechanism.ledger_fields(query)
    rows = pd.DataFrame(
        {
            "dataset": dataset,
            "seed": [int(s) for s in seeds],
            "eps_budget": mechanism.eps,
            "delta_budget": mechanism.delta,
            "query": query,
            "rule": rule,
            "mechanism": mechanism.name,
            "neighbours": mechanism.neighbours,
            **sizes,
            "noise_key": noise.key_of(mechanism),
            "eps_spent": eps,
            "delta_spent": delta,
        }
    )
    book = pd.concat([previous, rows], ignore_index=True) if previous is not None else rows
    asked = book.groupby("seed").size().max()
    if asked > mechanism.planned_queries:
        raise BudgetError(
            f"{dataset}: query {query!r} is query {asked} of a run planned for "
            f"{mechanism.planned_queries}; the noise was set for the plan, so it would overspend"
        )
    # The run's spend so far, composed by the mechanism's accountant, on this query's rows.
    totals = {
        seed: mechanism.compose(list(zip(run["eps_spent"], run["delta_spent"], run["rho"])))
        for seed, run in book.groupby("seed")
    }
    new = book.index >= len(book) - len(rows)
    book.loc[new, "eps_total"] = [totals[s][0] for s in book.loc[new, "seed"]]
    book.loc[new, "delta_total"] = [totals[s][1] for s in book.loc[new, "seed"]]
    mine = book.loc[new]
    over = mine[(mine.eps_total > mechanism.eps * (1 + 1e-9)) | (mine.delta_total > mechanism.delta * (1 + 1e-9))]
    if len(over):
        run = over.iloc[0]
        raise BudgetError(
            f"{dataset} seed {run.seed}: query {query!r} brings the run's spent (eps, delta) "
            f"to ({run.eps_total:.6g}, {run.delta_total:.6g}), above its budget "
            f"({mechanism.eps:.6g}, {mechanism.delta:.6g})"
        )
    # Exact: the next query's check sums these values (2/3 written as 0.666667 would overspend).
    save_csv(path, book[COLUMNS], exact=True)
    if not mechanism.keyed_noise:
        append_history(history, book.loc[new, COLUMNS])
    return book


def append_history(path, rows):
    """Append-only: every release ever made on a split with noise that a rerun cannot replay (a
    library's own, unseeded draws), with the time it was made. A rerun of such a release spends a fresh eps on
    the same private records, while the job's ledger, rewritten, keeps only the last; this file,
    outside the job's outputs, keeps them all (`history_spent` sums them)."""
    import pandas as pd

    if path is None:
        raise ValueError("a release whose noise cannot be replayed needs a history file")
    stamped = rows.assign(released_at=pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        stamped.to_csv(f, header=f.tell() == 0, index=False)


def history_spent(paths):
    """Per dataset, seed, budget and mechanism, from the history files that exist: how many
    releases the split has had and the eps and delta they spent together."""
    import pandas as pd

    found = [pd.read_csv(p) for p in paths if Path(p).exists()]
    if not found:
        return pd.DataFrame(columns=["dataset", "seed", "eps_budget", "mechanism", "releases", "eps", "delta"])
    return (
        pd.concat(found, ignore_index=True)
        .groupby(["dataset", "seed", "eps_budget", "mechanism"], as_index=False)
        .agg(releases=("eps_spent", "size"), eps=("eps_spent", "sum"), delta=("delta_spent", "sum"))
    )


def load(path):
    import pandas as pd

    return pd.read_csv(path) if path else None
