"""Rival 1, learning from label proportions (LLP).

The curator releases once, at the run's whole eps, the noisy counts and the noisy negatives of
its validation split in every bin of the learner's: the bin counts query and the error query on
h_0 = 1 of the `counts` mechanism planned for one iteration (lambda = 2d/eps), the information in
ExPriL's first error query. The learner reads each bin's proportion of positives from them and
trains its network on the source samples as members of bags, their bins, one per feature
(expril.method.training.Bags)."""

from expril.method import binning

# The release's two queries, as the ledger and the noise stream name them.
QUERIES = ("llp/counts", "llp/negatives")


def bags(edges, x, mechanism, counts, negatives):
    """Each sample's bags (its bin in every feature, global ids) and their proportions of
    positives, both (n, d), from the released counts and negatives (mechanisms.Counts)."""
    ids = binning.bin_ids(edges, x)
    positives = 1.0 - mechanism.error_rates(negatives, counts)
    return ids, positives[ids]
