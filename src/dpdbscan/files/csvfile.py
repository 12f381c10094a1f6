"""Reading the text of a CSV file (plain, gzip or standard input) in blocks
of whole lines, parsed on a few threads by the per-record rules of
:mod:`dpdbscan.files.records`.

The header line, when the options declare one, is split off first
(:func:`first_line`); every later line is a record, and the blocks are cut
at line ends only, so a record is always parsed whole and alone.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import sys
import zlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from .records import (
    MAX_LINE,
    BlockCounts,
    CsvLayout,
    count_lines,
    first_terminator,
    has_text,
    header_start,
    last_line_end,
    parse_rows,
    split_head,
)

_BATCH = 1 << 22  # bytes per CSV block: big enough to be fast, small enough to overlap well


_DEFLATE_MAX_RATIO = 1032  # deflate's largest inflation: 258 bytes from 2 bits


class Source:
    """Decompressed bytes of a CSV file in chunks, and how far the raw bytes
    have been consumed (for the progress bar)."""

    def __init__(
        self,
        stream: Any,
        raw: Any = None,
        total: int | None = None,
        label: str = "standard input",
        text_bytes: int | None = None,
    ) -> None:
        self.stream, self.raw, self.total, self.label = stream, raw, total, label
        self.text_bytes = text_bytes  # about how many bytes of text follow (None: unknown)
        self.gzip_path: Path | None = None  # a gzip file's, read again by zlib if its stream breaks
        self.delivered = 0  # bytes of text handed on so far
        self.last = b""  # the last byte handed on
        self._prefix: GzipText | None = None

    @classmethod
    def file(cls, path: Path, gz: bool) -> Source:
        import pyarrow as pa

        size = os.path.getsize(path)
        text = size
        if gz and size >= 18:
            # gzip's trailer holds the text's length modulo 2**32 (of the last
            # member only): a hint for sizing the result, never trusted
            with open(path, "rb") as fh:
                fh.seek(-4, os.SEEK_END)
                text = int.from_bytes(fh.read(4), "little")
            # deflate inflates at most about 1032-fold, so a cut or damaged
            # file's last four bytes (any number up to 4 GiB) cannot ask for
            # more room than its size allows
            text = min(text, _DEFLATE_MAX_RATIO * size)
        if gz and _igzip() is not None:
            fh = open(path, "rb")  # noqa: SIM115 - closed by close()
            source = cls(_igzip().IGzipFile(fileobj=fh, mode="rb"), fh, size, path.name, text)
        else:
            raw = pa.OSFile(str(path))
            stream = pa.CompressedInputStream(raw, "gzip") if gz else raw
            source = cls(stream, raw, size, path.name, text)
        source.gzip_path = path if gz else None
        return source

    @classmethod
    def stdin(cls, gz: bool) -> Source:
        """Standard input, gzip-compressed only when the format says so:
        its first bytes are a record's and decide nothing."""
        buf = sys.stdin.buffer
        if not gz:
            return cls(buf)
        # inflated as it streams in, so that a stream cut part-way (an
        # interrupted download piped in) keeps its text before the cut, as a
        # file does: standard input cannot be read a second time
        source = cls(None)
        source._prefix = GzipText(buf, own=False)
        return source

    def read(self, n: int) -> bytes:
        if self._prefix is not None:
            data = self._prefix.read(n)
        else:
            try:
                data = self.stream.read(n)
            except Exception as exc:
                data = self._rescue(exc, n)
        if data:
            self.delivered += len(data)
            self.last = data[-1:]
        return data

    @property
    def cut(self) -> bool:
        """Whether the text ended because the gzip file ends early (cut
        part-way): known once the text's end is read."""
        return self._prefix is not None and self._prefix.cut

    def _rescue(self, exc: Exception, n: int) -> bytes:
        """The next text of a gzip file whose stream broke: the rest of
        what zlib inflates of it, after the ``delivered`` bytes already
        handed on (inflating is deterministic: they are its first bytes).
        Only on this failure path, so an intact file is read as before. A
        file cut part-way (an interrupted download) gives the text before
        the cut; ``exc`` is raised again when zlib too finds the file damaged
        or not gzip at all, before (here) or after the bytes handed on."""
        import pyarrow as pa

        if self.gzip_path is None or not isinstance(
            exc, (OSError, EOFError, pa.ArrowException, *gzip_errors())
        ):
            raise exc
        prefix = GzipText(open(self.gzip_path, "rb"))  # noqa: SIM115 - closed by close()
        try:
            prefix.skip(self.delivered)
        except OSError:
            prefix.close()
            raise exc from None
        self._prefix = prefix
        return prefix.read(n)

    def done(self) -> int | None:
        if self._prefix is not None:
            return self.total
        return self.raw.tell() if self.raw is not None else None

    def close(self) -> None:
        for s in (self.stream, self.raw, self._prefix):
            if s is not None:
                s.close()


