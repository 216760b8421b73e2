"""Privacy budget ledger: one row per oracle query and run, checked when the query is answered.

Each oracle job writes the ledger of its chain of queries (the previous query's ledger plus its
own rows), so the ledger of a run's last query is that run's whole account. A query beyond the
run's plan, or a total above the run's budget, fails the job before anything is released. The
costs and their composition come from the mechanism (expril.privacy.mechanisms); this module records.
"""

import pandas as pd

from expril.io import save_csv

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
    "eps_spent",
    "delta_spent",
    "eps_total",
    "delta_total",
]


class BudgetError(RuntimeError):
    pass


def record(path, previous, dataset, seeds, query, rule, mechanism):
    """Append this query's rows to the chain's ledger after checking plan and budget."""
    eps, delta = mechanism.query_cost(query)
    noise = {"sensitivity": float("nan"), "scale": float("nan")} | mechanism.ledger_fields(query)
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
            **noise,
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
        seed: mechanism.compose(list(zip(run["eps_spent"], run["delta_spent"]))) for seed, run in book.groupby("seed")
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
    return book


def load(path):
    return pd.read_csv(path) if path else None
