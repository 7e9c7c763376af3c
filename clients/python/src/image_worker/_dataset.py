"""Image datasets as img2dataset builds them: :func:`download_dataset` turns a table of URLs (and
captions) into WebDataset or Parquet shards by running ``image-worker get`` (GUIDE.md, "Datasets").

The worker reads TXT, CSV, TSV, JSONL and Parquet tables itself, a row at a time (Parquet: flat
columns in any encoding and any codec but LZO). A Parquet table with a codec or encoding it does
not know is read through pyarrow when it is installed, batch by batch; such a
table and rows given in Python are streamed into a temporary JSON Lines file first, so no table is
ever held whole in memory."""

from __future__ import annotations

import glob
import json
import math
import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

from ._binary import find_binary
from ._errors import ImageWorkerError
from ._option_table import GET_FLAGS

PathLike = Union[str, "os.PathLike[str]"]
Rows = Iterable[Mapping[str, Any]]
#: A table given whole: a pandas DataFrame, a pyarrow Table or RecordBatch (read a batch at a time;
#: neither package is needed otherwise).
Frame = Any

#: What ``input_format`` may say (by default, from the table file's extension).
INPUT_FORMATS = ("txt", "csv", "tsv", "jsonl", "parquet")
#: What ``output_format`` may say (loose files with a manifest: :func:`download_many`).
OUTPUT_FORMATS = ("webdataset", "parquet", "files")
#: A shard's name in each layout (what it has beside its ``_stats.json``): an archive, a folder
#: named as the shard (``files``), or its Parquet table (``parquet``).
SHARD_FILES = {"webdataset": ".tar", "files": "", "parquet": ".parquet"}


@dataclass(frozen=True)
class DatasetResult:
    """What a dataset run left in ``output``, from its shards' ``_stats.json`` files (the shards a
    resumed run kept included): every input row is counted once, in ``status`` by what became of
    it (``success``, ``failed_to_download``, ``failed_to_resize``, ``failed_to_write``,
    ``opted_out``, ``filtered``) and, when it failed, in ``errors`` by its error's name."""

    output: str
    #: The complete shards' files (``00000.tar`` for WebDataset, the folder ``00000`` for
    #: ``files``, ``00000.parquet`` for Parquet).
    shards: List[str]
    count: int
    successes: int
    status: Dict[str, int] = field(default_factory=dict)
    errors: Dict[str, int] = field(default_factory=dict)
    #: ``image-worker get``'s exit status: 0 when every row succeeded, 1 when any failed.
    exit_status: int = 0

    @property
    def failed(self) -> int:
        return self.count - self.successes


def _has_pyarrow() -> bool:
    try:
        import pyarrow.parquet  # type: ignore[import-not-found, import-untyped, unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


