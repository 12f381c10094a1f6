"""Where a release is written, and the writing: the JSON, GeoJSON and PNG of
``fit`` and ``sweep``, each file atomically."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from ..geometry import projection
from ..model import SpanModel, save_geojson, save_model
from . import forked
from .common import (
    EXIT_OK,
    EXIT_PARTIAL,
    Notes,
    atomic_write,
    check_writable,
    draw_spans_png,
    one_line,
    write_temp,
)


@dataclass(frozen=True)
class Outputs:
    """The output options of ``fit`` and ``sweep``: the folder, explicit
    paths (None: ``out_dir/NAME.spans.KIND``), the kinds left out, and the
    input (never overwritten)."""

    out_dir: str
    input: str | None = None
    json: str | None = None
    geojson: str | None = None
    png: str | None = None
    no_geojson: bool = False
    no_png: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Outputs:
        """The command's output options, typed (the boundary with argparse)."""
        return cls(
            out_dir=args.out_dir,
            input=args.input,
            json=getattr(args, "json", None),
            geojson=getattr(args, "geojson", None),
            png=getattr(args, "png", None),
            no_geojson=args.no_geojson,
            no_png=args.no_png,
        )


def out_paths(outputs: Outputs, name: str) -> dict:
    """Output paths by kind (None when not wanted), checked writable now,
    before the input is read or any budget spent."""
    out_dir = Path(outputs.out_dir)
    paths = {}
    for kind, skip in (("json", False), ("geojson", outputs.no_geojson), ("png", outputs.no_png)):
        explicit = getattr(outputs, kind)
        paths[kind] = None if skip else Path(explicit) if explicit else out_dir / f"{name}.spans.{kind}"
    check_writable(paths.values(), outputs.input)
    return paths


def write_outputs(
    model: SpanModel, paths: dict, notes: Notes, picture: dict | None = None
) -> tuple[list[str], list[str]]:
    """Write the release (JSON), GeoJSON and PNG, each atomically.

    The picture is drawn by a forked copy of the command on the machine's
    other core (:mod:`dpdbscan.cli.forked`: the one ``fit`` left waiting
    (:func:`wait_to_draw`), sent the release as it is and then the spans'
    outlines computed here for both GeoJSON and picture (:func:`_send`),
    or else one forked now; in this process where forking is not safe),
    the JSON is written on a second thread (compressing the noisy
    histogram runs outside the GIL), once the picture is under way, and
    the GeoJSON here. With the waiting copy the JSON follows the GeoJSON;
    otherwise the three are written at once. GeoJSON and picture go
    to temporary files; they are renamed into place only once the JSON is
    safe on disk, so a failed release leaves no GeoJSON or picture of it
    behind. ``picture`` holds the PNG's ``size`` and ``extent``
    (cli/maps.py). Returns (written, failed). A failed GeoJSON or picture
    does not lose the release: the JSON is kept and the failure is reported.
    """
    written: list[str] = []
    failed: list[str] = []
    errors: list[BaseException] = []
    two_d = model.grid.d == 2
    if not two_d and (paths["geojson"] is not None or paths["png"] is not None):
        print(f"note: GeoJSON and PNG need 2-D data; skipped for {model.grid.d}-D", file=sys.stderr)
    want_png = two_d and paths["png"] is not None

    def draw(t: Path) -> None:
        draw_spans_png(model, t, **(picture or {}))

    waiting = forked.take_waiting()
    if waiting is not None and not want_png:
        waiting.cancel()
        waiting = None
    drawing = None
    if waiting is not None:
        # first: the picture is the longest of the three, and the JSON's
        # thread would hold up the outlines that follow the release for the GIL
        drawing = _send(waiting, model, picture, paths["png"], failed)
    elif want_png:
        drawing = forked.start(paths["png"], draw)  # before any thread of this call starts

    def save_json():
        try:
            atomic_write(paths["json"], lambda p: save_model(model, p))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            errors.append(exc)

    saver = threading.Thread(target=save_json, name="dpdbscan-json")
    # With the waiting copy drawing, the JSON waits for the GeoJSON: the
    # command's two threads beside the copy would leave the picture, the
    # longest of the three, two thirds of a core (Cabs: the command ended
    # 0.1 s later), and written in turn they still end before it.
    late = waiting is not None
    if not late:
        saver.start()
    staged: list[tuple[str, Path]] = []
    try:
        if two_d:
            proj = projection.projection_of(model)
            extras = (
                (
                    "geojson",
                    lambda t: save_geojson(model, t, transform=None if proj is None else proj.inverse),
                ),
                ("png", draw if want_png and drawing is None and not failed else None),
            )
            for kind, write in extras:
                if paths[kind] is None or write is None:
                    continue
                try:
                    staged.append((kind, write_temp(paths[kind], write)))
                except Exception as exc:  # the release is safe: report, do not lose it
                    failed.append(f"{paths[kind]} ({one_line(exc)})")
        if late:
            saver.start()
        if drawing is not None:
            try:
                staged.append(("png", drawing.result()))
            except Exception as exc:  # as above
                failed.append(f"{paths['png']} ({one_line(exc)})")
    except BaseException:
        saver.join()
        if drawing is not None:
            drawing.cancel()
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        raise
    saver.join()
    if errors:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        raise errors[0]
    written.append(str(paths["json"]))
    for kind, tmp in sorted(staged, key=lambda s: KINDS.index(s[0])):
        os.replace(tmp, paths[kind])
        written.append(str(paths[kind]))
    return written, failed


