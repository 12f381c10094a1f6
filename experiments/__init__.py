"""Experiments of the paper and of this library (not part of the library).

Run from the repository root as ``python -m experiments.<name>``; ``make accuracy``
and ``make reproduce`` do so in .venv-baselines (the DP-KMeans baseline needs
diffprivlib, which needs scikit-learn < 1.9). They use ``dpdbscan``'s public names
and the research hooks of ``dpdbscan.research``; data locations and public boxes
are in :mod:`experiments.data`.
"""
