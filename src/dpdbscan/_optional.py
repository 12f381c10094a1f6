"""One helper for optional dependencies, with one message naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

#: The extra of ``pyproject.toml`` that installs each optional module.
EXTRAS = {
    "pyarrow": "io",
    "matplotlib": "plot",
    "dask": "dask",
    "distributed": "dask",
    "pandas": "dask",
}


def require(module: str, purpose: str, *, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise ImportError saying which extra installs it.

    ``purpose`` completes the sentence "<purpose> needs <package>", for
    example ``require("pyarrow", "reading Parquet")``. ``package`` names the
    optional dependency when ``module`` is one of ours that imports it (for
    ``dpdbscan.release.backends.dask_backend`` it is "dask").
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = package or module.split(".")[0]
        extra = EXTRAS.get(top, "all")
        raise ImportError(
            f"{purpose} needs {top}, which is not installed: pip install 'dpdbscan[{extra}]'"
        ) from exc


__all__ = ["require", "EXTRAS"]
