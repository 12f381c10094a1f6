"""The docs' option tables and field lists name what the code has.

tests/test_docs_shell.py and tests/test_docs_python.py run the docs' commands
and code; they cannot see prose: an option no page mentions, a table row
naming an option the command lacks, a GeoJSON property the user guide's list
leaves out or one the code no longer writes. These tests tie those lists to
the code (the command line's parser, ``dpdbscan.geojson``).
"""

from __future__ import annotations

import argparse
import re
import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, fit_lonlat, geojson
from dpdbscan.cli import build_parser
from dpdbscan.model.geojson import to_geojson
from dpdbscan.params.parameters import validate
from dpdbscan.series import SeriesInput, fit_series, plan_series, start_series
from dpdbscan.traces.periods import Periods

from conftest import REPO

#: The pages a user reads for the command line (not the results logs).
USER_PAGES = (
    "README.md",
    "docs/user-guide.md",
    "docs/places.md",
    "docs/maps.md",
    "docs/dask.md",
    "docs/parameters.md",
)
GUIDE = (REPO / "docs" / "user-guide.md").read_text()


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its name ("" the top level, "ledger init", ...)."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        out[name] = parser
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub, p in a.choices.items():
                    walk(p, f"{name} {sub}".strip())

    walk(build_parser(), "")
    return out


def _options(parser: argparse.ArgumentParser) -> list[list[str]]:
    """The option strings of each of a parser's options (not -h)."""
    return [
        a.option_strings
        for a in parser._actions
        if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]


def _named(option: str, text: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", text) is not None


def _section(text: str, heading: str) -> str:
    """The text under a markdown heading, up to the next heading of any level."""
    start = text.index(heading + "\n")
    nxt = re.search(r"^#{1,6} ", text[start + len(heading) :], flags=re.M)
    return text[start : start + len(heading) + (nxt.start() if nxt else len(text))]


def test_every_option_of_every_command_is_named_in_the_user_docs():
    text = "\n".join((REPO / p).read_text() for p in USER_PAGES)
    missing = [
        f"{name or 'dpdbscan'} {strings[-1]}"
        for name, parser in _commands().items()
        for strings in _options(parser)
        if not any(_named(s, text) for s in strings)
    ]
    assert not missing, f"options no user-facing page names: {missing}"


def test_every_fit_option_is_in_the_user_guide():
    fit = _commands()["fit"]
    missing = [strings[-1] for strings in _options(fit) if not any(_named(s, GUIDE) for s in strings)]
    assert not missing, f"fit options the user guide does not name: {missing}"


@pytest.mark.parametrize("command", ["fit", "check"])
def test_the_options_a_command_s_guide_section_names_are_its_own(command):
    """Each option written in a command's section of the user guide (its
    table and prose, the commands it shows) is one the command takes."""
    commands = _commands()
    # the command's own options and the program's (--version, -q before the command)
    own = {s for name in (command, "") for strings in _options(commands[name]) for s in strings}
    section = _section(GUIDE, f"### {command}")
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", section))
    assert named, command
    # options the section names of other commands, said as such
    others = {"--accounting"} if command == "fit" else set()
    assert named - own - others == set(), command


def _documented_geojson_properties() -> set[str]:
    start = GUIDE.index("**GeoJSON** (`*.spans.geojson`)")
    paragraph = GUIDE[start : GUIDE.index("\n\n", start)]
    return set(re.findall(r"`([a-z][a-z0-9_]*)`", paragraph))


#: Values and names the GeoJSON paragraph writes in backticks that are not properties.
NOT_PROPERTIES = {"properties", "person", "event", "file", "folder", "secure", "to_geojson"}


def _models():
    """An event-level model, a person-level one, a geographic one (written
    with and without its projection), a series and an appendable series."""
    rng = np.random.default_rng(70_011)
    X = rng.normal(2.5, 0.3, (3000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        event = DPDBSCAN(0.5, min_samples=20, bounds=(0, 10), random_state=70_011).fit(X).spans_
        units = np.repeat(np.arange(300), 10)
        person = (
            DPDBSCAN(
                0.5, min_samples=10, bounds=(0, 10), max_cells_per_unit=4, delta=1e-6, random_state=70_012
            )
            .fit(X, units=units)
            .spans_
        )
        lonlat = rng.normal((-122.41, 37.79), 0.002, (3000, 2))
        geo = fit_lonlat(
            lonlat, bounds=(-122.48, 37.72, -122.38, 37.82), eps="100m", min_samples=20, random_state=70_013
        )
        ids = np.repeat(np.arange(60), 3)
        t = 1_709_510_400 + 3600 * (np.arange(180) % 40)
        p = validate(
            dict(epsilon=8.0, delta=1e-5, eps=0.5, min_samples=10, max_cells_per_unit=4, random_state=70_014)
        )
        lower, upper = np.zeros(2), np.full(2, 10.0)
        periods = Periods("day", "2024-03-04", "2024-03-07")
        xy = rng.normal(2.5, 0.1, (180, 2))
        series = fit_series(
            SeriesInput(xy, lower, upper, p, ids, t), plan_series(p, lower, upper, periods)
        ).model
        appendable = start_series(
            SeriesInput(xy, lower, upper, p, ids, t),
            plan_series(p, lower, upper, periods, places=1),
            through="2024-03-05",
        ).model
    return [
        geojson(event),
        geojson(person),
        geojson(geo),
        to_geojson(geo),
        geojson(series),
        geojson(appendable),
    ]


def test_the_geojson_properties_the_user_guide_lists_are_those_written():
    written_top: set[str] = set()
    written_feature: set[str] = set()
    for g in _models():
        written_top |= set(g["properties"])
        for f in g["features"]:
            written_feature |= set(f["properties"])
    documented = _documented_geojson_properties() - NOT_PROPERTIES
    assert written_feature, "no span to read a feature's properties from"
    written = written_top | written_feature
    assert written - documented == set(), "written but not in the user guide's GeoJSON paragraph"
    assert documented - written == set(), "in the user guide's GeoJSON paragraph but never written"


def _actions():
    """(command, option, action) for every option of every command."""
    for name, parser in _commands().items():
        for a in parser._actions:
            if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
                yield name or "dpdbscan", a.option_strings[-1], a


def test_every_option_s_help_says_what_it_does():
    silent = [f"{name} {option}" for name, option, a in _actions() if not a.help]
    assert not silent, f"options whose --help says nothing: {silent}"


def test_a_number_an_option_defaults_to_is_in_its_help():
    """--help is where the defaults are looked up: a numeric default the
    help leaves out is a default the user cannot see."""
    unsaid = [
        f"{name} {option} (default {a.default!r})"
        for name, option, a in _actions()
        if isinstance(a.default, (int, float)) and not isinstance(a.default, bool) and "default" not in a.help
    ]
    assert not unsaid, unsaid


@pytest.mark.parametrize("command", ["predict", "plot"])
def test_the_reading_options_of_a_saved_model_s_points_name_the_model(command):
    """predict's and plot's points take the model's coordinates: they have
    no --bounds to count the fields of a CSV without a header from."""
    fields = next(a for a in _commands()[command]._actions if "--fields" in a.option_strings)
    assert "bounds" not in fields.help and "model" in fields.help, fields.help
