"""Post-processing of the released histogram: neighbour sums, core cells,
sub-cells, merging into spans.

Nothing in this package reads the points or spends privacy budget, and no
module here imports the code that does (``dpdbscan.pipeline``,
``dpdbscan.release.histograms``, ``dpdbscan.release.backends``, ``dpdbscan.release.points``);
``tests/test_architecture.py`` checks it. By the post-processing theorem of
differential privacy, everything computed here is as private as the release.
"""
