"""Reading points from files and writing labels, for the command line.

Formats, told apart by content where possible:

* CSV with a header row, plain or gzip-compressed (detected by its magic
  bytes, whatever the name); ``.tsv``/``.tab`` are tab-separated.
* Parquet (``.parquet``, ``.pq`` or the ``PAR1`` magic).
* NumPy ``.npy`` holding a 2-D (or 1-D) numeric array; its columns are
  named ``"0"``, ``"1"``, ...

Span models are read with :func:`read_model`.

CSV and Parquet are read with pyarrow (``pip install 'dpdbscan[io]'``), in
batches so that a progress bar can follow the bytes consumed; the 11-million
row Cabs file reads in about two seconds. Without pyarrow, plain CSV falls back
to ``numpy.loadtxt``, which is slower but needs nothing extra.

Column selection: by default every column except one named ``label`` (the
benchmark files carry ground truth there), and all of them must be numeric;
otherwise names or 0-based indices. The column names are the file's schema, which is treated as public.
"""

from __future__ import annotations

import csv
import gzip
import io as _io
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .geo import projection_of
from .model import SpanModel
from .progress import progress as progress_bar

#: Column excluded from the default selection (ground truth in benchmark files).
LABEL_COLUMN = "label"
_BATCH = 1 << 24  # bytes per CSV block: big enough to be fast, small enough to report
_NULLS = ["", "NA", "N/A", "NaN", "nan", "NULL", "null", "None"]


ColumnChooser = Callable[[Sequence[str], Sequence[bool]], "list[str] | None"]


def _need_pyarrow(what: str):
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"reading {what} needs pyarrow: pip install 'dpdbscan[io]'") from exc


def file_kind(path) -> str:
    """"npy", "parquet", "csv" or "csv.gz" from the first bytes and the name."""
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"\x1f\x8b"):
        return "csv.gz"
    suffix = path.suffix.lower()
    if suffix in (".npy", ".parquet", ".pq"):
        # The name promises a binary format that the bytes do not hold.
        raise ValueError(f"{path}: not a valid {suffix[1:]} file")
    return "csv"


def _delimiter(path, delimiter: str | None) -> str:
    if delimiter:
        if len(delimiter) != 1:
            raise ValueError(f"delimiter must be one character, got delimiter={delimiter!r}")
        return delimiter
    name = Path(path).name.lower().removesuffix(".gz")
    return "\t" if name.endswith((".tsv", ".tab")) else ","


def resolve_columns(names: Sequence[str], numeric: Sequence[bool], requested=None,
                    choose: ColumnChooser | None = None, *, where: str = "the file") -> list[int]:
    """Indices of the columns to read.

    ``requested`` holds names or 0-based indices (ints or digit strings; a
    name that exists wins over an index). Without it, ``choose(names, numeric)``
    may pick names, else every column except ``label``, which must all be
    numeric.
    """
    names = [str(n) for n in names]
    listing = ", ".join(names) if len(names) <= 12 else ", ".join(names[:12]) + ", ..."
    if requested is None:
        picked = choose(names, numeric) if choose is not None else None
        if picked is None:
            idx = [i for i, n in enumerate(names) if n.lower() != LABEL_COLUMN]
            bad = [names[i] for i in idx if not numeric[i]]
            if bad or not idx:
                # Skipping a non-numeric column would silently cluster in fewer
                # dimensions than the user expects, so ask instead.
                raise ValueError(
                    f"{where}: column(s) {', '.join(bad) or '(none)'} are not numeric "
                    f"(columns: {listing}); choose the coordinate columns with --columns"
                )
            return idx
        requested = picked
    if isinstance(requested, (str, int)):
        requested = [requested]
    out = []
    for tok in requested:
        if isinstance(tok, str) and tok in names:
            i = names.index(tok)
        elif isinstance(tok, (int, np.integer)) or (isinstance(tok, str) and tok.strip().isdigit()):
            i = int(tok)
            if not 0 <= i < len(names):
                raise ValueError(
                    f"column index {i} is out of range: {where} has {len(names)} column(s) ({listing})"
                )
        else:
            raise ValueError(f"no column {tok!r} in {where} (columns: {listing})")
        if i in out:
            raise ValueError(f"column {names[i]!r} is selected twice")
        out.append(i)
    if not out:
        raise ValueError("no columns selected")
    return out


# --------------------------------------------------------------------------- #
# readers


