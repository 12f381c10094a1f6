"""The picture drawn by a forked copy of the command (dpdbscan.cli.forked):
its file, its errors and its death all come home, and no temporary file is
left behind."""

import os
import signal
import threading
import time

import numpy as np
import pytest

from dpdbscan.cli import forked
from dpdbscan.model import load_model

from clirun import blob_points, run, write_csv

needs_fork = pytest.mark.skipif(not forked.fork_helps(), reason="no fork here (one core, not Linux)")


@pytest.fixture(autouse=True)
def idle_threads_allowed(request, monkeypatch):
    """Other tests leave idle daemon threads behind in this process (Dask's,
    tqdm's), and can_fork refuses to fork beside any thread: here the
    copies are forked all the same, except where the refusal is tested."""
    if "thread" not in request.node.name:
        monkeypatch.setattr(forked, "can_fork", forked.fork_helps)


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


@needs_fork
def test_the_copy_writes_the_file_in_another_process(tmp_path):
    job = forked.start(tmp_path / "a.png", lambda t: t.write_text(str(os.getpid())))
    assert job is not None
    temp = job.result()
    assert temp.parent == tmp_path and temp.name.startswith(".a.tmp-")
    assert int(temp.read_text()) not in (os.getpid(), 0)


@needs_fork
def test_an_error_in_the_copy_is_raised_at_home_and_its_file_removed(tmp_path):
    def broken(t):
        t.write_text("half")
        raise OSError(28, "No space left on device")

    job = forked.start(tmp_path / "a.png", broken)
    with pytest.raises(OSError, match="No space left"):
        job.result()
    assert leftovers(tmp_path) == []


@needs_fork
def test_an_error_that_does_not_pickle_still_says_what_it_was(tmp_path):
    class Local(Exception):
        pass

    def broken(t):
        raise Local("fonts missing")

    with pytest.raises(RuntimeError, match="Local: fonts missing"):
        forked.start(tmp_path / "a.png", broken).result()


@needs_fork
def test_a_copy_that_dies_is_reported_and_leaves_no_file(tmp_path):
    def killed(t):
        t.write_text("half")
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(RuntimeError, match="killed by signal 9"):
        forked.start(tmp_path / "a.png", killed).result()
    assert leftovers(tmp_path) == []


@needs_fork
def test_cancel_stops_the_copy_and_removes_its_file(tmp_path):
    def slow(t):
        t.write_text("half")
        signal.pause()

    job = forked.start(tmp_path / "a.png", slow)
    job.cancel()
    assert leftovers(tmp_path) == []
    with pytest.raises(ChildProcessError):
        os.waitpid(job.pid, os.WNOHANG)  # reaped


def test_no_fork_while_another_thread_runs(tmp_path):
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not forked.can_fork()
        assert forked.start(tmp_path / "a.png", lambda t: t.write_text("x")) is None
    finally:
        stop.set()
        other.join()


@needs_fork
def test_fit_draws_the_picture_in_a_copy_and_reports_its_failure(capsys, tmp_path, monkeypatch):
    from dpdbscan.cli import outputs

    def broken(model, path):
        raise RuntimeError(f"no fonts in process {os.getpid()}")

    monkeypatch.setattr(outputs, "draw_spans_png", broken)
    csv = write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))
    out = tmp_path / "o"
    args = ("--header", "--eps", "0.5", "--min-samples", "20", "--bounds", "0", "10", "--seed", "0")
    rc, _, err = run(capsys, "fit", csv, *args, "--out-dir", out)
    assert rc == 1 and "could not write" in err and "no fonts in process" in err
    assert f"no fonts in process {os.getpid()})" not in err  # drawn by the copy
    assert load_model(out / "blobs.spans.json").n_spans == 2
    assert sorted(p.name for p in out.iterdir()) == ["blobs.spans.geojson", "blobs.spans.json"]


