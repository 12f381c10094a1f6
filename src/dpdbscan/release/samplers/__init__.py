"""Exact samplers on a source of random words. Imported only inside ``dpdbscan.release``."""
