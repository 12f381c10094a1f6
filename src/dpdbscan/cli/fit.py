"""``dpdbscan fit`` (and the release ``sweep`` makes first): spend the budget
once, write the release.

The command's options become typed records at its entry
(:class:`~dpdbscan.cli.fitoptions.FitOptions`,
:class:`~dpdbscan.cli.outputs.Outputs`): nothing below :func:`cmd_fit` sees
the argparse namespace. The points come through the door
(:func:`dpdbscan.prepare.prepare`), as the estimator's do.
"""

from __future__ import annotations

import argparse
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from .. import __version__
from ..exceptions import InsecureRandomnessWarning
from ..files.formats import format_of
from ..geometry import projection
from ..model import summary as model_summary
from ..model.describe import SEEDED_RECORD, protection_brief
from ..params.parameters import check_param, check_units, grid_eta
from ..params.validation import standardised_note
from ..pipeline import fit as fit_release
from ..plan.resolve import check_scale, resolve, validated
from ..prepare import (
    Points,
    check_layout_early,
    local_formats_only,
    prepare,
    project_box,
    read_length,
    split_bounds,
)
from ..prepare.door import say_counted
from ..progress import progress
from ..release.backends import Backend, NumpyBackend
from ..release.backends.numpy_backend import StreamedCounts
from ..release.mechanism import NoiseAhead
from ..series import (
    Series,
    SeriesBackend,
    SeriesInput,
    SeriesPlan,
    append_periods,
    fit_series,
    no_period_note,
    start_series,
)
from ..traces.times import check_time_format
from .common import (
    PRIVATE,
    Notes,
    WarningSink,
    border_value,
    read_model,
    stem,
)
from .fitoptions import FitOptions, events_word
from .fitseries import (
    SeriesOptions,
    SeriesRun,
    charging_series,
    check_append,
    check_series,
    periods_path,
    periods_png_path,
    write_periods_csv,
    write_periods_png,
)
from .forked import cancel_waiting
from .ledger import charging, check_ledger_options, ledger_unit, public_box_of, public_params
from .maps import picture_options
from .outputs import Outputs, go_after_read, out_paths, report, start_drawing, wait_to_draw, write_outputs

if TYPE_CHECKING:
    from pathlib import Path

    from ..model.record import SpanModel
    from ..params.specs import ReleaseSpec
    from ..release.backends.dask_backend import DaskBackend


_DBSCAN = ("eps", "min_samples")


def check_time_format_option(opts: FitOptions) -> None:
    """Refuse, before anything is read, a ``--time-format`` that cannot
    apply: without ``--time``, beside ``--time-unit`` (which reads numbers),
    with the Dask backend (its workers read the time column themselves), or
    on a PLT or GPX input (their times are ISO 8601 by the format, which the
    reader reads); or one that reads no time (:func:`check_time_format`)."""
    if opts.time_format is None:
        return
    if opts.time is None:
        raise ValueError("--time-format goes with --time COLUMN (the column whose text it reads)")
    if opts.time_unit != "s":
        raise ValueError(
            "--time-format reads the time column as text, --time-unit as numbers: give one of them"
        )
    if opts.backend == "dask":
        raise ValueError("--time-format is read in memory: use --backend numpy")
    fmt = opts.read.file_format
    kind = None if fmt is None and str(opts.input) == "-" else _format_kind(opts.input, fmt)
    if kind in ("plt", "gpx"):
        raise ValueError(
            f"--time-format does not apply to {kind.upper()} input: its times are ISO 8601 by the "
            "format, and read as such without it"
        )
    check_time_format(opts.time_format)


def _format_kind(path: Any, fmt: str | None) -> str | None:
    """The input's format by ``--format`` or its name, None when neither says (a folder)."""
    try:
        return format_of(path, fmt).kind
    except ValueError:
        return None


