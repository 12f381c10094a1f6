"""The drawing copy ``dpdbscan fit`` forks first thing (dpdbscan.cli.early):
forked before the command's own imports, only for ``fit`` with a picture,
the same picture as the copy forked later, and never left behind."""

import os
import subprocess
import sys
import time

import pytest

from dpdbscan.cli import early, forked

from clirun import blob_points, run, write_csv

needs_fork = pytest.mark.skipif(not forked.fork_helps(), reason="no fork here (one core, not Linux)")


@pytest.fixture(autouse=True)
def forks_beside_idle_threads(monkeypatch):
    """As in test_forked: other tests leave idle daemon threads in this process."""
    monkeypatch.setattr(forked, "can_fork", forked.fork_helps)


@pytest.mark.parametrize(
    ("words", "draws"),
    [
        ("fit data.csv --bounds 0 10 --eps 1 --min-samples 5", True),
        ("-q --no-progress fit data.csv --png p.png", True),
        ("--quiet fit data.csv --no-geojson", True),
        ("fit data.csv --no-png", False),
        ("fit data.csv --no-pn", False),  # argparse takes the abbreviation
        ("fit --help", False),
        ("-h fit", False),
        ("fit --version", False),
        ("sweep data.csv --eps 1 --min-samples 5 10", False),
        ("plot model.json", False),
        ("data.csv fit", False),
        ("", False),
    ],
)
def test_only_fit_with_a_picture_forks_early(words, draws):
    assert early.draws_picture(words.split()) is draws


@needs_fork
def test_a_waiting_copy_runs_its_early_step_at_once_and_prepares_when_told(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    waiting = forked.wait_for_work(
        lambda: (marks / "prepared").touch(),
        lambda p, t: t.write_text(p),
        early=lambda: (marks / "early").touch(),
    )
    assert waiting is not None and waiting.early
    deadline = time.monotonic() + 60
    while not (marks / "early").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (marks / "early").exists() and not (marks / "prepared").exists()
    assert forked.take_waiting() is waiting
    temp = waiting.send("the job", tmp_path / "a.png").result()
    assert temp.read_text() == "the job" and (marks / "prepared").exists()


#: The command itself (``main()`` reads ``sys.argv``), noting what was
#: imported when the copy was forked; it says so once the command is done
#: (the command ends its process, after the exit handlers).
THE_COMMAND = """
import atexit, os, sys
from dpdbscan.cli import forked, main
forks = []
real = forked.wait_for_work
def wait_for_work(*a, **k):
    forks.append(("dpdbscan.cli.command" in sys.modules, "numpy" in sys.modules, "early" in k))
    return real(*a, **k)
forked.wait_for_work = wait_for_work
def say():
    try:
        left = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        left = None
    print("forks", forks, "left", left, "matplotlib", "matplotlib" in sys.modules, flush=True)
atexit.register(say)
sys.argv = ["dpdbscan", *sys.argv[1:]]
main()
"""


def the_command(*words) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", THE_COMMAND, *map(str, words)], capture_output=True, text=True
    )


@needs_fork
def test_the_command_forks_its_copy_before_its_imports_and_draws_the_same_picture(capsys, tmp_path):
    csv = write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))
    args = [
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "0",
        "10",
        "10",
        "--seed",
        "0",
    ]
    res = the_command("fit", csv, *args, "--out-dir", tmp_path / "early")
    assert res.returncode == 0, res.stderr
    # one copy, forked before the command's modules (after numpy); the command never imports matplotlib
    assert res.stdout.splitlines()[-1] == "forks [(False, True, True)] left None matplotlib False"
    # in a test process (main(argv)) the copy is forked by fit, before the read
    rc, out, err = run(capsys, "fit", csv, *args, "--out-dir", tmp_path / "late")
    assert rc == 0
    assert out.replace("late", "early") == "\n".join(res.stdout.splitlines()[:-1]) + "\n"
    for kind in ("json", "geojson", "png"):
        name = f"blobs.spans.{kind}"
        assert (tmp_path / "early" / name).read_bytes() == (tmp_path / "late" / name).read_bytes()
    assert sorted(os.listdir(tmp_path / "early")) == sorted(os.listdir(tmp_path / "late"))


