"""Bulk-job manifests: one record per input URL, the same records as ``image-worker get
--manifest`` and the Node client's (GUIDE.md, "Manifests"). JSON Lines are appended and flushed as
each URL ends, so an interrupted job keeps what finished; a ``.parquet`` path is written through
pyarrow when the job ends (also when it is interrupted)."""

from __future__ import annotations

import json
import os
import re
import secrets
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ._errors import DownloadError, ImageWorkerError
from ._events import Image
from ._manifest_fields import ERROR_TYPES, FIELDS, TYPES


def fill_placeholder(template: str, placeholder: str, value: int) -> str:
    """``template`` with ``{placeholder}`` (``{placeholder:N}``: zero-padded to N digits)
    replaced by ``value``; ``{{``, ``}}`` and every other placeholder left as they are."""
    pattern = re.compile(r"\{\{|\}\}|\{" + re.escape(placeholder) + r"(?::(\d+))?\}")

    def replace(match: "re.Match[str]") -> str:
        text = match.group(0)
        if text in ("{{", "}}"):
            return text
        width = match.group(1)
        if width is not None and not 1 <= int(width) <= 20:
            return text
        return str(value).zfill(int(width)) if width else str(value)

    return pattern.sub(replace, template)


def redacted(url: str) -> str:
    """``url`` without its user information (``user:password@``), as the worker shows URLs: a
    manifest is shared, logged, uploaded; the password stays in the caller's list."""
    scheme_end = url.find("://")
    if scheme_end < 0:
        return url
    start = scheme_end + 3
    end = len(url)
    for stop in "/?#":
        found = url.find(stop, start)
        if found >= 0:
            end = min(end, found)
    at = url.rfind("@", start, end)
    return url if at < 0 else url[:start] + url[at + 1:]


def key(url: str, name: Optional[str]) -> str:
    """What identifies an input line across runs: its URL (as recorded: without user
    information), and its own name when it gave one."""
    shown = redacted(url)
    return shown if name is None else f"{shown}\t{name}"


def record(index: int, url: str, name: Optional[str], image: Optional[Image], error: Optional[BaseException],
           format: str, ms: Optional[int]) -> Dict[str, Any]:
    """The record of one URL's end (``format``: the ``format`` asked; ``original`` records the
    bytes' own format)."""
    r: Dict[str, Any] = {"index": index, "url": redacted(url)}
    if name is not None:
        r["name"] = name
    if image is not None:
        r["outcome"] = "skipped" if image.skipped else "ok"
        if image.path is not None:
            r["path"] = image.path
        r["bytes"] = image.byte_length
        written = image.source_format if format == "original" else format
        if written is not None:
            r["format"] = written
        for field, value in (("width", image.width), ("height", image.height), ("sha256", image.sha256),
                             ("sourceSha256", image.source_sha256), ("sourceWidth", image.source_width),
                             ("sourceHeight", image.source_height), ("orientation", image.orientation)):
            if value is not None:
                r[field] = value
    else:
        from ._errors import Cancelled
        if isinstance(error, Cancelled):
            r["outcome"] = "cancelled"
        else:
            r["outcome"] = "failed"
            summary: Dict[str, Any] = {"name": getattr(error, "name", type(error).__name__),
                                       "message": getattr(error, "message", str(error))}
            if isinstance(error, DownloadError):
                summary["code"] = error.code
                if error.attempts is not None:
                    summary["attempts"] = error.attempts
                if isinstance(error.data.get("limit"), str):
                    summary["limit"] = error.data["limit"]
            elif isinstance(error, ImageWorkerError) and hasattr(error, "code"):
                summary["code"] = getattr(error, "code")
            r["error"] = summary
    if ms is not None:
        r["ms"] = ms
    return r


def image_from_record(r: Dict[str, Any]) -> Image:
    """A finished URL of an earlier run as the :class:`Image` it became (``skipped`` is True:
    nothing was fetched this time)."""
    return Image(token=r.get("index", -1), url=str(r.get("url", "")), status=0, byte_length=int(r.get("bytes") or 0),
                 mime_type=None, source_format=r.get("format"), width=r.get("width"), height=r.get("height"),
                 path=r.get("path"), sha256=r.get("sha256"), skipped=True, raw=dict(r))


def _is_parquet(path: str) -> bool:
    return path.lower().endswith((".parquet", ".pq"))


def _pyarrow() -> Any:
    try:
        import pyarrow  # type: ignore[import-not-found, import-untyped, unused-ignore]
        import pyarrow.parquet  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError as e:
        raise ImportError("a .parquet manifest needs pyarrow: pip install pyarrow (or use a .jsonl path)") from e
    return pyarrow