@needs_fork
def test_a_waiting_copy_prepares_when_told_and_works_when_sent(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    waiting = forked.wait_for_work(lambda: (marks / "prepared").touch(), lambda p, t: t.write_text(p))
    assert forked.peek_waiting() is waiting and not (marks / "prepared").exists()
    assert forked.take_waiting() is waiting and forked.peek_waiting() is None
    waiting.go()
    temp = waiting.send("the job", tmp_path / "a.png").result()
    assert temp.read_text() == "the job" and (marks / "prepared").exists()


@needs_fork
def test_a_waiting_copy_prepares_without_the_collector_and_works_with_it(tmp_path):
    # its steps are imports: no cyclic collection meanwhile, and what they
    # made frozen once they are done; the job runs with the collector on
    import gc

    def step(name):
        return lambda: (tmp_path / name).write_text(f"{gc.isenabled()}")

    def work(job, temp):
        temp.write_text(f"{gc.isenabled()} {gc.get_freeze_count() > 0} {job}")

    waiting = forked.wait_for_work(step("prepared"), work, early=step("early"))
    forked.take_waiting()
    temp = waiting.send("done", tmp_path / "a.png").result()
    assert (tmp_path / "early").read_text() == "False"
    assert (tmp_path / "prepared").read_text() == "False"
    assert temp.read_text() == "True True done"
    assert gc.isenabled()  # the command's own collector is left as it was


def test_the_collector_is_paused_inside_and_on_again_after_with_its_objects_frozen():
    import gc

    assert gc.isenabled()
    try:
        with forked.collector_paused():
            assert not gc.isenabled()
            made = [[i] for i in range(1000)]
        assert gc.isenabled()
        frozen = gc.get_freeze_count()
        assert frozen >= len(made)
        with pytest.raises(RuntimeError), forked.collector_paused():
            raise RuntimeError("a failed import")
        assert gc.isenabled()  # on again after an error too
    finally:
        gc.unfreeze()
        gc.enable()


@needs_fork
def test_the_job_is_sent_while_the_copy_still_prepares_and_arrives_whole(tmp_path):
    # the copy prepares until the test lets it go, which the test does only
    # once send has returned: a send that waited for the copy to read its
    # 40 MB would never return (the copy gives up after 60 s and says so)
    go = tmp_path / "go"
    let_go = []  # in the copy: whether the test let it go (rather than it giving up)

    def prepare():
        for _ in range(6000):
            if go.exists():
                let_go.append(True)
                return
            time.sleep(0.01)

    def work(job, temp):
        arrays, text = job
        temp.write_text(f"{bool(let_go)} {text} " + " ".join(str(int(a.sum())) for a in arrays))

    arrays = [np.arange(5_000_000, dtype=np.int64), np.ones((3, 7)), np.arange(10)[::2]]
    waiting = forked.wait_for_work(prepare, work)
    forked.take_waiting()
    job = waiting.send((arrays, "job"), tmp_path / "a.png")
    go.touch()
    said = job.result().read_text().split()
    assert said == ["True", "job", *(str(int(a.sum())) for a in arrays)]


def test_a_job_packs_its_arrays_out_of_band_and_unpacks_the_same():
    import io

    job = ({"h": np.arange(1000).reshape(10, 100), "f": np.linspace(0, 1, 7)}, "x", [1, 2])
    parts, shared = forked._packed(job)
    assert int.from_bytes(parts[0], "little") == 2  # both arrays out of band
    assert shared == []  # in the pipe
    got = forked._unpacked(io.BufferedReader(io.BytesIO(b"".join(bytes(p) for p in parts))))
    assert got[1:] == job[1:]
    for k in job[0]:
        np.testing.assert_array_equal(got[0][k], job[0][k])
    with pytest.raises(EOFError):
        forked._unpacked(io.BufferedReader(io.BytesIO(b"".join(bytes(p) for p in parts)[:-8])))


@pytest.mark.skipif(forked.shared_file() is None, reason="no shared memory files here")
def test_large_arrays_go_through_the_shared_file_and_come_back_the_same():
    import io

    big = np.arange(300_000, dtype=np.int64).reshape(1000, 300)  # 2.4 MB
    other = np.linspace(0, 1, 200_000)  # 1.6 MB, after the first on a page of its own
    job = ({"big": big, "small": np.ones(7), "other": other}, "x")
    parts, arrays = forked._packed(job, share=True)
    assert [(offset, v.nbytes) for offset, v in arrays] == [(0, big.nbytes), (2_400_256, other.nbytes)]
    fd = forked.shared_file()
    assert fd is not None
    try:
        forked._write_shared(fd, arrays)
        pipe = io.BufferedReader(io.BytesIO(b"".join(bytes(p) for p in parts)))
        got = forked._unpacked(pipe, fd)
    finally:
        os.close(fd)
    assert got[1] == "x"
    for k, a in job[0].items():
        np.testing.assert_array_equal(got[0][k], a)
    got[0]["big"][0, 0] = -1  # the copy's own (copy on write), as when read from the pipe
    assert big[0, 0] == 0
    with pytest.raises(EOFError):  # a copy without the file cannot take the job
        forked._unpacked(io.BufferedReader(io.BytesIO(b"".join(bytes(p) for p in parts))))


def test_arrays_go_through_the_pipe_when_the_shared_file_cannot_hold_them(monkeypatch):
    """A shared file that cannot grow (a full /dev/shm) costs nothing: the
    sending thread puts those arrays in the pipe, inline, and the copy reads
    the same job."""

    def full(fd, arrays):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(forked, "_write_shared", full)
    job = ({"big": np.arange(200_000), "small": np.ones(3), "other": np.linspace(0, 1, 300_000)}, "y")
    parts, arrays = forked._packed(job, share=True)
    assert len(arrays) == 2
    r, w = os.pipe()
    got: list = []

    def read():
        with os.fdopen(r, "rb") as f:
            got.append(forked._unpacked(f))

    reader = threading.Thread(target=read)
    reader.start()  # no shared file on this side: every array must come inline
    forked._send_parts(w, parts, -1, arrays)
    reader.join()
    assert got[0][1] == "y"
    for k, a in job[0].items():
        np.testing.assert_array_equal(got[0][0][k], a)


@pytest.mark.parametrize("iov_max", [1, 2, 1024])
@pytest.mark.parametrize("at_most", [3, 7, 1 << 20])
def test_the_pieces_are_written_whole_and_in_order(tmp_path, monkeypatch, iov_max, at_most):
    """One gathering write sends the pieces; a write that takes only part of
    them (a signal) or only so many pieces a call goes on where it stopped."""
    calls = []
    real = os.writev

    def partial(fd, views):
        calls.append(len(views))
        assert len(views) <= iov_max
        took, left = [], at_most
        for v in views:
            took.append(v[:left])
            left -= len(took[-1])
            if not left:
                break
        return real(fd, took)

    monkeypatch.setattr(forked.os, "writev", partial)
    monkeypatch.setattr(forked, "_IOV_MAX", iov_max)
    pieces = [b"ab", b"", memoryview(np.arange(5, dtype=np.int64)), b"c", bytes(range(40))]
    with open(tmp_path / "out", "wb") as f:
        forked._writev_all(f.fileno(), [memoryview(p).cast("B") for p in pieces])
    assert (tmp_path / "out").read_bytes() == b"".join(bytes(p) for p in pieces)
    if at_most > 100 and iov_max == 1024:
        assert calls == [4]  # all at once (the empty piece left out)


@needs_fork
def test_a_waiting_copy_is_cancelled_and_reaped(tmp_path):
    waiting = forked.wait_for_work(lambda: None, lambda p, t: t.write_text(p))
    forked.cancel_waiting()
    assert forked.peek_waiting() is None
    with pytest.raises(ChildProcessError):
        os.waitpid(waiting.pid, os.WNOHANG)
    # a second one replaces the first
    first = forked.wait_for_work(lambda: None, lambda p, t: None)
    second = forked.wait_for_work(lambda: None, lambda p, t: None)
    assert forked.peek_waiting() is second
    with pytest.raises(ChildProcessError):
        os.waitpid(first.pid, os.WNOHANG)
    forked.cancel_waiting()


FIT_IN_A_FRESH_PROCESS = """
import os, sys
from dpdbscan.cli import main, outputs
if os.environ.get("BREAK_THE_RELEASE"):
    def broken(model, path, include_histogram=True):
        raise OSError(28, "No space left on device")
    outputs.save_model = broken
rc = main(sys.argv[1:])
try:
    left = os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    left = None
print(rc, "matplotlib" in sys.modules, left)
"""


@needs_fork
@pytest.mark.parametrize("png", [True, False])
def test_fit_draws_in_the_copy_it_forked_before_reading_and_leaves_none(tmp_path, png):
    """The command itself never imports matplotlib: the copy forked before
    the read imports it and draws; no process is left behind either way."""
    import subprocess
    import sys

    csv = write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))
    args = ["fit", str(csv), "--header", "--eps", "0.5", "--min-samples", "20", "--bounds", "0", "10"]
    args += ["--seed", "0", "--out-dir", str(tmp_path / "o"), *([] if png else ["--no-png"])]
    res = subprocess.run(
        [sys.executable, "-c", FIT_IN_A_FRESH_PROCESS, *args], capture_output=True, text=True, check=True
    )
    assert res.stdout.split("\n")[-2] == "0 False None"
    assert (tmp_path / "o" / "blobs.spans.png").exists() == png
    assert leftovers(tmp_path / "o") == []


