"""How privacy unit ids are read: each id on its own, by its own type.

A person-level release groups the rows by their unit's id and bounds what
each group contributes. How one id is read must never depend on the other
ids: if it did, adding one unit to the data could merge others (sixty
integer ids near 2**60 read as float64 because one id was 0.5 become a few
units) or turn missing ids into a unit (NaN read as the text 'nan' because
one id was text), and one unit would change far more than the k cells and
m points per cell the noise is calibrated to.

What "typed together" means for each kind of input, and how it is read:

* **Typed by its owner, read by that type.** A pyarrow array (what the
  command line's readers give: a Parquet column's declared type, a CSV
  field's bytes), a numpy array whose dtype is a number, text or bytes, and
  a pandas Series or Index whose dtype is not ``object`` (``int64``,
  ``float64``, the nullable ``Int64``, ``boolean``, ``string``, a
  ``category`` of one of those). Its type was fixed by whoever built it,
  before the library saw it. numpy's text and bytes arrays drop trailing
  NUL characters when they are built, and a float array holds floats: an
  integer id above 2**53 that became a float on the way (a pandas ``int64``
  column with one missing value becomes ``float64``) has already been
  rounded, and ids that round to the same float are one unit. Pass such
  ids as integers (``Int64``), as text, or as a list.
* **Not typed: read one by one.** A list, a tuple, a numpy or pandas array
  of dtype ``object`` (what ``np.array(ids, dtype=object)`` or a column of
  mixed values gives). Each id by its own type and value:

  - missing (the row is dropped): None, NaN of any float type, pandas' NA
    and NaT;
  - numbers (bool, int of any size, float, their numpy scalars) by their
    exact value: ``1``, ``1.0`` and ``True`` are one unit, ``2**60 + 1``
    and ``float(2**60)`` are two;
  - text by its characters (trailing NULs kept), bytes by their bytes;
    text, bytes and numbers are never the same unit (``1`` and ``'1'``
    are two);
  - any other object (``Decimal``, ``Fraction``, complex, ``longdouble``,
    tuples, dates) is no id: its row is dropped as one whose unit is
    missing, and counted (``unreadable``: a private note that names no id),
    never a refusal, so that one row's id never decides whether a release
    happens. An array's *dtype* is public (its owner chose it): one that
    cannot hold ids exactly (``longdouble``, complex) is refused.

:func:`read_units` does this for the estimator, the command line and the
backends alike; :func:`dpdbscan.release.bounding.factorize` numbers the ids
it returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: numpy dtype kinds an array of ids may have as it is: booleans, integers,
#: floats, text and bytes.
TYPED_KINDS = "biufUS"


def read_units(units: Any, unreadable: list[int] | None = None) -> Any:
    """The ids of ``units``, one per row, each read on its own (see the
    module's notes): a one-dimensional numpy array of a dtype in
    :data:`TYPED_KINDS`, a pyarrow ChunkedArray of a declared type, or a
    numpy object array of *canonical ids*: None (missing), a Python int
    (every integral number), a Python float (the others), str or bytes.
    Reading what it returns again gives it back unchanged.

    An id of no readable type is read as missing; with ``unreadable`` (a
    list), how many were is added to its first item. Raises TypeError,
    naming a type and never an id, for an array (a dtype or a container)
    that cannot hold ids exactly."""
    arrow = _arrow_of(units)
    if arrow is not None:
        return arrow
    if (
        type(units).__module__.split(".")[0] == "dask"
        and hasattr(units, "__dask_graph__")
        and hasattr(units, "ndim")
    ):
        # a dask array or Series beside rows in memory: computed, then read
        # by its own type as in memory (an array iterated gave each id as a
        # dask array of its own, no readable id, and every row was dropped
        # as one without a unit; round 15)
        units = units.compute()
    if np.ma.isMaskedArray(units):
        # a masked id is missing, whatever value it hides; every id read one
        # by one, mask or none, so that one masked id never changes how the
        # others are read (round 15)
        values = np.asarray(units.data).astype(object).ravel()
        values[np.ma.getmaskarray(units).ravel()] = None
        if units.ndim == 2 and 1 in units.shape or units.ndim == 1:
            return canonical_ids(values.tolist(), unreadable)
        raise ValueError(f"units must be one-dimensional, one id per row; got shape {units.shape}")
    if type(units).__module__.split(".")[0] == "pandas":
        return _read_pandas(units, unreadable)
    if isinstance(units, np.ndarray):
        return _read_numpy(units, unreadable)
    if isinstance(units, (str, bytes)) or not hasattr(units, "__iter__"):
        raise TypeError("units must hold one id per row (a list or an array), not a single value")
    return canonical_ids(list(units), unreadable)


def _read_numpy(u: np.ndarray, unreadable: list[int] | None = None) -> np.ndarray:
    if u.ndim == 2 and 1 in u.shape:
        u = u.ravel()
    if u.ndim != 1:
        raise ValueError(f"units must be one-dimensional, one id per row; got shape {u.shape}")
    if u.dtype.kind == "O":
        return canonical_ids(u.tolist(), unreadable)
    if u.dtype.kind == "f" and u.dtype.itemsize > 8:
        raise TypeError(f"units of dtype {u.dtype} cannot be read exactly: give integers, float64 or text")
    if u.dtype.kind not in TYPED_KINDS:
        raise TypeError(f"units must be numbers, text or bytes (one id per row), got dtype {u.dtype}")
    return u


def _read_pandas(s: Any, unreadable: list[int] | None = None) -> Any:
    """A pandas Series, Index or array (a one-column DataFrame: its column)."""
    columns = getattr(s, "columns", None)
    if columns is not None:
        if len(columns) != 1:
            raise ValueError(f"units must be one column, one id per row; got {len(columns)} columns")
        s = s.iloc[:, 0]
    dtype = s.dtype
    if isinstance(dtype, np.dtype):
        return _read_numpy(s.to_numpy(), unreadable)
    # an extension dtype: nullable integers, booleans and floats, text, categories
    categories = getattr(dtype, "categories", None)
    if categories is None or categories.dtype != object:
        try:
            import pyarrow as pa
        except ImportError:
            pa = None
        if pa is not None:
            try:
                arr = pa.array(s, from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, UnicodeError):
                # UnicodeError: a text id with a lone surrogate (pandas' python-stored
                # strings hold one) failed the fit, its character quoted; id by id
                # below, that id is its own unit (round 15)
                arr = None
            if arr is not None and arrow_type_ok(arr.type):
                return pa.chunked_array([arr], type=arr.type)
    # without pyarrow, or categories of mixed values: id by id (pandas' NA is missing)
    return canonical_ids(s.to_numpy(dtype=object, na_value=None).tolist(), unreadable)


def _arrow_of(units: Any) -> Any:
    """``units`` as a pyarrow ChunkedArray if it is a pyarrow array, else None
    (pyarrow is not imported for other input)."""
    if type(units).__module__.split(".")[0] != "pyarrow":
        return None
    import pyarrow as pa

    if isinstance(units, pa.Array):
        units = pa.chunked_array([units], type=units.type)
    if not isinstance(units, pa.ChunkedArray):
        raise TypeError(f"units must be a pyarrow Array or ChunkedArray, got {type(units).__name__}")
    if not arrow_type_ok(units.type):
        raise TypeError(f"units must be numbers, text or bytes (one id per row), got Arrow type {units.type}")
    return units


def arrow_type_ok(t: Any) -> bool:
    """An Arrow type whose values are ids as they are: integers, booleans,
    floats, text, bytes, all missing, or a dictionary of those."""
    import pyarrow as pa

    return pa.types.is_null(t) or unit_kind_of_arrow(t) is not None


def unit_kind_of_arrow(t: Any) -> str | None:
    """How the values of a column of *declared* Arrow type ``t`` are units
    (never from the values): ``"int"`` (integers and booleans, by value),
    ``"float"`` (by value; NaN is missing), ``"text"`` (strings and bytes:
    by their bytes), a dictionary as its values' type; None for any other
    type (a column of nulls only included), which cannot name units. The one
    rule of a unit column's type: the reader's Parquet files and the Dask
    backend's tables and arrays alike."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return unit_kind_of_arrow(t.value_type)
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    ):
        return "text"
    return None