def read(path: str) -> List[Dict[str, Any]]:
    """The records of a manifest (lines that do not parse, as one cut by a kill, are left out)."""
    if _is_parquet(path):
        pa = _pyarrow()
        rows = pa.parquet.read_table(path).to_pylist()
        return [{k: v for k, v in row.items() if v is not None} for row in rows]
    records: List[Dict[str, Any]] = []
    with open(path, "rb") as f:
        for line in f:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict) and isinstance(value.get("url"), str):
                records.append(value)
    return records


def done(records: Iterable[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    """The records showing their URL as done (``ok`` or ``skipped``, the file still there), by
    :func:`key` (an input may hold a URL twice: one record per index); a later record of a key and
    index replaces an earlier one."""
    result: Dict[str, List[Dict[str, Any]]] = {}
    for r in records:
        k = key(r["url"], r.get("name"))
        path = r.get("path")
        kept = [other for other in result.get(k, []) if other.get("index") != r.get("index")]
        if r.get("outcome") in ("ok", "skipped") and (path is None or os.path.exists(path)):
            kept.append(r)
        if kept:
            result[k] = kept
        else:
            result.pop(k, None)
    return result


class ManifestFile:
    """Where a bulk job's records go. ``resume``: the done records of the file there carry over
    (and say what not to fetch); otherwise it starts empty."""

    def __init__(self, path: "os.PathLike[str] | str", resume: bool) -> None:
        self.path = os.fspath(path)
        self.parquet = _is_parquet(self.path)
        if self.parquet:
            _pyarrow()  # fail now, not at the end
        previous = read(self.path) if resume and os.path.exists(self.path) else []
        self.done = done(previous)
        self._records: List[Dict[str, Any]] = [r for rs in self.done.values() for r in rs]
        self._file: Any = None
        if not self.parquet:
            directory = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(directory, exist_ok=True)
            # Written to a new file under a name nobody can guess, renamed into place, and
            # appended to through the same descriptor: nothing planted at either name is followed.
            temp, fd = _exclusive_temporary(self.path)
            f = os.fdopen(fd, "a", encoding="utf-8")
            try:
                for r in self._records:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
                f.flush()
                os.replace(temp, self.path)
            except BaseException:
                f.close()
                _unlink_quietly(temp)
                raise
            self._file = f

    def take(self, url: str, name: Optional[str], index: int) -> Optional[Dict[str, Any]]:
        """The done record of an input line, if the manifest has one: the record of its index, or
        (the list changed) another of its URL, recorded again under this index."""
        records = self.done.get(key(url, name))
        if not records:
            return None
        for r in records:
            if r.get("index") == index:
                return r
        moved = dict(records[0], index=index)
        records.append(moved)
        self.add(moved)
        return moved

    def add(self, r: Dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(r, ensure_ascii=False) + "\n")
            self._file.flush()
        else:
            self._records.append(r)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            return
        if self.parquet:
            pa = _pyarrow()
            # The columns and their types from protocol/schema/manifest-record.schema.json.
            # (A ``json`` field, a table's kept columns, is stored as its JSON text.)
            column = {"int": pa.int64(), "str": pa.string(), "enum": pa.string(), "json": pa.string()}
            error = pa.struct([(name, column[kind]) for name, kind in ERROR_TYPES.items()])
            schema = pa.schema([(name, error if kind == "dict" else column[kind]) for name, kind in TYPES.items()])
            rows = [{f: json.dumps(r[f]) if TYPES[f] == "json" and r.get(f) is not None else r.get(f) for f in FIELDS}
                    for r in sorted(self._records, key=lambda r: r.get("index", 0))]
            temp, fd = _exclusive_temporary(self.path)
            try:
                with os.fdopen(fd, "wb") as f:
                    pa.parquet.write_table(pa.Table.from_pylist(rows, schema=schema), f)
                os.replace(temp, self.path)
            except BaseException:
                _unlink_quietly(temp)
                raise


def _exclusive_temporary(path: str) -> Tuple[str, int]:
    """A new file beside ``path``, ``PATH.tmp-RANDOM``, made exclusively (``O_EXCL``, no link
    followed) and open for writing: its name and descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(16):
        temp = f"{path}.tmp-{secrets.token_hex(8)}"
        try:
            return temp, os.open(temp, flags, 0o644)
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot make a temporary file beside {path}")


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