@needs_fork
def test_a_failed_release_leaves_no_picture_and_no_copy_behind(tmp_path):
    import subprocess
    import sys

    csv = write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))
    args = ["fit", str(csv), "--header", "--eps", "0.5", "--min-samples", "20", "--bounds", "0", "10"]
    args += ["--seed", "0", "--out-dir", str(tmp_path / "o")]
    res = subprocess.run(
        [sys.executable, "-c", FIT_IN_A_FRESH_PROCESS, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "BREAK_THE_RELEASE": "1"},
    )
    assert res.stdout.split("\n")[-2] == "2 False None" and "No space left" in res.stderr
    assert list((tmp_path / "o").iterdir()) == []


@needs_fork
@pytest.mark.parametrize("bounds", [("0", "0", "10", "10"), ("0", "10")])
def test_fit_lets_the_copy_import_before_the_read(capsys, tmp_path, monkeypatch, bounds):
    """The picture is asked for on the command line (public): when the
    bounds say the points are 2-D, the copy is told to import matplotlib
    before the first row is read, so that the import runs beside the read
    (else after it, when the points may not be 2-D); it gets the release
    only after the fit either way."""
    from dpdbscan.cli import fit

    seen = []
    real_prepare = fit.prepare

    def prepare(*a, **k):
        waiting = forked.peek_waiting()
        assert waiting is not None and not waiting.closed
        seen.append(waiting.started)
        return real_prepare(*a, **k)

    monkeypatch.setattr(fit, "prepare", prepare)
    csv = write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))
    args = ("--header", "--eps", "0.5", "--min-samples", "20", "--bounds", *bounds, "--seed", "0")
    rc, _, _ = run(capsys, "fit", csv, *args, "--out-dir", tmp_path / "o")
    assert rc == 0 and seen == [len(bounds) == 4]
    assert (tmp_path / "o" / "blobs.spans.png").exists() and leftovers(tmp_path / "o") == []