def check_fit_params(opts: FitOptions, eps: float | str | None = None, *, dry_run: bool = False) -> dict:
    """Validate every fit parameter with the shared table before reading a
    possibly huge file; returns them normalised (``min_samples`` is the first
    of a sweep's list, ``eps`` overrides ``opts.eps``). An ``eps`` or
    ``min_samples`` that is None (``check`` without them) is left out.
    ``dry_run`` (``check``): --unit without --max-cells-per-unit is allowed,
    to help choose it; the other rules of a person-level release hold."""
    eps = opts.eps if eps is None else eps
    if eps is not None:
        eps = read_length(eps, geo=opts.geo, auto=True)
    values = dict(
        eps=eps,
        min_samples=opts.min_samples[0],
        **opts.params,
        subcells=opts.subcells,
        margin=opts.margin,
        core=opts.core,
        border=border_value(opts.border, geo=opts.geo),
        random_state=opts.seed,
        backend=opts.backend,
        raise_min_samples=not opts.theoretical_threshold,
        events=opts.events,
        outside=opts.outside,
    )
    given = {k: v for k, v in values.items() if v is not None or k not in _DBSCAN}
    unit = opts.unit
    # the --unit option's name (public) says what one unit is in the warnings' words
    p = validated(given, cli=True, unit_name=unit if isinstance(unit, str) and not unit.isdigit() else None)
    units = unit is not None
    for k in _DBSCAN:
        if k not in given:
            p[k] = None  # check runs without them: no forecast
    for m in opts.min_samples:
        if m is not None:
            check_param("min_samples", m, cli=True)
    if p["events"] is not None and opts.backend == "dask":
        raise ValueError(
            "--stops and --trip-ends read each unit's trace in time order; the Dask backend "
            "shuffles (unit, cell) counts, not points, so it cannot yet: use --backend numpy"
        )
    if opts.outside == "drop" and opts.backend == "dask":
        raise ValueError(
            "--outside drop drops each row outside the box with the points in memory; the Dask "
            "backend clips them onto the box: use --backend numpy, or leave --outside out"
        )
    if opts.outside == "drop" and opts.bounds_text is None:
        raise ValueError("--outside drop needs public --bounds (the box the points are kept inside)")
    check_time_format_option(opts)
    if opts.ref_lat is not None and not opts.geo:
        raise ValueError("--ref-lat only applies with --geo")
    if opts.backend == "dask":
        local_formats_only(opts.input, opts.read)
    if opts.scheduler and opts.backend != "dask":
        raise ValueError("--scheduler needs --backend dask")
    _check_all_at_once(opts, p, units, dry_run)
    if opts.bounds_text is not None and opts.bounds_from_data:
        raise ValueError("give either --bounds or --bounds-from-data, not both")
    _check_scale_early(opts, p)
    if opts.backend != "dask":
        # a database's schema and metadata are read now, before a ledger reserves anything
        check_layout_early(opts.source(), eta=grid_eta(p["eta"]))
    return p


def _check_all_at_once(opts: FitOptions, p: dict, units: bool, dry_run: bool) -> None:
    """The privacy unit's options and the bounds, and where either is
    missing the file's layout too (its declared header or schema, no record
    read): every one of these refusals in one message, so that a newcomer
    fixes them in one go rather than one per try. Only an input refused
    already pays for the look at its layout."""
    problems = []
    try:
        if dry_run and units and p["max_cells_per_unit"] is None:
            check_units({**p, "max_cells_per_unit": 1}, units, cli=True)
        else:
            check_units(p, units, cli=True)
    except ValueError as e:
        problems.append(str(e))
    if opts.bounds_text is None and not opts.bounds_from_data:
        problems.append(
            "--bounds is required: give public bounds of the data domain (not computed from the "
            "data), or pass --bounds-from-data to accept a release with no privacy guarantee"
        )
    if not problems:
        return
    if opts.backend != "dask":
        try:
            opts.check_input(grid_eta(p["eta"]))
        except ValueError as e:
            problems.append(str(e))
    if len(problems) == 1:
        raise ValueError(problems[0])
    # one line, as every error of the command line
    listed = "; ".join(f"({i}) {text}" for i, text in enumerate(problems, 1))
    raise ValueError(f"{len(problems)} things to fix before anything is read: {listed}")


