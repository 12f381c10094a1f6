"""Cells, the released histogram over them and sub-cells: the public structures every stage shares."""