@needs_fork
@pytest.mark.parametrize("d", [2, 3])
def test_fit_stops_the_copy_once_the_box_says_the_points_are_not_2d(capsys, tmp_path, monkeypatch, d):
    """A picture is drawn of 2-D points only: with bounds that do not say
    the points' dimension, the copy waits through the read; then a 3-D
    box stops it before the fit (it would import the rest of matplotlib
    beside the fit for nothing), a 2-D one tells it to go on."""
    from dpdbscan.cli import fit

    seen = []
    real_fit = fit.fit_release

    def fit_release(*a, **k):
        waiting = forked.peek_waiting()
        seen.append(None if waiting is None else (waiting.started, waiting.closed))
        return real_fit(*a, **k)

    monkeypatch.setattr(fit, "fit_release", fit_release)
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(2.0, 0.3, (1500, d)), rng.normal(7.0, 0.4, (1500, d))])
    csv = tmp_path / "blobs.csv"
    csv.write_text("\n".join([",".join("xyz"[:d]), *(",".join(map(repr, r)) for r in X.tolist())]) + "\n")
    args = ("--header", "--eps", "0.5", "--min-samples", "20", "--bounds", "0", "10", "--seed", "0")
    rc, _, _ = run(capsys, "fit", csv, *args, "--out-dir", tmp_path / "o")
    assert rc == 0 and forked.peek_waiting() is None
    assert seen == ([(True, False)] if d == 2 else [None])
    assert (tmp_path / "o" / "blobs.spans.png").exists() == (d == 2) and leftovers(tmp_path / "o") == []