@needs_fork
@pytest.mark.parametrize(
    ("extra", "status", "message"),
    [
        (["--min-smaples", "20"], 2, "did you mean --min-samples"),  # refused before anything is read
        (["--min-samples", "20"], 2, "--bounds is required"),  # refused once parsed
        (["--min-samples", "20", "--bounds", "0", "0", "10", "10", "--no-geojson"], 0, ""),
    ],
)
def test_an_early_copy_the_command_does_not_use_is_not_left_behind(tmp_path, extra, status, message):
    csv = write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))
    res = the_command(
        "fit", csv, "--header", "--eps", "0.5", *extra, "--seed", "0", "--out-dir", tmp_path / "o"
    )
    assert res.returncode == status and message in res.stderr, res.stderr
    assert res.stdout.splitlines()[-1] == "forks [(False, True, True)] left None matplotlib False"
    left = [p.name for p in (tmp_path / "o").iterdir()] if (tmp_path / "o").exists() else []
    assert not [n for n in left if ".tmp-" in n]


@needs_fork
def test_no_early_copy_without_a_picture(tmp_path):
    csv = write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))
    args = ["--header", "--eps", "0.5", "--min-samples", "20", "--bounds", "0", "10", "--seed", "0"]
    res = the_command("fit", csv, *args, "--no-png", "--out-dir", tmp_path / "o")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-1] == "forks [] left None matplotlib False"
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["blobs.spans.geojson", "blobs.spans.json"]


@needs_fork
@pytest.mark.parametrize(("load", "before_the_read"), [(0, False), (50, True)])
def test_the_early_copy_goes_on_after_the_read_only_on_an_idle_machine(
    capsys, tmp_path, monkeypatch, load, before_the_read
):
    """On an idle machine the read keeps every core busy: the early copy's
    other imports wait for the fit, which keeps one busy; on a busy one the
    copy goes on before the read, as the copy fit forks itself does."""
    from dpdbscan.cli import fit, outputs

    seen = []
    real_prepare = fit.prepare

    def prepare(*a, **k):
        waiting = forked.peek_waiting()
        assert waiting is not None and waiting.early and not waiting.closed
        seen.append(waiting.started)
        return real_prepare(*a, **k)

    monkeypatch.setattr(fit, "prepare", prepare)
    monkeypatch.setattr(outputs, "running_elsewhere", lambda: load)
    csv = write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))
    words = [
        "fit",
        str(csv),
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "0",
        "10",
        "10",
    ]
    words += ["--seed", "0", "--out-dir", str(tmp_path / "o")]
    assert early.start(words)
    rc, _, _ = run(capsys, *words)
    assert rc == 0 and seen == [before_the_read] and forked.peek_waiting() is None
    assert (tmp_path / "o" / "blobs.spans.png").exists()


def test_the_threads_running_elsewhere_are_counted_now(tmp_path, monkeypatch):
    """Runnable threads now, less the caller's (a benchmark's back-to-back
    commands keep the 1-minute average of an idle machine high); the
    average where the count cannot be read."""
    from dpdbscan.cli import outputs

    figures = tmp_path / "loadavg"
    figures.write_text("2.61 1.90 1.02 1/251 40211\n")
    monkeypatch.setattr(outputs, "LOADAVG", str(figures))
    assert outputs.running_elsewhere() == 0
    figures.write_text("21.72 21.91 17.51 27/247 40211\n")
    assert outputs.running_elsewhere() == 26
    monkeypatch.setattr(outputs, "LOADAVG", str(tmp_path / "none"))
    monkeypatch.setattr(outputs.os, "getloadavg", lambda: (3.5, 2.0, 1.0))
    assert outputs.running_elsewhere() == 3.5