class GzipText:
    """The text of a gzip stream up to its end or where the stream ends
    early (``cut``: cut part-way, as by an interrupted download); every
    member of a multi-member stream, in order. Damage (data the inflater
    refuses, a wrong checksum, bytes after a member that are not one) raises
    OSError at the damage: only a stream whose every byte inflates is read.
    Streaming, so memory stays bounded: ISA-L's inflater when installed
    (:func:`_igzip`), else Python's zlib (the same text: inflating is
    deterministic). ``fh``: a binary file object, closed by :meth:`close`
    when ``own``."""

    _CHUNK = 1 << 20  # compressed bytes inflated at a time

    def __init__(self, fh: Any, own: bool = True) -> None:
        self.fh, self.own = fh, own
        igzip = _igzip()
        self.engine = zlib if igzip is None else igzip.isal_zlib
        self.inflate = self.engine.decompressobj(wbits=31)
        self.pending, self.at = b"", 0  # inflated text not yet handed on: pending[at:]
        self.stopped = False
        self.cut = False

    def _more(self) -> bytes:
        """The next inflated bytes (b"" at the end of the text)."""
        while not self.stopped:
            chunk = self.fh.read(self._CHUNK)
            if not chunk:
                self.stopped = True
                self.cut = not self.inflate.eof
                break
            try:
                data = self.inflate.decompress(chunk)
                while self.inflate.eof and self.inflate.unused_data:  # the next member
                    rest = self.inflate.unused_data
                    self.inflate = self.engine.decompressobj(wbits=31)
                    data += self.inflate.decompress(rest)
            except (zlib.error, *gzip_errors()):
                self.stopped = True
                raise OSError("the gzip stream is damaged") from None
            if data:
                return data
        return b""

    def _take(self, n: int) -> bytes:
        """Up to ``n`` bytes of the pending text (b"" at the text's end)."""
        if self.at >= len(self.pending):
            self.pending, self.at = self._more(), 0
        if self.at == 0 and n >= len(self.pending):
            data = self.pending  # whole: no copy
        else:
            data = self.pending[self.at : self.at + n]
        self.at += len(data)
        return data

    def skip(self, n: int) -> None:
        """Pass over the first ``n`` bytes of text."""
        while n > 0 and (data := self._take(n)):
            n -= len(data)

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes of text (fewer only at its end)."""
        parts, size = [], 0
        while size < n and (data := self._take(n - size)):
            parts.append(data)
            size += len(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read_all(self) -> bytes:
        """The rest of the text."""
        parts = [self.pending[self.at :]]
        self.pending, self.at = b"", 0
        while data := self._more():
            parts.append(data)
        return b"".join(parts)

    def close(self) -> None:
        if self.own:
            self.fh.close()


def _igzip():
    """``isal.igzip`` when installed (``pip install 'dpdbscan[io]'``), else None.

    ISA-L inflates gzip about 2.5 times faster than zlib (0.17 s against
    0.48 s for the 52 MB Cabs file here) and releases the GIL while it does,
    so the parsing threads keep up. Reading a gzip file is otherwise the
    slowest serial step of ``dpdbscan fit``.
    """
    try:
        from isal import igzip
    except ImportError:
        return None
    return igzip


def gzip_errors() -> tuple:
    igzip = _igzip()
    return () if igzip is None else (igzip.isal_zlib.error,)


#: What :func:`_blocks` yields in the place of a line longer than
#: :data:`~dpdbscan.files.records.MAX_LINE`: one malformed record.
OVERLONG = object()


def _blocks(source: Source, head: bytes):
    """Blocks of whole lines: ``head`` and then what ``source`` reads. A
    line longer than :data:`MAX_LINE` is :data:`OVERLONG` in its place, its
    bytes dropped as they are read (never held whole: one line of 2 GiB made
    pyarrow fail the whole read, and one of any size was joined chunk by
    chunk, in time quadratic in its length)."""
    cut = last_line_end(head)
    if cut:
        yield head[:cut]
        head = head[cut:]
    # the start of the line being read (no line end in it): its parts and length
    parts: list[bytes | memoryview] = [head] if head else []
    size = len(head)
    dropping = False  # within a line longer than MAX_LINE: its bytes are dropped
    while chunk := source.read(_BATCH):
        if dropping:
            end = first_terminator(chunk)
            if end < 0:
                continue
            yield OVERLONG
            dropping, chunk = False, chunk[end:]
        cut = last_line_end(chunk)
        if cut == 0:  # the line goes on past this chunk
            parts.append(chunk)
            size += len(chunk)
            if size > MAX_LINE:
                parts, size, dropping = [], 0, True
            continue
        if parts and size + first_terminator(chunk) > MAX_LINE:
            yield OVERLONG
            parts, size = [], 0
            start = first_terminator(chunk)
            chunk, cut = chunk[start:], cut - start
        if parts:
            parts.append(memoryview(chunk)[:cut])
            yield b"".join(parts)
        else:
            yield chunk if cut == len(chunk) else chunk[:cut]
        rest = chunk[cut:]
        parts, size = ([rest] if rest else []), len(rest)
    if dropping:
        yield OVERLONG
    elif parts and has_text(rest := b"".join(parts)):
        yield rest


class _Rows:
    """The rows of all blocks, in file order, in one growing array.

    Each block's place is reserved when it is handed to a parsing thread
    (its records are counted first), so that the thread writes its rows
    straight into place: the blocks are neither kept nor concatenated
    (which would hold the points twice), and the copying is spread over
    the threads. Sized from the first block's bytes per record and the
    text's expected length; pages past the end are never touched. When the
    system refuses that size (a first block of short lines asks for many
    times the rows the file holds), the size the rows read so far need.
    """

    def __init__(self, d: int, text_bytes: int | None):
        self.d, self.text_bytes, self.n = d, text_bytes, 0
        self.X: np.ndarray | None = None

    def reserve(self, k: int, block_bytes: int, drain) -> np.ndarray:
        """The rows ``n .. n + k`` of the result, for the next block.
        ``drain()`` waits for the blocks in flight before the array moves."""
        if self.X is None or self.n + k > self.X.shape[0]:
            guess = 0
            if self.X is None and self.text_bytes and k:
                guess = int(self.text_bytes / max(block_bytes / k, 1.0) * 1.02) + 1024
            need = max(self.n + k, 1024)
            cap = max(need, guess, 2 * (0 if self.X is None else self.X.shape[0]))
            drain()
            try:
                grown = np.empty((cap, self.d))
            except MemoryError:
                # the guess is from the first block's records (one unit's
                # rows, perhaps, all short lines): it must not decide whether
                # the read fails, so only what the rows read so far need may
                grown = np.empty((need + need // 8, self.d))
            if self.X is not None:
                grown[: self.n] = self.X[: self.n]
            self.X = grown
        dest = self.X[self.n : self.n + k]
        self.n += k
        return dest

    def result(self) -> np.ndarray:
        return np.zeros((0, self.d)) if self.X is None else self.X[: self.n]


def _records(block: bytes) -> int:
    """The number of records (non-empty lines) of a block, as parse_block
    returns them; a quick count when no line is empty and no ``\r`` ends one.

    It runs on the reading thread for every block before the block is handed
    on, so it must be quick: numpy's comparisons take about 0.6 ms a 4 MB
    block, where ``b"\n\n" in block`` alone took 4-7 ms (Python's substring
    search is slow on a needle of a frequent byte), about 0.3 s of the main
    thread's time on the Cabs file.
    """
    if not block or b"\r" in block:
        return count_lines(block)
    nl = np.frombuffer(block, dtype=np.uint8) == 10
    if nl[0] or np.count_nonzero(nl[1:] & nl[:-1]):  # an empty line
        return count_lines(block)
    return int(np.count_nonzero(nl)) + (0 if nl[-1] else 1)


def _parse_into(block: bytes, layout, hook, dest: np.ndarray) -> tuple[BlockCounts, Any, tuple]:
    """Parse one block into its place ``dest`` (straight into it, unless the
    block had to be read in parts); its counts, its units (an Arrow
    array, or None when the layout reads no unit) and its fields of
    ``layout.also`` (Arrow arrays)."""
    X, units, counts, also = parse_rows(block, layout, out=dest)
    if X.shape[0] != dest.shape[0]:  # pragma: no cover - parse_rows returns one row a record
        raise RuntimeError("a CSV block held a different number of records than counted")
    if X is not dest:
        dest[...] = X
    if hook is not None:
        hook(dest)
    return counts, units, also


def _overlong_into(layout, hook, dest: np.ndarray) -> tuple[BlockCounts, Any, tuple]:
    """A line longer than :data:`MAX_LINE` into its place ``dest``: a
    malformed record (a row of NaN, its unit and fields missing), as
    :func:`dpdbscan.files.records.parse_rows` reads one."""
    import pyarrow as pa

    dest[...] = np.nan
    if hook is not None:
        hook(dest)
    units = None if layout.unit is None else pa.nulls(1, pa.binary())
    return BlockCounts(rows=1, malformed=1), units, tuple(pa.nulls(1, pa.binary()) for _ in layout.also)


def _parse_blocks(source: Source, head: bytes, layout, bar, hook=None):
    """Parse blocks on a few threads (pyarrow releases the GIL) while this
    thread reads and decompresses the next ones; each thread writes its rows
    into place in the result. ``hook`` runs on each parsed block first.
    The blocks' units (when the layout reads them) and their fields of
    ``layout.also`` are kept in file order."""
    workers = max(1, min(4, os.cpu_count() or 1))
    rows, counts = _Rows(len(layout.usecols), source.text_bytes), BlockCounts()
    pending: collections.deque = collections.deque()
    units: list = []
    also: list[list] = [[] for _ in layout.also]

    def collect():
        block_counts, block_units, block_also = pending.popleft().result()
        counts.add(block_counts)
        if block_units is not None:
            units.append(block_units)
        for k, values in enumerate(block_also):
            also[k].append(values)

    def drain():
        while pending:
            collect()

    blocks = _blocks(source, head)
    ahead = list(itertools.islice(blocks, 2))
    # a file of one block (each of a folder's trace files, mostly) is parsed on this thread:
    # no pool of threads started and joined per file (10,250 of them in a T-Drive week)
    inline = len(ahead) < 2
    with contextlib.nullcontext(_Inline()) if inline else ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for block in itertools.chain(ahead, blocks):
                if block is OVERLONG:
                    dest = rows.reserve(1, MAX_LINE, drain)
                    pending.append(pool.submit(_overlong_into, layout, hook, dest))
                else:
                    dest = rows.reserve(_records(block), len(block), drain)
                    pending.append(pool.submit(_parse_into, block, layout, hook, dest))
                while len(pending) > workers:  # bounded memory
                    collect()
                done = source.done()
                if done is not None:
                    bar.update(done - bar.n)
            drain()
        finally:
            for f in pending:
                f.cancel()
    units_read = None if layout.unit is None else _joined(units)
    return rows.result(), units_read, counts, tuple(_joined(values) for values in also)


class _Inline:
    """An executor that runs each task at once, on the calling thread."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        done: Future = Future()
        try:
            done.set_result(fn(*args))
        except Exception as e:  # raised where the result is asked for, as from a pool
            done.set_exception(e)
        return done


