"""Tests of benchmarks/ (`make test-experiments`, in .venv)."""
