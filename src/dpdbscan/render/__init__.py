"""Pictures of a release: figures, the interactive HTML map, explore's small multiples."""