def read_points(path, columns=None, *, choose: ColumnChooser | None = None,
                delimiter: str | None = None, no_header: bool = False,
                progress: bool | None = None) -> tuple[np.ndarray, list[str]]:
    """Read an (n, d) float64 array of points and the names of its columns.

    Parameters
    ----------
    path : str or Path
    columns : sequence of str or int, optional
        Names or 0-based indices; default: every column except ``label``.
    choose : callable, optional
        ``choose(names, numeric) -> names or None`` for the default selection
        (used for lon/lat detection and for a model's own columns).
    delimiter : str, optional
        CSV separator; default ``,`` (tab for ``.tsv``).
    no_header : bool, default False
        The CSV has no header row: columns are named ``"0"``, ``"1"``, ...
    progress : bool, optional
        Draw a progress bar on stderr (default: only on a terminal).

    Returns
    -------
    X : ndarray of shape (n, d)
        Missing values read as NaN (the mechanism drops such rows).
    names : list of str

    Raises
    ------
    FileNotFoundError, ValueError, ImportError
        With a one-line message naming the file.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input file not found: {path}")
    if path.is_dir():
        raise IsADirectoryError(f"input is a directory, not a file: {path}")
    kind = file_kind(path)
    if kind == "npy":
        return _read_npy(path, columns, choose)
    if kind == "parquet":
        _need_pyarrow("Parquet")
        return _read_parquet(path, columns, choose, progress)
    delim = _delimiter(path, delimiter)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return _read_csv_numpy(path, columns, choose, delim, no_header, kind == "csv.gz")
    return _read_csv_arrow(path, columns, choose, delim, no_header, kind == "csv.gz", progress)


def _read_npy(path, columns, choose):
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except ValueError as exc:
        raise ValueError(f"{path}: cannot read as a numeric .npy array: {_clean(exc)}") from None
    if arr.dtype.kind not in "iuf" or arr.dtype.names:
        raise ValueError(f"{path}: .npy array must be numeric, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{path}: .npy array must be 2-D (n_samples, n_features), got shape {arr.shape}")
    names = [str(i) for i in range(arr.shape[1])]
    idx = resolve_columns(names, [True] * len(names), columns, choose, where=str(path))
    return np.asarray(arr[:, idx], dtype=np.float64), [names[i] for i in idx]


def _is_numeric(t) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t)


def _arrow_error(path, exc) -> ValueError:
    return ValueError(f"{path}: cannot read as CSV of numbers: {_clean(exc)}")


def _clean(exc, limit: int = 160) -> str:
    """First line of an error, printable and short (a binary file's bytes
    would otherwise end up on the terminal)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = "".join(c if c.isprintable() and ord(c) < 0xFFFD else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _open_csv_stream(path, gz: bool):
    import pyarrow as pa

    raw = open(path, "rb")
    stream = pa.PythonFile(raw, mode="r")
    if gz:
        stream = pa.CompressedInputStream(stream, "gzip")
    return raw, stream


def _read_csv_arrow(path, columns, choose, delim, no_header, gz, progress):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    read_opts = dict(autogenerate_column_names=no_header)
    parse = pacsv.ParseOptions(delimiter=delim)
    raw, stream = _open_csv_stream(path, gz)
    try:  # peek: header and the types inferred from the first block
        reader = pacsv.open_csv(stream, read_options=pacsv.ReadOptions(block_size=1 << 20, **read_opts),
                                parse_options=parse,
                                convert_options=pacsv.ConvertOptions(null_values=_NULLS))
        schema = reader.schema
    except (pa.ArrowException, OSError, EOFError) as exc:
        raise _arrow_error(path, exc) from None
    finally:
        raw.close()
    names = list(schema.names)
    if no_header:
        names = [str(i) for i in range(len(names))]
    idx = resolve_columns(names, [_is_numeric(f.type) for f in schema], columns, choose, where=str(path))
    arrow_names = [schema.names[i] for i in idx]
    convert = pacsv.ConvertOptions(
        include_columns=arrow_names, column_types={n: pa.float64() for n in arrow_names},
        null_values=_NULLS, strings_can_be_null=True,
    )
    size = os.path.getsize(path)
    parts = []
    raw, stream = _open_csv_stream(path, gz)
    try:
        with progress_bar(f"reading {path.name}", total=size, enabled=progress) as bar:
            reader = pacsv.open_csv(stream, read_options=pacsv.ReadOptions(block_size=_BATCH, **read_opts),
                                    parse_options=parse, convert_options=convert)
            for batch in reader:
                parts.append(_batch_to_numpy(batch, arrow_names))
                bar.update(raw.tell() - bar.n)
    except (pa.ArrowException, OSError, EOFError) as exc:
        raise _arrow_error(path, exc) from None
    finally:
        raw.close()
    X = np.concatenate(parts) if parts else np.zeros((0, len(idx)))
    return X, [names[i] for i in idx]


def _batch_to_numpy(batch, names) -> np.ndarray:
    out = np.empty((batch.num_rows, len(names)), dtype=np.float64)
    for j, n in enumerate(names):
        out[:, j] = batch.column(n).to_numpy(zero_copy_only=False)
    return out


def _read_parquet(path, columns, choose, progress):
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: cannot read as Parquet: {_clean(exc)}") from None
    schema = pf.schema_arrow
    numeric = [_is_numeric(f.type) for f in schema]
    idx = resolve_columns(schema.names, numeric, columns, choose, where=str(path))
    for i in idx:
        if not numeric[i]:
            raise ValueError(f"{path}: column {schema.names[i]!r} is not numeric (type {schema[i].type})")
    names = [schema.names[i] for i in idx]
    parts = []
    try:
        with progress_bar(f"reading {path.name}", total=pf.metadata.num_rows, enabled=progress,
                          unit="rows") as bar:
            for batch in pf.iter_batches(batch_size=1 << 20, columns=names):
                cols = [pc.cast(batch.column(n), pa.float64()).to_numpy(zero_copy_only=False) for n in names]
                parts.append(np.column_stack(cols) if cols else np.zeros((batch.num_rows, 0)))
                bar.update(batch.num_rows)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: cannot read as Parquet: {_clean(exc)}") from None
    X = np.concatenate(parts) if parts else np.zeros((0, len(idx)))
    return X, names


def _read_csv_numpy(path, columns, choose, delim, no_header, gz):
    """Fallback without pyarrow: header and first row decide the columns."""
    opener = gzip.open if gz else open
    try:
        with opener(path, "rt", newline="") as fh:
            rows = csv.reader(fh, delimiter=delim)
            header = next(rows, None)
            first = next(rows, None) if not no_header else header
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read as CSV: {_clean(exc)}") from None
    if header is None:
        raise ValueError(f"{path}: empty CSV file")
    names = [str(i) for i in range(len(header))] if no_header else [h.strip() for h in header]

    def numeric(v):
        try:
            float(v)
            return True
        except ValueError:
            return v.strip() in _NULLS

    flags = [numeric(v) for v in first] if first else [True] * len(names)
    idx = resolve_columns(names, flags, columns, choose, where=str(path))
    try:
        X = np.loadtxt(path, delimiter=delim, skiprows=0 if no_header else 1, usecols=idx,
                       ndmin=2, dtype=np.float64, encoding="utf-8")
    except ValueError as exc:
        raise ValueError(f"{path}: cannot read as CSV of numbers: {_clean(exc)}") from None
    return X, [names[i] for i in idx]


def read_model(path):
    """Load a :class:`~dpdbscan.spans.SpanModel`, with a one-line error naming
    the file for anything that is not one (missing, binary, other JSON)."""

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model file not found: {p}")
    try:
        model = SpanModel.load(p)
        projection_of(model)  # validate the metadata now, not halfway through a plot
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not a dpdbscan span model (not a text file)") from None
    except (ValueError, RecursionError) as exc:
        msg = _clean(exc, limit=300)
        raise ValueError(msg if msg.startswith(str(p)) else f"{p}: {msg}") from None
    return model


# --------------------------------------------------------------------------- #
# writing


def write_labels(path, labels, points=None, names=None) -> None:
    """CSV of labels (``label`` column, -1 = noise), optionally after the points.

    ``path`` ``"-"`` writes to standard output.
    """
    labels = np.asarray(labels, dtype=np.int64)
    header_names = list(names or []) + ["label"] if points is not None else ["label"]
    buf = _io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(header_names)
    header = buf.getvalue().encode()
    out = sys.stdout.buffer if str(path) == "-" else open(path, "wb")
    try:
        out.write(header)
        try:
            import pyarrow as pa
            import pyarrow.csv as pacsv
        except ImportError:
            body = labels.reshape(-1, 1) if points is None else np.column_stack([points, labels])
            fmt = "%d" if points is None else ["%.17g"] * (body.shape[1] - 1) + ["%d"]
            np.savetxt(out, body, fmt=fmt, delimiter=",")
        else:
            cols = {} if points is None else {f"c{j}": points[:, j] for j in range(points.shape[1])}
            cols["label"] = labels
            pacsv.write_csv(pa.table(cols), out, write_options=pacsv.WriteOptions(include_header=False))
    finally:
        if out is not sys.stdout.buffer:
            out.close()
        else:
            out.flush()


__all__ = [
    "read_points", "read_model", "resolve_columns", "file_kind", "write_labels",
    "LABEL_COLUMN",
]
