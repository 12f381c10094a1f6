"""What the command loads before it reads a file: nothing that only draws
(the picture is drawn by a forked copy that imports its modules itself)."""

import os
import subprocess
import sys

DRAWING = (
    "matplotlib",
    "dpdbscan.render.plotting",
    "dpdbscan.render.spanplot",
    "dpdbscan.render.webmap",
    "dpdbscan.render.explorepanels",
    "dpdbscan.render.periodplot",
)


def test_the_command_line_loads_no_drawing_module():
    code = f"import sys, dpdbscan.cli; print([m for m in {DRAWING!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_fit_path_loads_no_scipy_until_a_step_needs_it():
    # scipy.ndimage alone cost every command 0.2 s when release two's module
    # imported it at the top (the Cabs fit went from 1.5x to 2.6x pyarrow's read)
    code = (
        "import sys, dpdbscan.cli, dpdbscan.pipeline, dpdbscan.model, dpdbscan.model.codec; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


#: What importing the library's drawing module may not load: the readers of
#: every file format (sqlite3, xml) and the traces package, which a picture
#: of a release never needs, and matplotlib, whose figure and Agg modules
#: the drawing copy imports only after the read (cli/early.py).
NOT_FOR_DRAWING = ("dpdbscan.files", "dpdbscan.traces", "matplotlib", "scipy")


def test_the_drawing_module_loads_no_reader_and_no_matplotlib():
    # fit's drawing copy imports it beside the command's own imports, which
    # it must not outlast (before, model.describe loaded every reader: 0.07 s)
    code = (
        "import sys, dpdbscan.render.plotting; "
        f"print(sorted(m for m in sys.modules if m.startswith({NOT_FOR_DRAWING!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_drawing_copy_imports_the_drawing_module_at_once_and_no_figure_module():
    # the copy's first step (before the read) takes the library's drawing
    # module with matplotlib itself; the figure, Agg and pyplot modules wait
    # for the go after the read (cli/early.py)
    code = (
        "import sys; from dpdbscan.cli import early; early._import_matplotlib(); "
        "print('dpdbscan.render.plotting' in sys.modules, 'matplotlib' in sys.modules, "
        "sorted(m for m in ('matplotlib.figure', 'matplotlib.pyplot', 'matplotlib.backends.backend_agg') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True True []"


def test_the_drawing_copy_takes_the_sent_release_module_for_nothing_more():
    # the copy imports cli.sentrelease when the release comes, on the
    # picture's path: every module it needs is loaded by then (the drawing
    # module and the command line's forked copies); the command never loads it
    code = "import sys, dpdbscan.cli.command; print('dpdbscan.cli.sentrelease' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    code = (
        "import sys, dpdbscan.cli, dpdbscan.render.plotting; before = set(sys.modules); "
        "import dpdbscan.cli.sentrelease; print(sorted(set(sys.modules) - before))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['dpdbscan.cli.sentrelease']"


def test_a_fit_whose_quantiles_are_stored_loads_no_scipy_in_the_command_or_its_drawing_copy(tmp_path):
    # the law cache named scipy's version by importing scipy: the Cabs fit
    # paid for it in its release and again in its drawing copy's title
    # (min_samples_brief asks for the margins), both on the command's chain
    from clirun import blob_points, write_csv

    data = write_csv(tmp_path / "points.csv", blob_points())
    marks = tmp_path / "marks"
    marks.mkdir()
    code = (
        "import os, sys\n"
        "def hook(event, args):\n"
        "    if event == 'import' and args[0] == 'scipy':\n"
        f"        open(os.path.join({str(marks)!r}, str(os.getpid())), 'w').close()\n"
        "sys.addaudithook(hook)\n"
        "sys.argv = ['dpdbscan', *sys.argv[1:]]\n"
        "from dpdbscan.cli import main\n"
        "raise SystemExit(main())\n"
    )
    env = {**os.environ, "DPDBSCAN_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("DPDBSCAN_NO_CACHE", None)
    argv = [str(data), "--header", "--bounds", "0", "0", "10", "10", "--eps", "0.5", "--min-samples", "20"]
    for run in ("first", "second"):
        out = tmp_path / run
        res = subprocess.run(
            [sys.executable, "-c", code, "fit", *argv, "--out-dir", str(out), "--quiet", "--no-progress"],
            capture_output=True,
            text=True,
            env=env,
        )
        assert res.returncode == 0, res.stderr
        assert sorted(p.name for p in out.iterdir()) == [
            "points.spans.geojson",
            "points.spans.json",
            "points.spans.png",
        ]
        if run == "first":
            assert list((tmp_path / "cache").rglob("*.json"))  # the quantiles computed, and stored
            for mark in marks.iterdir():
                mark.unlink()
    # the second fit read every quantile from the cache: neither process imported scipy
    assert sorted(marks.iterdir()) == []