def canonical_ids(values: list, unreadable: list[int] | None = None) -> np.ndarray:
    """Python values as canonical ids (an object array): one pass, each
    value by its own type alone (:func:`canonical_id`); a value of no
    readable type is missing (None), counted in ``unreadable[0]``."""
    out: list[Any] = []
    bad = 0
    append = out.append
    for v in values:
        t = type(v)
        # the common cases first, without a call
        if t is str or t is bytes or t is int:
            append(v)
        elif t is float:
            append(None if v != v else int(v) if v.is_integer() else v)
        else:
            try:
                append(canonical_id(v))
            except TypeError:
                append(None)
                bad += 1
    if unreadable is not None and bad:
        unreadable[0] += bad
    arr: np.ndarray = np.empty(len(out), dtype=np.object_)
    arr[:] = out
    return arr


def canonical_id(v: Any) -> Any:
    """One id on its own: None if missing, else a Python int, float, str or
    bytes that equals another id's exactly when the two are one unit.
    TypeError (naming the type only) for anything else."""
    if v is None:
        return None
    if isinstance(v, str):
        return str.__str__(v)  # a plain str: np.str_ and other subclasses by their characters
    if isinstance(v, bytes):
        return bytes(v)
    if isinstance(v, (bool, np.bool_, int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)) and not (isinstance(v, np.floating) and v.dtype.itemsize > 8):
        f = float(v)  # exact: float16, float32 and float64 all fit in a float64
        return None if f != f else int(f) if f.is_integer() else f
    if type(v).__module__.split(".")[0] == "pandas" and type(v).__name__ in ("NAType", "NaTType"):
        return None
    raise TypeError(
        f"units must be integers, floats, text or bytes (None or NaN where missing); an id of type "
        f"{type(v).__name__} cannot be read exactly: convert the ids first (e.g. to text)"
    )


def id_token(v: Any) -> bytes:
    """A canonical id as bytes, one to one, for a column of one Arrow type
    (a distributed shuffle): text as its UTF-8 bytes (which never hold the
    byte 0xFF), anything else as 0xFF, a tag and its value. So a column of
    text has the same bytes as its tokens, and 1, '1' and b'1' stay three."""
    if isinstance(v, str):
        return v.encode("utf-8", "surrogatepass")
    if isinstance(v, bytes):
        return b"\xffb" + v
    if isinstance(v, int):
        return b"\xffi" + str(v).encode("ascii")
    return b"\xfff" + np.float64(v).tobytes()


def token_id(token: bytes) -> Any:
    """The canonical id of an :func:`id_token`."""
    if token[:1] != b"\xff":
        return token.decode("utf-8", "surrogatepass")
    tag, body = token[1:2], token[2:]
    if tag == b"b":
        return body
    if tag == b"i":
        return int(body)
    return float(np.frombuffer(body, dtype=np.float64)[0])


__all__ = [
    "TYPED_KINDS",
    "arrow_type_ok",
    "canonical_id",
    "canonical_ids",
    "id_token",
    "read_units",
    "token_id",
    "unit_kind_of_arrow",
]
