"""The paper's core test: a noisy upper bound of the alpha-neighbourhood count plus a margin."""
