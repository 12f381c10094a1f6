"""The command ends its process without the interpreter's teardown
(dpdbscan.cli.common.end_process), but only once everything the normal exit
would do is done: exit handlers run, output flushed, the status kept; and not
at all while another thread still works."""

import subprocess
import sys

import pytest

from dpdbscan.cli.common import end_process

SCRIPT = """
import atexit, sys, threading, time
from dpdbscan.cli.common import end_process
atexit.register(lambda: print("handler ran", flush=False))
print("buffered", end=" ")  # not flushed yet: end_process must write it
sys.stderr.write("note ")
if "profiled" in sys.argv:
    sys.setprofile(lambda *a: None)
if "thread" in sys.argv:
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread done"))).start()
code = end_process(int(sys.argv[1]))
print("returned", code)
sys.exit(code)
"""


def run(*args):
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *map(str, args)], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("code", [0, 1, 2])
def test_the_process_ends_at_once_with_its_output_and_handlers(code):
    r = run(code)
    assert r.returncode == code
    # the handler ran once (a normal exit afterwards would run it again) and
    # the code after end_process never ran
    assert r.stdout == "buffered handler ran\n"
    assert r.stderr == "note "


def test_with_another_thread_working_the_normal_exit_waits_for_it():
    r = run(3, "thread")
    assert r.returncode == 3
    assert r.stdout.split("\n")[:1] == ["buffered returned 3"]
    assert "thread done" in r.stdout and r.stdout.count("handler ran") == 1


def test_a_failed_flush_is_left_to_the_normal_exit(monkeypatch):
    # a reader closed the pipe: Python's own exit reports it, as it always has
    # (here, in the test process, that means end_process returns at all)
    class Closed:
        def write(self, text):
            return len(text)

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert end_process(4) == 4


def test_in_a_thread_it_returns():
    import threading

    got = []
    t = threading.Thread(target=lambda: got.append(end_process(5)))
    t.start()
    t.join()
    assert got == [5]


def test_under_a_profiler_the_normal_exit_writes_its_results():
    # python -m cProfile, coverage: they write what they measured in the normal exit
    r = run(6, "profiled")
    assert r.returncode == 6
    assert r.stdout == "buffered returned 6\nhandler ran\n"