#: What ``get`` reads of a Parquet table itself (pyarrow's names for them).
_WORKER_CODECS = ("UNCOMPRESSED", "SNAPPY", "GZIP", "BROTLI", "ZSTD", "LZ4", "LZ4_RAW", "LZ4_HADOOP")
_WORKER_ENCODINGS = ("PLAIN", "PLAIN_DICTIONARY", "RLE_DICTIONARY", "RLE", "BIT_PACKED", "DELTA_BINARY_PACKED",
                     "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "BYTE_STREAM_SPLIT")


def _worker_reads(path: str, columns: Sequence[str]) -> bool:
    """Whether ``get`` reads the Parquet table at ``path`` itself (its footer, through pyarrow):
    then it is handed over as it is, not copied into JSON Lines."""
    import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
    try:
        meta = pq.ParquetFile(path).metadata
    except Exception:
        return True  # (get says what is wrong with it)
    leaves = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    for name in set(columns):
        if name not in leaves:
            return True  # nested, or not there: get refuses it by name
        i = leaves[name]
        for g in range(meta.num_row_groups):
            chunk = meta.row_group(g).column(i)
            if chunk.compression not in _WORKER_CODECS or any(e not in _WORKER_ENCODINGS for e in chunk.encodings):
                return False
    return True


def parquet_rows(path: str, columns: Sequence[str]) -> Iterator[Dict[str, Any]]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError as e:
        raise ImportError("a Parquet table needs pyarrow: pip install 'image-worker[parquet]'") from e
    table = pq.ParquetFile(path)
    _require_columns(path, sorted(table.schema_arrow.names), columns)
    for batch in table.iter_batches(columns=list(dict.fromkeys(columns)), batch_size=8192):
        yield from batch.to_pylist()


def table_columns(url_col: str, caption_col: Optional[str], save_columns: Sequence[str],
                  verify_hash_col: Optional[str]) -> List[str]:
    """The columns a dataset reads of its table: the URL's, the caption's, the kept ones, the hash's."""
    return [url_col] + ([caption_col] if caption_col else []) + list(save_columns) + ([verify_hash_col] if verify_hash_col else [])


def table_format(path: str, input_format: Optional[str]) -> str:
    """How a table file is read: ``input_format``, else from its extension (``txt`` otherwise)."""
    if input_format:
        return input_format
    lower = path.lower()
    for ext, kind in ((".parquet", "parquet"), (".pq", "parquet"), (".csv", "csv"), (".tsv", "tsv"), (".jsonl", "jsonl"),
                      (".ndjson", "jsonl")):
        if lower.endswith(ext):
            return kind
    return "txt"


def _require_columns(table: str, names: Sequence[str], columns: Sequence[str]) -> None:
    """A ValueError naming the ``columns`` that ``table``, of columns ``names``, lacks."""
    missing = [c for c in dict.fromkeys(columns) if c not in names]
    if missing:
        raise ValueError(f"{table} has no column {', '.join(map(repr, missing))} (its columns: {', '.join(names)})")


def _frame_rows(table: Any, columns: Sequence[str]) -> Optional[Iterator[Dict[str, Any]]]:
    """The rows of a pandas DataFrame or a pyarrow Table or RecordBatch (iterating one gives its
    column names or columns, not rows), a batch at a time; None for anything else."""
    if hasattr(table, "to_pylist") and hasattr(table, "schema"):
        names, kind = list(table.schema.names), "pyarrow"
    elif hasattr(table, "iloc") and hasattr(table, "columns"):
        names, kind = [str(c) for c in table.columns], "pandas"
    else:
        return None
    wanted = list(dict.fromkeys(columns))
    _require_columns("the table", names, wanted)

    def rows() -> Iterator[Dict[str, Any]]:
        for start in range(0, len(table), 8192):
            if kind == "pyarrow":
                yield from table.slice(start, 8192).select(wanted).to_pylist()
            else:
                yield from table.iloc[start:start + 8192][wanted].to_dict("records")
    return rows()


def read_rows(table: Union[PathLike, Rows, Frame], columns: Sequence[str], input_format: Optional[str] = None) -> Iterator[Dict[str, Any]]:
    """A table's rows as dicts of ``columns`` (the first is the URL's), streamed: Parquet through
    pyarrow batch by batch, CSV/TSV with a header, JSON Lines objects, TXT a URL a line (blank and
    ``#`` lines skipped); a pandas DataFrame or pyarrow Table a batch at a time; an iterable of
    mappings as it is."""
    if not isinstance(table, (str, os.PathLike)):
        frame = _frame_rows(table, columns)
        if frame is not None:
            yield from frame
            return
        for row in table:
            if not isinstance(row, Mapping):
                raise TypeError(f"a table's rows are mappings of column to value, not {type(row).__name__}: {row!r:.80}")
            yield {c: row.get(c) for c in columns if c in row}
        return
    path = os.fspath(table)
    kind = table_format(path, input_format)
    if kind == "parquet":
        yield from parquet_rows(path, columns)
        return
    import csv
    with open(path, newline="", encoding="utf-8-sig") as f:
        if kind in ("csv", "tsv"):
            for record in csv.DictReader(f, delimiter="," if kind == "csv" else "\t"):
                yield {c: record.get(c) for c in columns if c in record}
        elif kind == "jsonl":
            for line in f:
                if line.strip():
                    record = json.loads(line)
                    yield {c: record.get(c) for c in columns if c in record}
        else:
            for line in f:
                url = line.strip()
                if url and not url.startswith("#"):
                    yield {columns[0]: url.split("\t", 1)[0]}


def _plain(value: Any) -> Any:
    """A value as JSON has it: numpy's and pandas' scalars as Python's, a missing number (NaN,
    which JSON has not) as null; anything else JSON has no type for, as its text."""
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if value is None or isinstance(value, (str, bool, int, list, dict)):
        return value
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing values
        return None
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (bytes, bytearray)):
        try:
            return _plain(item())
        except (TypeError, ValueError):
            pass
    return str(value)


def _write_jsonl(rows: Iterable[Mapping[str, Any]], out: IO[str]) -> None:
    for row in rows:
        out.write(json.dumps({k: _plain(v) for k, v in row.items()}, ensure_ascii=False, default=str))
        out.write("\n")


def _flag_arguments(options: Mapping[str, Any]) -> List[str]:
    arguments: List[str] = []
    for name, value in options.items():
        if name not in GET_FLAGS:
            raise TypeError(f"download_dataset() got an unexpected keyword argument {name!r}")
        flag, switch = GET_FLAGS[name]
        if value is None or (switch and value is False):
            continue
        if switch:
            if value is not True:
                raise TypeError(f"{name} must be True or False, not {value!r}")
            arguments.append(flag)
        elif isinstance(value, (list, tuple)):
            arguments += [flag, ",".join(str(v) for v in value)]
        else:
            arguments += [flag, str(value)]
    return arguments


def _result(output: str, layout: str, exit_status: int) -> DatasetResult:
    shards: List[str] = []
    count = successes = 0
    status: Dict[str, int] = {}
    errors: Dict[str, int] = {}
    for path in sorted(glob.glob(os.path.join(glob.escape(output), "[0-9]" * 5 + "*_stats.json"))):
        with open(path, encoding="utf-8") as f:
            stats = json.load(f)
        count += int(stats.get("count", 0))
        successes += int(stats.get("successes", 0))
        for key, n in stats.get("status_dict", {}).items():
            status[key] = status.get(key, 0) + int(n)
        for key, n in stats.get("errors", {}).items():
            errors[key] = errors.get(key, 0) + int(n)
        shards.append(path[: -len("_stats.json")] + SHARD_FILES[layout])
    return DatasetResult(output, shards, count, successes, status, errors, exit_status)


