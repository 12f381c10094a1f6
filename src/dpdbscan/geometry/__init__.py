"""Lengths on the Earth (the --geo projection) and the outlines of spans."""