def _send(
    waiting: forked.Waiting, model: SpanModel, picture: dict | None, path: Path, failed: list[str]
) -> forked.Forked | None:
    """Send the waiting copy the release to draw as soon as it is made,
    with the spans' figures, then their outlines once computed here (the
    GeoJSON needs both): the copy draws the rest of the picture meanwhile
    and takes the outlines last (:mod:`dpdbscan.cli.sentrelease`). The
    release's large arrays (its noisy histogram most) go into the copy's
    shared memory file on a thread first
    (:meth:`~dpdbscan.cli.forked.Waiting.stage`); the figures are computed
    meanwhile, before the copy could take the release anyway. A failure
    to send is the picture's (``failed``); figures or outlines that fail
    are the copy's error too, and met again by the GeoJSON."""
    try:
        waiting.stage(model)
        try:
            _ = model.stats  # cached on the model, pickled with it
        except Exception:  # noqa: BLE001 - met again, and reported, by the GeoJSON and the picture
            pass
        drawing = waiting.send((model, picture), path, more=True)
    except BaseException as exc:
        if not isinstance(exc, Exception):  # interrupted: the copy is not left waiting
            waiting.cancel()
            raise
        failed.append(f"{path} ({one_line(exc)})")  # the release is safe: report, do not lose it
        return None
    try:
        outlines: object = model.outlines()
    except Exception as exc:  # noqa: BLE001 - met again, and reported, by the GeoJSON
        outlines = exc
    except BaseException:
        drawing.cancel()
        raise
    drawing.follow(outlines)
    return drawing


def wait_to_draw() -> bool:
    """Fork a copy of the command that imports matplotlib once told to
    (:meth:`dpdbscan.cli.forked.Waiting.go`, which ``fit`` does at once, so
    that the import runs beside the read) and then draws the picture of
    the release :func:`write_outputs` sends it. Called before the input is
    read, while the process is small. The copy forked at the command's
    start (:mod:`dpdbscan.cli.early`) is kept instead, when there is one.
    False when forking is not safe here (the picture is then drawn as
    :func:`write_outputs` says)."""
    if forked.peek_waiting() is not None:
        return True
    return forked.wait_for_work(prepare_to_draw, draw_sent) is not None


def go_after_read() -> bool:
    """Whether ``fit`` tells the waiting copy to go on with its imports only
    once the file is read, beside the fit, rather than before the read.

    Only for the copy forked at the command's start, which has imported
    matplotlib already (:mod:`dpdbscan.cli.early`), and only on a machine
    that is otherwise idle (fewer threads running elsewhere than it has
    cores, :func:`running_elsewhere`): there the read keeps every core busy
    and the fit only one, so the rest of the copy's imports (matplotlib's
    figure, Agg and pyplot modules and a picture of nothing, about 0.2 s of
    CPU: the library's modules it imported beside the command's) cost the
    read a core's worth and the fit nothing. On a busy
    machine every stage shares the cores with other work anyway, and the
    copy is better ready when the release is: it goes on before the read,
    as the copy ``fit`` forks itself does."""
    waiting = forked.peek_waiting()
    if waiting is None or not waiting.early:
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return False
    return running_elsewhere() < cores


#: Linux's load figures: three averages, then runnable/all threads, then the last pid.
LOADAVG = "/proc/loadavg"


def running_elsewhere() -> float:
    """How many threads run or wait for a core on this machine now besides
    the caller: Linux's count of runnable threads (``/proc/loadavg``), less
    one, or else the 1-minute load average. The count of now, not the
    average: a benchmark's back-to-back commands keep the average of an
    otherwise idle machine above its cores."""
    try:
        with open(LOADAVG, encoding="ascii") as f:
            return int(f.read().split()[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]


def prepare_to_draw() -> None:
    """What the copy of :func:`wait_to_draw` imports while the file is
    read and the release made: everything the picture needs, pyplot too
    (nothing else runs in it), and a first picture of nothing
    (:func:`dpdbscan.render.plotting.preload`). Nothing here depends on the
    data: the copy has none of it until the release is sent."""
    # lazy: in the drawing copy only, not in the command before its read
    from ..render import plotting

    plotting.preload(alone=True)


def start_drawing() -> bool:
    """Tell the copy of :func:`wait_to_draw` to import matplotlib now (a
    second call does nothing); False if there is none."""
    waiting = forked.peek_waiting()
    if waiting is None:
        return False
    waiting.go()
    return True


def draw_sent(payload: tuple[SpanModel, dict | None], temp: Path) -> None:
    """In the copy, sent the release: its picture, the outlines taken from
    the command once it has drawn the rest (:mod:`.sentrelease`)."""
    # lazy: in the drawing copy only
    from .sentrelease import awaiting_outlines

    model, picture = payload
    draw_spans_png(awaiting_outlines(model), temp, **(picture or {}))


#: The order in which the written files are named.
KINDS = ("json", "geojson", "png")


def report(written: list[str], failed: list[str]) -> int:
    """Say what was written (standard output) and what failed (standard
    error); the exit status."""
    print("wrote " + ", ".join(written))
    for f in failed:
        print(
            f"dpdbscan fit: error: could not write {f}; the release itself was written to {written[0]}",
            file=sys.stderr,
        )
    return EXIT_PARTIAL if failed else EXIT_OK