def _check_scale_early(opts: FitOptions, p: dict) -> None:
    """Refuse an eps as large as the public box before the file is read
    (:func:`dpdbscan.plan.resolve.check_scale`), when the bounds alone tell
    the box: two numbers per dimension, or four with --geo (in km then)."""
    eps = p.get("eps")
    if opts.bounds_text is None or not isinstance(eps, float):
        return
    b = opts.bounds
    assert b is not None
    if len(b) < 4 or len(b) % 2:
        return  # one lower and one upper for every column: d comes from the file
    lower, upper = split_bounds(b, len(b) // 2, opts.geo)
    if opts.geo:
        _, lower, upper = project_box(lower, upper, opts.ref_lat)
    check_scale(eps, lower, upper, cli=True)


def streamed_counts(opts: FitOptions, p: dict) -> StreamedCounts | None:
    """The dense counts to make while the file is read, or None.

    The grid and the kind of histogram come from the public options and box
    alone (:func:`dpdbscan.plan.resolve.resolve`, as the fit will make them),
    so the cells can be counted block by block on the reading threads and the
    counting hides behind the parsing. Only for an event-level dense release
    from a file with two bounds per column; the release is the same bit for
    bit (:class:`~dpdbscan.release.backends.numpy_backend.PrecountedBackend`
    falls back to counting whenever the rows or the grid differ). Any problem
    with the options is left for the fit to report.
    """
    release = dense_release(opts, p)
    return None if release is None else StreamedCounts(release.grid)


def dense_release(opts: FitOptions, p: dict) -> ReleaseSpec | None:
    """The event-level dense release the public options and box make, or
    None (see :func:`streamed_counts`; any problem is left for the fit)."""
    b = opts.bounds
    if opts.unit is not None or opts.events is not None or opts.bounds_text is None or b is None:
        return None
    if len(b) < 2 or len(b) % 2:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fit says them, once
            lower, upper = split_bounds(b, len(b) // 2, opts.geo)
            if opts.geo:
                _, lower, upper = project_box(lower, upper, opts.ref_lat)
            r = resolve(p, lower, upper)
    except (ValueError, TypeError, ArithmeticError):
        return None
    if r.choices or r.release.histogram != "dense" or r.release.units is not None:
        return None
    return r.release


def noise_ahead(opts: FitOptions, p: dict) -> NoiseAhead | None:
    """Start drawing the noise of the dense release (:func:`dense_release`)
    now, before the file is read: it depends on the public options and the
    randomness alone (:class:`~dpdbscan.release.mechanism.NoiseAhead`). The
    release uses it only if it is the release drawn for."""
    release = dense_release(opts, p)
    seed = p.get("random_state")
    if release is None or not (seed is None or isinstance(seed, int)):
        return None
    if release.size_estimate is not None:
        # the automatic mode counts the points first; its noise follows the count's
        return None
    return NoiseAhead(release, seed)


def _two_d_by_options(opts: FitOptions) -> bool:
    """Whether the public options alone say the points are 2-D (a picture
    is drawn only of 2-D points): four bounds, a lower and an upper for
    each of two columns (lon/lat with --geo)."""
    return opts.bounds_text is not None and len(opts.bounds_text) == 4


def dask_backend(opts: FitOptions) -> Backend:
    """The Dask backend of ``--backend dask`` (:meth:`FitOptions.dask_backend`)."""
    return opts.dask_backend()


def fit_model(
    opts: FitOptions,
    sink: WarningSink,
    p: dict,
    notes: Notes,
    *,
    preload_png: bool = False,
    series: SeriesPlan | SeriesRun | None = None,
) -> SpanModel:
    """Run one release with the validated parameters ``p`` (its
    ``min_samples`` the one released: a sweep gives its smallest); returns the
    SpanModel. ``preload_png``: import matplotlib while the file is read
    and the release made, in a copy forked before the read that then draws
    the picture (:func:`.outputs.wait_to_draw`), or else on a thread once
    the file is read (:func:`preload_matplotlib`).
    ``series``: a series over time (``--per``): the spans of the horizon and
    the span x period table, recorded in the model (:func:`dpdbscan.series.fit_series`);
    or a :class:`SeriesRun`, an appendable series' start or append
    (:func:`dpdbscan.series.start_series`, :func:`~dpdbscan.series.append_periods`)."""
    meta: dict[str, Any] = {
        "tool": f"dpdbscan {__version__}",
        "eps_text": str(opts.eps),
        "randomness": "secure" if opts.seed is None else SEEDED_RECORD,
    }
    dask = opts.backend == "dask"
    backend: Backend = NumpyBackend()
    ahead: NoiseAhead | None = None
    if dask:
        backend = dask_backend(opts)
        pts = prepare(opts.source(), eta=grid_eta(p["eta"]), backend=backend)
        if pts.unit_name is not None:
            meta["unit_column"] = pts.unit_name  # public: the option
        meta.update(pts.meta)
    else:
        streamed = None if series is not None else streamed_counts(opts, p)
        if preload_png and series is None:
            # a copy forked while the process is small, to draw the picture;
            # it imports matplotlib now, beside the read, when the options
            # say the points are 2-D (else after the read, once they are
            # known to be), and draws once sent the release. The copy forked
            # at the command's start imported matplotlib beside the
            # command's imports: on an idle machine it goes on after the
            # read, beside the fit
            if wait_to_draw() and _two_d_by_options(opts) and not go_after_read():
                start_drawing()
        # after the fork (which wants no other thread), before the read
        ahead = None if streamed is None else noise_ahead(opts, p)
        source = opts.source(notes)
        if streamed is not None and not source.transforms and source.time_column is None:
            source = replace(source, block_counter=streamed)
        pts = prepare(source, eta=grid_eta(p["eta"]), notes=notes)
        if streamed is not None:
            backend = streamed.backend_for(pts.X)
        meta.update(pts.meta)
        if pts.unit_name is not None:
            meta["unit_column"] = pts.unit_name  # public: the option, from the header or schema
    if opts.read.unit_from is not None:
        meta["unit_from"] = opts.read.unit_from  # public: each file or sub-folder is a unit
    # the coordinate columns as the in-memory reader names them (given, else
    # the declared header's or schema's, else a header-less file's field
    # numbers), with a distributed backend too: public
    names = pts.names or pts.read_names
    meta["columns"] = [str(n) for n in names] if names else None
    if opts.outside == "drop":
        meta["outside"] = "drop"  # public: the option (points outside the box dropped, not clipped)
    if opts.events is not None:
        # public: the options and the declared header or schema's names
        meta["events"] = {**opts.events.record(), "time_column": str(opts.time)}
        if opts.events.needs_status:
            meta["events"]["status_column"] = str(opts.trip_ends)
        if opts.time_unit != "s":
            meta["events"]["time_unit"] = opts.time_unit
        if opts.time_format is not None:
            meta["events"]["time_format"] = opts.time_format

    if preload_png and pts.d != 2:
        # no picture but of 2-D points (write_outputs): the copy left
        # waiting to draw one is stopped now that the box says so, before
        # it imports the rest of matplotlib beside the fit (0.2 s of CPU,
        # and all of its imports where it was still at them)
        cancel_waiting()
    elif preload_png and not start_drawing():
        preload_matplotlib()
    if opts.seed is not None:
        print(
            "dpdbscan: warning: --seed makes the noise reproducible and NOT cryptographically "
            "secure: for research only, do not publish this release",
            file=sys.stderr,
        )
    # the events are made by the door (events_step), once
    p = {**p, "events": None}
    note = None
    counted = None
    no_period = None
    with progress("fitting", enabled=opts.progress, ticking=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # said above
        if isinstance(series, SeriesRun):
            return _appendable_model(sink, pts, p, series, meta, opts, notes)
        if series is not None:
            made = _series_model(
                opts, sink, pts, p, series, meta, cast(SeriesBackend, backend) if dask else None
            )
            model, counted, no_period = made.model, made.read_counts, made.n_no_period
        else:
            # read from the private points on a thread beside the release, said after it
            note = None if dask else standardised_note_beside(pts.X, "--bounds")
            model = fit_release(
                pts.X,
                pts.lower,
                pts.upper,
                p,
                backend=backend,
                metadata=meta,
                units=pts.units,
                noise_ahead=ahead,
                stacklevel=3,
            )
            counted = cast("DaskBackend", backend).input_counts if dask else None
    sink.flush()
    if dask:
        # what the workers read and dropped, known once they have counted
        # (the in-memory reader says it as it reads); a series' from its window's reads
        say_counted(opts.input, pts, counted, notes)
    if no_period:
        # a series' rows dropped for their time, counted where they were read (counts only)
        notes(no_period_note(no_period, events_word(opts.events)))
    said = None if note is None else note()
    if said:
        # read from the private points: a private note, said after the release
        # (which it cannot change) and even with --quiet
        print(f"{PRIVATE} dpdbscan: PRIVACY WARNING: {said}", file=sys.stderr)
    return model


def standardised_note_beside(X: Any, option: str) -> Callable[[], str | None]:
    """:func:`~dpdbscan.params.validation.standardised_note` of the points
    ``X``, computed on a thread while the command makes the release (its
    column sums, 0.01-0.02 s of CPU on the Cabs file, run outside the GIL
    on the other core instead of after the fit); the function returned
    waits for it and gives the note, or raises what it raised. The points
    are only read meanwhile. The thread has ended before the command writes
    its files (it may fork then)."""
    got: list[str | None] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            got.append(standardised_note(X, option))
        except BaseException as exc:  # noqa: BLE001 - raised where the note is asked for
            failed.append(exc)

    thread = threading.Thread(target=work, name="dpdbscan-note", daemon=True)
    thread.start()

    def note() -> str | None:
        thread.join()
        if failed:
            raise failed[0]
        return got[0]

    return note


def _series_model(
    opts: FitOptions,
    sink: WarningSink,
    pts: Points,
    p: dict,
    series: SeriesPlan,
    meta: dict,
    backend: SeriesBackend | None = None,
) -> Series:
    """:func:`dpdbscan.series.fit_series` of the points the door prepared
    (``backend``: the Dask backend, which reads the rows and their time
    column itself); with it, the workers' tally of what they read in
    ``read_counts``."""
    # in memory the door read the times in --time-unit already (seconds); the Dask workers read
    # the column itself, in that unit
    raw = backend is not None
    made = fit_series(
        SeriesInput(
            pts.X,
            pts.lower,
            pts.upper,
            p,
            pts.units,
            opts.time if raw else pts.times,
            opts.time_unit if raw else "s",
        ),
        series,
        unit_name=None if pts.unit_name is None else str(pts.unit_name),
        metadata={**meta, "time_column": str(opts.time)},
        stacklevel=4,
        backend=backend,
    )
    sink.flush()
    return made


def _appendable_model(
    sink: WarningSink, pts: Points, p: dict, run: SeriesRun, meta: dict, opts: FitOptions, notes: Notes
) -> SpanModel:
    """An appendable series: started (its spans and first periods) or
    continued (``run.previous``: only the new periods' rows count)."""
    unit_name = None if pts.unit_name is None else str(pts.unit_name)
    if run.previous is not None:
        made = append_periods(
            run.previous,
            pts.X,
            pts.units,
            pts.times,
            through=run.through,
            charged=run.charged,
            random_state=p.get("random_state"),
        )
    else:
        made = start_series(
            SeriesInput(pts.X, pts.lower, pts.upper, p, pts.units, pts.times),
            run.plan,
            through=run.through,
            series_id=run.series_id,
            unit_name=unit_name,
            metadata={**meta, "time_column": str(opts.time)},
            stacklevel=4,
        )
    sink.flush()
    if made.n_no_period:
        notes(no_period_note(made.n_no_period, events_word(opts.events)))  # counts only, after the release
    return made.model


def summary(model: SpanModel) -> str:
    """The release's summary, with lengths in m/km for geographic models."""
    lines = [model_summary(model)]
    proj = projection.projection_of(model)
    if proj is not None:
        lines.append(
            "  geo     : longitude and latitude projected to km around "
            f"{projection.latitude_text(proj.ref_lat)} "
            "(equirectangular, centred on the public box), so the lengths above are on the ground"
            + (
                f"; sub-cells {projection.format_km(model.grid.width)} wide"
                if model.spec.subcells > 1
                else ""
            )
        )
    source = model.metadata.get("bounds_source", "")
    if source.startswith("data"):
        lines.append(
            "  WARNING : bounds were computed from the data: this release has NO "
            "differential privacy guarantee"
        )
    if str(model.metadata.get("randomness", "")).startswith("seeded"):
        lines.append("  WARNING : seeded (reproducible, insecure) noise: for research, not for release")
    return "\n".join(lines)


def preload_matplotlib() -> threading.Thread:
    """Import matplotlib on a background thread while the release is made.

    Its import takes about 0.4 s of CPU and the picture is drawn only after
    the fit. ``fit`` starts it once the file is read: reading keeps both
    cores of a small machine busy, the fit (numpy on large arrays, mostly
    outside the GIL) only one. A failed import is left for the picture to
    report (the release is written first either way).
    """

    def load():
        try:
            # lazy: matplotlib's side loads only on this thread, not before the read
            from ..render import plotting

            plotting.preload()
        except Exception:  # noqa: BLE001 - reported when the picture is drawn
            pass

    thread = threading.Thread(target=load, name="dpdbscan-preload", daemon=True)
    thread.start()
    return thread


def _write_all(
    model: SpanModel, paths: dict, notes: Notes, picture: Any, table: Path | None, multiples: Path | None
) -> tuple[list[str], list[str]]:
    """The release's files, and a series' table and small multiples."""
    written, failed = write_outputs(model, paths, notes, picture)
    if table is not None:
        write_periods_csv(model, table)
        written.append(str(table))
    if multiples is not None and write_periods_png(model, multiples, failed):
        written.append(str(multiples))
    return written, failed


def _fit_appendable(
    opts: FitOptions,
    sink: WarningSink,
    p: dict,
    notes: Notes,
    series: SeriesPlan,
    s: SeriesOptions,
    paths: dict,
    picture: Any,
    extra_paths: tuple[Path | None, Path | None],
) -> tuple[SpanModel, list[str], list[str]]:
    """``--places-periods``: start an appendable series or (``--append``)
    continue one; the ledger's rows reserved before any record is read."""
    unit = None if opts.unit is None else str(opts.unit)
    previous = None
    if s.append is not None:
        previous = read_model(s.append)
        check_append(series, unit, previous, public_box_of(opts))
    check_ledger_options(opts)
    if opts.ledger is not None:
        # what public input refuses is refused before the ledger charges anything
        opts.check_input(grid_eta(p["eta"]))
    params = {**public_params(opts, p, "fit"), "series": series.record(unit), "through": s.through}
    if previous is not None:
        params["append_to"] = str(s.append)
    charges = charging_series(
        opts.ledger, opts.dataset, series, previous, unit, params, unit_column=ledger_unit(opts)
    )
    with charges as (sid, charged):
        run = SeriesRun(series, s.through, previous, sid, opts.ledger is not None)
        model = fit_model(opts, sink, p, notes, preload_png=paths["png"] is not None, series=run)
        written, failed = _write_all(model, paths, notes, picture, *extra_paths)
        charged(written)
    return model, written, failed


def cmd_fit(args: argparse.Namespace, sink: WarningSink) -> int:
    picture = picture_options(args)
    # each option by its own name: --size alone on 3-D data named --png, which was not given
    shaping = [f"--{k}" for k in ("size", "extent", "context") if k in picture]
    need_2d = tuple(["--png"] if args.png else []) + tuple(shaping) + (("--geojson",) if args.geojson else ())
    opts = FitOptions.from_args(args, need_2d)
    outputs = Outputs.from_args(args)
    series_opts = SeriesOptions.from_args(args)
    p = check_fit_params(opts)
    notes = Notes(opts.quiet)
    name = args.name or stem(opts.input)
    paths = out_paths(outputs, name)
    series = None if series_opts is None else check_series(series_opts, opts, p)
    table = None if series is None else periods_path(outputs, name)
    multiples = None if series is None else periods_png_path(outputs, name)
    unit = None if opts.unit is None else str(opts.unit)
    if series is not None and series_opts is not None and series.appendable:
        model, written, failed = _fit_appendable(
            opts, sink, p, notes, series, series_opts, paths, picture, (table, multiples)
        )
    else:
        with charging(
            opts,
            p,
            "fit",
            cost=None if series is None else series.cost,
            extra=None if series is None else {"series": series.record(unit)},
        ) as charged:  # --ledger: reserved before any record is read; a series once, at its whole cost
            model = fit_model(opts, sink, p, notes, preload_png=paths["png"] is not None, series=series)
            written, failed = _write_all(model, paths, notes, picture, table, multiples)
            charged(model, written)
    print(summary(model))
    if series is not None:
        print(
            f"  series  : {model.metadata['series']['statement']}; the privacy line above is the spans' part"
        )
        print(f"  protects: {protection_brief(model)}")
    return report(written, failed)
