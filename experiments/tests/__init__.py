"""Tests of experiments/ (`make test-experiments`, in .venv-baselines)."""
