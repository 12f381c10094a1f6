"""Planning from public inputs only: what a release will detect, the automatic mode's plan."""
