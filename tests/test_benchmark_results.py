"""benchmarks/RESULTS.md as `benchmarks.pipeline` rewrites it: a part measured again replaces its
own section; the sections written by hand after measurements of their own ((o) on) stay."""

from benchmarks.pipeline import OUT, document, sections


def test_rewriting_the_results_keeps_every_section_in_the_order_of_their_letters():
    kept = sections(OUT.read_text())
    assert {"a, b, f", "j", "o", "p"} <= set(kept)  # (o) and (p) are no part of the pipeline
    assert document(kept) == OUT.read_text()
    remeasured = sections(document(kept | {"d": "## (d) Batched against one-at-a-time training\n\nnew figures"}))
    assert list(remeasured) == list(kept)
    assert remeasured["d"].endswith("new figures") and remeasured["p"] == kept["p"]
    added = sections(document({"z": "## (z) A new section", **kept}))
    assert list(added) == [*kept, "z"]
