"""The benchmark suite (not part of the library): `make bench`, `python -m benchmarks.<name>`."""
