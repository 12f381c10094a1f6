"""Command-line pieces shared by the experiments' scripts."""

from __future__ import annotations

import argparse


def parser(
    doc: str | None, formatter_class: type[argparse.HelpFormatter] = argparse.HelpFormatter
) -> argparse.ArgumentParser:
    """An argument parser described by the first paragraph of a module's docstring."""
    return argparse.ArgumentParser(description=(doc or "").split("\n\n")[0], formatter_class=formatter_class)


def seed_range(text: str) -> range:
    """Seeds ``"a-b"`` (inclusive) or a single seed ``"a"``."""
    a, _, b = text.partition("-")
    return range(int(a), int(b or a) + 1)


def names(text: str | None, default: tuple[str, ...]) -> list[str]:
    """A comma-separated list of names, or ``default`` when none is given."""
    return [n.strip() for n in text.split(",") if n.strip()] if text else list(default)