@needs_fork
def test_a_read_that_fails_leaves_no_copy_behind(tmp_path):
    """The copy is importing when the read fails: the command ends with
    the read's error and reaps it; nothing is written."""
    import gzip
    import subprocess
    import sys

    whole = gzip.compress(b"x,y\n" + b"1.0,2.0\n" * 5000)
    damaged = tmp_path / "damaged.csv.gz"
    # not gzip past its magic bytes (a gzip file merely cut part-way keeps its rows before the cut)
    damaged.write_bytes(whole[:2] + b"\x00" * (len(whole) - 2))
    args = ["fit", str(damaged), *"--header --eps 0.5 --min-samples 20 --bounds 0 0 10 10".split()]
    args += ["--seed", "0", "--out-dir", str(tmp_path / "o")]
    res = subprocess.run(
        [sys.executable, "-c", FIT_IN_A_FRESH_PROCESS, *args], capture_output=True, text=True
    )
    assert res.stdout.split("\n")[-2] == "2 False None", res.stderr
    assert "cannot read" in res.stderr
    assert not (tmp_path / "o").exists() or list((tmp_path / "o").iterdir()) == []


@pytest.mark.skipif(forked.shared_file() is None, reason="no shared memory files here")
def test_staged_arrays_go_as_their_offsets_and_the_others_after_them():
    """Arrays staged beforehand (Waiting.stage) are named by their offset
    in the job and not written again; the job's other large arrays follow
    them in the shared file; the copy reads the same job."""
    import io

    staged_array = np.arange(400_000, dtype=np.int64)  # 3.2 MB, staged
    other = np.linspace(0, 1, 200_000)  # 1.6 MB, not staged
    fd = forked.shared_file()
    assert fd is not None
    try:
        staged = [(0, memoryview(staged_array))]
        forked._write_shared(fd, staged)
        job = ({"h": staged_array, "o": other, "s": np.ones(3)}, "z")
        parts, arrays = forked._packed(job, share=True, staged=staged)
        assert [(offset, v.nbytes) for offset, v in arrays] == [(3_203_072, other.nbytes)]
        forked._write_shared(fd, arrays)
        got = forked._unpacked(io.BufferedReader(io.BytesIO(b"".join(bytes(p) for p in parts))), fd)
    finally:
        os.close(fd)
    assert got[1] == "z"
    for k, a in job[0].items():
        np.testing.assert_array_equal(got[0][k], a)
    # a part of a staged array, or another array of the same size, is not the staged one
    copy = staged_array.copy()
    _, arrays = forked._packed((copy,), share=True, staged=staged)
    assert [(offset, v.nbytes) for offset, v in arrays] == [(3_203_072, copy.nbytes)]


@needs_fork
@pytest.mark.parametrize("room", [True, False])
def test_a_staged_job_arrives_whole_with_or_without_room(tmp_path, monkeypatch, room):
    """The copy draws from the arrays staged before the job was sent; when
    the shared file has no room for them (a full /dev/shm) they go through
    the pipe instead."""
    if not room:

        def full(fd, arrays):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(forked, "_write_shared", full)

    def work(job, temp):
        (big, small), more = job
        temp.write_text(f"{int(big.sum())} {int(small.sum())} {int(more.sum())}")

    big, small, more = np.arange(1_000_000, dtype=np.int64), np.ones(5), np.arange(300_000, dtype=np.int64)
    waiting = forked.wait_for_work(lambda: None, work)
    if waiting is None:
        pytest.skip("no fork here")
    forked.take_waiting()
    waiting.stage((big, small))
    if waiting.shared is not None:
        assert [v.nbytes for _, v in waiting.staged] == [big.nbytes]  # the small one goes with the job
    job = waiting.send(((big, small), more), tmp_path / "a.png")
    assert job.result().read_text().split() == [str(int(big.sum())), "5", str(int(more.sum()))]


