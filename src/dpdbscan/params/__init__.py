"""The public parameters: one table with every default, their checks, and what they resolve to."""