def _joined(parts: list) -> Any:
    """The binary values of all blocks (their units, or a field of
    ``layout.also``) as one Arrow chunked array."""
    import pyarrow as pa

    return pa.chunked_array(parts, type=pa.binary())


def first_line(source: Source) -> tuple[bytes | None, bytes]:
    """``(the first non-empty line, the bytes after it)`` of ``source``;
    ``(None, b"")`` for a file with no line (:func:`records.split_head`).
    Only for a declared header: the first line of a file without one is a
    record like any other."""
    data = b""
    while True:  # up to the end of the first non-empty line
        chunk = source.read(max(1 << 16, len(data)))  # doubling: linear in the line's length
        data = header_start(data + chunk)
        if not chunk or last_line_end(data):
            break
        if len(data) > MAX_LINE:
            break
    header, rest = split_head(data, True)
    if header is not None and len(header) > MAX_LINE:  # no CSV header is that long: not CSV, or damaged
        raise OSError("the first line is longer than a CSV header can be")
    return header, rest


def strip_bom(source: Source) -> bytes:
    """The first bytes of ``source`` without a UTF-8 byte order mark (an
    encoding mark of the file, not part of its first record)."""
    return split_head(source.read(3), False)[1]


def read_blocks(
    source: Source,
    head: bytes,
    layout: CsvLayout,
    bar: Any,
    hook: Callable[[np.ndarray], None] | None = None,
) -> tuple[np.ndarray, Any, BlockCounts, tuple]:
    """Every record of ``head`` and then of ``source``, parsed with
    ``layout``: ``(X, units, counts, also)``, ``units`` an Arrow chunked
    array of binary values, one per row (null where missing), or None when
    the layout reads no unit; ``also`` one such array for each field of
    ``layout.also``, read in the same pass."""
    return _parse_blocks(source, head, layout, bar, hook)


__all__ = ["GzipText", "Source", "first_line", "strip_bom", "read_blocks", "gzip_errors"]
