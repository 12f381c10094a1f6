"""The picture drawn by a forked copy of the command (dpdbscan.cli.forked):
its file, its errors and its death all come home, and no temporary file is
left behind."""

import os
import signal
import threading

import pytest

from dpdbscan.cli import forked
from dpdbscan.model import load_model

from clirun import blob_points, run, write_csv

needs_fork = pytest.mark.skipif(not forked.can_fork(), reason="no fork here (one core, not Linux)")


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
