"""The release: the only package that reads points or draws noise (points, bounding, backends,
histograms, samplers, the accountant)."""
