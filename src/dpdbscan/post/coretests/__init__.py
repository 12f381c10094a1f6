"""The core tests, one folder each, behind one small interface."""