@needs_fork
def test_fit_sends_the_release_before_its_outlines_and_writes_the_json_last(capsys, tmp_path, monkeypatch):
    """The order the picture's path relies on (cli/outputs.py): write_outputs
    stages the release's arrays (Waiting.stage) before the spans' figures
    and outlines are computed, sends the release to the waiting copy
    before the outlines, then the outlines (Forked.follow); with the copy
    drawing, the JSON is written after the GeoJSON, not beside it."""
    from dpdbscan.cli import outputs

    seen = []

    def spy(name, real, what=None):
        def call(*args, **kwargs):
            seen.append(name if what is None else (name, what(*args)))
            return real(*args, **kwargs)

        return call

    bare = lambda model: ("_outlines" in vars(model), "stats" in vars(model))  # noqa: E731
    monkeypatch.setattr(forked.Waiting, "stage", spy("stage", forked.Waiting.stage, lambda w, m: bare(m)))
    monkeypatch.setattr(
        forked.Waiting, "send", spy("send", forked.Waiting.send, lambda w, job, p: bare(job[0]))
    )
    monkeypatch.setattr(
        forked.Forked, "follow", spy("follow", forked.Forked.follow, lambda f, o: type(o).__name__)
    )
    monkeypatch.setattr(outputs, "save_geojson", spy("geojson", outputs.save_geojson))
    monkeypatch.setattr(outputs, "save_model", spy("json", outputs.save_model))
    csv = write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))
    args = ("--header", "--eps", "0.5", "--min-samples", "20", "--bounds", "0", "10", "--seed", "0")
    rc, _, err = run(capsys, "fit", csv, *args, "--out-dir", tmp_path / "o")
    assert rc == 0, err
    assert seen == [
        ("stage", (False, False)),
        ("send", (False, True)),  # with its figures, which the stage leaves time for
        ("follow", "Outlines"),
        "geojson",
        "json",
    ]
    assert (tmp_path / "o" / "blobs.spans.png").exists()
    # with no picture, the JSON is written beside the GeoJSON (on its own
    # thread, as before), so the two may finish in either order
    seen.clear()
    rc, _, _ = run(capsys, "fit", csv, *args, "--no-png", "--out-dir", tmp_path / "p")
    assert rc == 0 and sorted(seen) == ["geojson", "json"]


@needs_fork
def test_a_part_that_follows_the_job_reaches_the_work_where_it_asks(tmp_path):
    def work(job, temp):
        temp.write_text(f"{job} then {forked.next_part()}")

    waiting = forked.wait_for_work(lambda: None, work)
    forked.take_waiting()
    job = waiting.send("first", tmp_path / "a.png", more=True)
    job.follow({"second": 2})
    job.follow("ignored")  # one part only
    assert job.result().read_text() == "first then {'second': 2}"


@needs_fork
@pytest.mark.parametrize("how", ["result", "cancel", "unpicklable"])
def test_a_part_that_does_not_follow_ends_the_copys_wait(tmp_path, how):
    """A job sent with more to follow, and nothing follows (the command
    failed before, or cannot pickle the part): the copy is not left
    waiting for it, and says so or is stopped."""

    def work(job, temp):
        temp.write_text(f"{job} then {forked.next_part()}")

    waiting = forked.wait_for_work(lambda: None, work)
    forked.take_waiting()
    job = waiting.send("first", tmp_path / "a.png", more=True)
    if how == "cancel":
        job.cancel()
        assert leftovers(tmp_path) == []
        return
    if how == "unpicklable":
        job.follow(lambda: None)
        with pytest.raises(RuntimeError, match="PicklingError|AttributeError"):
            job.result()
        return
    with pytest.raises(EOFError):
        job.result()
    assert leftovers(tmp_path) == []


@needs_fork
def test_a_part_that_follows_waits_for_the_job_while_the_copy_still_prepares(tmp_path):
    """The job (larger than the pipe holds) and the part that follows are
    both handed over while the copy is still preparing: the part is
    written only after the whole job, and the command does not wait."""
    go = tmp_path / "go"

    def prepare():
        for _ in range(6000):
            if go.exists():
                return
            time.sleep(0.01)

    def work(job, temp):
        temp.write_text(f"{int(job.sum())} {forked.next_part()}")

    big = np.arange(60_000, dtype=np.int64)  # 480 kB: in the pipe, past its 64 kB
    waiting = forked.wait_for_work(prepare, work)
    forked.take_waiting()
    started = time.monotonic()
    job = waiting.send(big, tmp_path / "a.png", more=True)
    job.follow("then this")
    assert time.monotonic() - started < 5  # neither call waited for the copy
    go.touch()
    assert job.result().read_text() == f"{int(big.sum())} then this"