def download_dataset(table: Union[PathLike, Rows, Frame], output: PathLike, *, input_format: Optional[str] = None,
                     url_col: str = "url", caption_col: Optional[str] = None, save_columns: Sequence[str] = (),
                     verify_hash_col: Optional[str] = None, output_format: str = "webdataset",
                     shard_size: int = 10_000, first_shard: int = 0, resume: bool = False,
                     binary: Optional[PathLike] = None, progress: bool = False, **options: Any) -> DatasetResult:
    """Downloads every row of ``table`` into shards in ``output`` (img2dataset's layout: ``00000.tar``
    with ``KEY.jpg``, ``KEY.txt`` and ``KEY.json``, a ``00000.parquet`` of every row's metadata and
    ``00000_stats.json`` beside each; ``output_format="files"``: the same three files a sample in
    the folder ``00000``; ``"parquet"``: the images' bytes in the shard's Parquet table). Returns
    the counts of every shard in ``output``.

    ``table``: a TXT/CSV/TSV/JSONL/Parquet file (``input_format`` by default from its extension),
    a pandas DataFrame or pyarrow Table, or an iterable of row mappings; ``url_col``,
    ``caption_col``, ``save_columns`` (kept beside each sample) and ``verify_hash_col`` (a SHA-256
    the bytes must have) name its columns. ``resume``: keep the complete shards of an earlier run
    (of the same ``shard_size``) and write the others again. ``first_shard``: the number of the
    first shard (a distributed run gives each task its own). Every other keyword is
    one of ``image-worker get``'s options in snake case (``width=256, height=256, fit="cover"``,
    ``format="jpeg"``, ``concurrency``, ``disallowed_header_directives=[]`` to download what sites
    opted out of, ``user_agent_token``, ``min_image_size``...). ``progress``: the worker's progress
    on stderr. A Ctrl-C stops the run (complete shards are kept) and raises ``KeyboardInterrupt``.
    """
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, not {output_format!r}")
    if input_format is not None and input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format must be one of {', '.join(INPUT_FORMATS)}, not {input_format!r}")
    program, _ = find_binary(os.fspath(binary) if binary is not None else None)
    out = os.fspath(output)
    columns = table_columns(url_col, caption_col, save_columns, verify_hash_col)
    arguments = [program, "get", "-o", out, "--output-format", output_format, "--shard-size", str(shard_size),
                 "--url-col", url_col]
    if first_shard:
        arguments += ["--first-shard", str(first_shard)]
    if caption_col:
        arguments += ["--caption-col", caption_col]
    if save_columns:
        arguments += ["--save-columns", ",".join(save_columns)]
    if verify_hash_col:
        arguments += ["--verify-hash-col", verify_hash_col]
    if resume:
        arguments.append("--continue")
    if not progress:
        arguments.append("--no-progress")
    arguments += _flag_arguments(options)
    with tempfile.TemporaryDirectory(prefix="image-worker-dataset-") as scratch:
        # Rows from Python, and a Parquet table pyarrow reads, become JSON Lines, streamed.
        path: Optional[str] = None
        rows: Optional[Iterable[Mapping[str, Any]]] = None
        if not isinstance(table, (str, os.PathLike)):
            rows = read_rows(table, columns)
        elif (table_format(os.fspath(table), input_format) == "parquet" and _has_pyarrow()
              and not _worker_reads(os.fspath(table), columns)):
            rows = parquet_rows(os.fspath(table), columns)
        else:
            path = os.fspath(table)
            if input_format:
                arguments += ["--input-format", input_format]
        if rows is not None:
            path = os.path.join(scratch, "rows.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                _write_jsonl(rows, f)
            arguments += ["--input-format", "jsonl"]
        arguments[2:2] = ["-i", path or "-"]
        with open(os.path.join(scratch, "stderr"), "w+", encoding="utf-8", errors="replace") as errors:
            # In a session of its own, so that a terminal's Ctrl-C reaches it once, from here (a
            # second SIGINT ends the worker at once, without finishing what it was writing).
            process = subprocess.Popen(arguments, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=None if progress else errors, start_new_session=True)
            try:
                status = process.wait()
            except BaseException:
                # The worker ends as on its own Ctrl-C: complete shards kept, the rest dropped.
                process.send_signal(signal.SIGINT)
                process.wait()
                raise
            errors.seek(0)
            said = errors.read()
    if status not in (0, 1):
        if status in (130, 143):
            raise KeyboardInterrupt(f"image-worker get was interrupted (exit status {status})")
        raise ImageWorkerError(f"image-worker get failed (exit status {status}): {said.strip()[-2000:]}")
    return _result(out, output_format, status)
