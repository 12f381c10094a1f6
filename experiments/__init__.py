"""Experiments of the paper (not part of the library): `make accuracy`, `make reproduce`."""
