"""What the command loads before it reads a file: nothing that only draws
(the picture is drawn by a forked copy that imports its modules itself)."""

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
