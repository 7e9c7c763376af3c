"""More than one machine: a URL list fanned out over a Ray cluster, one image-worker process per
Ray actor (``pip install './clients/python[ray]'``; the rest of the package needs no Ray).

    import ray
    from image_worker.distributed import iter_distributed

    ray.init()                                   # or ray.init(address="auto") on a cluster
    for record in iter_distributed("urls.parquet", column="url", dir="/shared/images",
                                   actors=8, manifest="job.parquet"):
        ...

The driver reads the input lazily (an iterable, a text file, or a CSV/Parquet column), cuts it into
shards of ``shard_size`` URLs and hands each to an idle actor; an actor keeps one long-lived worker
process and runs a shard's downloads ``concurrency`` at a time. Every input URL ends as exactly one
record (the bulk helpers' manifest records, GUIDE.md "Manifests", plus ``shard``), whatever fails:
a worker process that dies is restarted by its actor and the shard's unfinished URLs run again; an
actor that dies (or its node) is replaced and its shard re-run from the start (files already
written are kept, ``skipped``); a shard that fails ``shard_attempts`` times gives each of its URLs
a ``failed`` record (``ShardFailed``).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import time
from collections import deque
from typing import Any, Deque, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union, cast

from ._bulk import Entry, _progress_bar, bulk_options, entries, entry_options
from ._dataset import SHARD_FILES, DatasetResult, Frame, parquet_rows, read_rows, table_columns
from ._dataset import _result as _dataset_result
from ._errors import ImageWorkerError, WorkerClosed, WorkerExited
from ._events import Event, Started
from ._manifest import ManifestFile, fill_placeholder, record
from ._options import ManyOptions, download_params

#: Files go to ``dir/SHARD/INDEX.ext``: two actors (or nodes) never write the same name, and no
#: directory holds more than one shard's files.
DEFAULT_NAME_TEMPLATE = "{shard:5}/{index:9}.{ext}"

_Line = Tuple[int, str, Optional[str]]


def _ray() -> Any:
    try:
        import ray  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError as e:
        raise ImportError("image_worker.distributed needs Ray: pip install './clients/python[ray]'") from e
    return ray


def read_urls(source: Union[str, "os.PathLike[str]", Iterable[Entry]], column: Optional[str] = None,
              name_column: Optional[str] = None) -> Iterator[Entry]:
    """URLs from a path or an iterable, streamed: a ``.parquet`` file's ``column`` (default
    ``url``; pyarrow, batch by batch), a ``.csv`` file's, or a text file's lines (``URL`` or
    ``URL<TAB>NAME``, blank and ``#`` lines skipped); ``name_column`` gives file names."""
    if not isinstance(source, (str, os.PathLike)):
        yield from source
        return
    path = os.fspath(source)
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        for row in parquet_rows(path, [column or "url"] + ([name_column] if name_column else [])):
            url = row[column or "url"]
            if url:
                name = row[name_column] if name_column else None
                yield (str(url), str(name)) if name else str(url)
        return
    with open(path, newline="", encoding="utf-8") as f:
        if lower.endswith(".csv"):
            for row in csv.DictReader(f):
                url = row.get(column or "url")
                if url:
                    name = row.get(name_column) if name_column else None
                    yield (url, name) if name else url
            return
        for line in f:
            line = line.rstrip("\r\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            url, _, name = line.partition("\t")
            yield (url.strip(), name.strip()) if name.strip() else url.strip()


class ShardRunner:
    """A Ray actor's body (``ray.remote`` is applied by :func:`make_actors`): one image-worker
    process, restarted when it dies, running one shard at a time."""

    def __init__(self, binary: Optional[str] = None) -> None:
        self.binary = binary
        self.worker: Any = None
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        from ._worker import Worker
        if self.worker is not None:
            try:
                self.worker.close(timeout=5)
            except ImageWorkerError:
                pass
        self.worker = Worker(self.binary)

    def pid(self) -> int:
        """The worker process's id (on the actor's node)."""
        return int(self.worker.pid)

    def binary_path(self) -> str:
        """The image-worker executable this actor runs (a replacement actor runs the same)."""
        return str(self.worker.binary)

    def worker_restarts(self) -> int:
        return self.restarts

    def run(self, shard: int, lines: Sequence[_Line], dir: str, options: Dict[str, Any], concurrency: int,
            format: str) -> List[Dict[str, Any]]:
        """One record per line of the shard. A worker that dies is restarted and the lines it
        had not finished run again (files already written are kept)."""
        done: Dict[int, Dict[str, Any]] = {}
        pending = list(lines)
        attempts = 0
        while pending:
            attempts += 1
            if attempts > 1:
                self._start()
                self.restarts += 1
            lost = self._run_once(shard, pending, dir, options, concurrency, format, done)
            if not lost:
                break
            if attempts >= 4:
                for index, url, name in lost:
                    done[index] = dict(record(index, url, name, None, ImageWorkerError("the worker died 4 times"),
                                              format, None), shard=shard)
                break
            pending = lost
        return [done[index] for index, _, _ in lines]

    def _run_once(self, shard: int, lines: Sequence[_Line], dir: str, options: Dict[str, Any], concurrency: int,
                  format: str, done: Dict[int, Dict[str, Any]]) -> List[_Line]:
        worker = self.worker
        started: Dict[int, float] = {}
        handles: List[Tuple[_Line, Any]] = []
        lost: List[_Line] = []
        try:
            worker.configure(max_concurrent_downloads=concurrency)
        except (WorkerExited, WorkerClosed):
            return list(lines)

        def on_event(index: int) -> Any:
            def deliver(event: Event) -> None:
                if isinstance(event, Started):
                    started.setdefault(index, time.monotonic())
            return deliver

        template = options.get("name_template")
        # {shard} is this shard's for every line; the worker fills each line's {index} from its index.
        in_shard = {**options, "name_template": fill_placeholder(template, "shard", shard)} if isinstance(template, str) else options
        for line in lines:
            index, url, name = line
            mine = entry_options(in_shard, index, name)
            try:
                handles.append((line, worker.download(url, on_event=on_event(index), dir=dir, wait=False, **mine)))
            except (WorkerExited, WorkerClosed):
                lost.append(line)
            except (ImageWorkerError, ValueError) as error:
                done[index] = dict(record(index, url, name, None, error, format, None), shard=shard)
        for line, handle in handles:
            index, url, name = line
            failure = handle.exception()
            if isinstance(failure, (WorkerExited, WorkerClosed)) and handle.completed is None:
                lost.append(line)
                continue
            start = started.get(index)
            ms = None if start is None else round((time.monotonic() - start) * 1000)
            image = None if failure is not None else handle.result()
            done[index] = dict(record(index, url, name, image, failure, format, ms), shard=shard)
        return lost


def make_actors(count: int, binary: Optional[str] = None, **actor_options: Any) -> List[Any]:
    """``count`` Ray actors, each with its own image-worker process (``binary``: its path on
    the nodes, else found there as usual). Each takes two calls at once, so ``pid()`` answers
    while a shard runs."""
    ray = _ray()
    remote = ray.remote(ShardRunner)
    return [remote.options(max_concurrency=2, **actor_options).remote(binary) for _ in range(count)]


class _Rates:
    """The driver's aggregated progress: files/s, bytes/s and failures, on tqdm or plain lines."""

    def __init__(self, total: Optional[int], progress: Any) -> None:
        self.bar = _progress_bar(total, progress, rates=True)
        self.done = 0
        self.failed = 0
        self.bytes = 0

    def add(self, r: Dict[str, Any]) -> None:
        self.done += 1
        self.failed += 1 if r.get("outcome") in ("failed", "cancelled") else 0
        self.bytes += int(r.get("bytes") or 0)

    def show(self) -> None:
        if self.bar is not None:
            self.bar.update(self.done, self.failed, self.bytes)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def iter_distributed(urls: Union[str, "os.PathLike[str]", Iterable[Entry]], *, dir: str, format: str = "original",
                     shard_size: int = 256, actors: Union[int, Sequence[Any], None] = None, concurrency: int = 8,
                     manifest: Optional[Union[str, "os.PathLike[str]"]] = None, resume: bool = False,
                     progress: Any = True, binary: Optional[str] = None, column: Optional[str] = None,
                     name_column: Optional[str] = None, name_template: str = DEFAULT_NAME_TEMPLATE,
                     shard_attempts: int = 3, **options: Any) -> Iterator[Dict[str, Any]]:
    """Yields one record per input URL as shards finish (see the module's documentation).

    ``actors``: how many to start (default: the cluster's CPUs, at least 1), or actors from
    :func:`make_actors`. ``manifest``: records are also written there (``.jsonl``, or
    ``.parquet`` at the end); with ``resume=True`` only the URLs it does not show as done are
    fetched (their records come from it). Other options are ``download``'s (``max_pixel_size``,
    ``deadline_ms``, ``max_retries``…), checked before anything starts. ``ray.init()`` is called
    (locally) when Ray is not initialized yet."""
    ray = _ray()
    for option, value in (("shard_size", shard_size), ("concurrency", concurrency), ("shard_attempts", shard_attempts)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{option} must be a positive integer, not {value!r}")
    each: Dict[str, Any] = bulk_options(dir, cast(ManyOptions, {**options, "format": format, "name_template": name_template}),
                                        manifest, resume)
    each.pop("dir", None)
    download_params("", "check", {**each, "dir": dir,
                                  "name_template": fill_placeholder(name_template, "shard", 0), "index": 0})
    if not ray.is_initialized():
        ray.init()
    own = not isinstance(actors, Sequence)
    count = actors if isinstance(actors, int) else max(1, int(ray.cluster_resources().get("CPU", 1)))
    pool: List[Any] = list(actors) if not own else make_actors(count, binary)  # type: ignore[arg-type]
    created: List[Any] = list(pool) if own else []  # killed at the end (replacements too)
    if binary is None and pool:
        binary = ray.get(pool[0].binary_path.remote())  # replacements run what the first actor runs
    idle: Deque[Any] = deque(pool)
    file = ManifestFile(manifest, resume) if manifest is not None else None
    rates = _Rates(None, progress)
    source = entries(read_urls(urls, column, name_column))
    retries: Deque[Tuple[int, List[_Line], int]] = deque()
    inflight: Dict[Any, Tuple[int, List[_Line], Any, int]] = {}
    next_shard = 0
    exhausted = False

    def take_shard() -> Optional[Tuple[int, List[_Line], int]]:
        nonlocal next_shard, exhausted
        if retries:
            return retries.popleft()
        lines: List[_Line] = []
        while not exhausted and len(lines) < shard_size:
            entry = next(source, None)
            if entry is None:
                exhausted = True
                break
            lines.append(entry)
        if not lines:
            return None
        next_shard += 1
        return next_shard - 1, lines, 1

    try:
        while True:
            carried: List[Dict[str, Any]] = []
            while idle:
                shard = take_shard()
                if shard is None:
                    break
                number, lines, attempt = shard
                if file is not None and attempt == 1:
                    kept = []
                    for index, url, name in lines:
                        previous = file.take(url, name, index)
                        if previous is not None:
                            carried.append(previous)
                        else:
                            kept.append((index, url, name))
                    lines = kept
                    if not lines:
                        break  # hand those over before reading more of the input
                actor = idle.popleft()
                options_now = dict(each)
                if attempt > 1 and not options_now.get("overwrite"):
                    options_now["skip_existing"] = True  # a re-run shard keeps what its first run wrote
                ref = actor.run.remote(number, lines, dir, options_now, concurrency, str(format))
                inflight[ref] = (number, lines, actor, attempt)
            for r in carried:
                rates.add(r)
                yield r
            if carried:
                rates.show()
            if idle and (retries or not exhausted):
                continue  # an actor is free and there is more to hand out
            if not inflight:
                break  # every actor idle and nothing left to hand out
            ready, _ = ray.wait(list(inflight), num_returns=1)
            ref = ready[0]
            number, lines, actor, attempt = inflight.pop(ref)
            try:
                records: List[Dict[str, Any]] = ray.get(ref)
            except ray.exceptions.RayError as error:
                # The actor (or its node, or the task) failed: a fresh actor, the shard again.
                dead = isinstance(error, ray.exceptions.RayActorError)
                if dead:
                    try:
                        ray.kill(actor, no_restart=True)
                    except Exception:
                        pass
                    replacement = make_actors(1, binary)[0]
                    created.append(replacement)
                    pool[pool.index(actor)] = replacement
                    idle.append(replacement)
                else:
                    idle.append(actor)
                if attempt < shard_attempts:
                    retries.append((number, lines, attempt + 1))
                    continue
                records = [dict(record(index, url, name, None, _ShardFailed(number, attempt, error), str(format), None),
                                shard=number) for index, url, name in lines]
            else:
                idle.append(actor)
            for r in records:
                if file is not None:
                    file.add(r)
                rates.add(r)
                yield r
            rates.show()
    finally:
        for ref in list(inflight):
            try:
                ray.cancel(ref, force=False)
            except Exception:
                pass
        try:
            if file is not None:
                file.close()
        finally:
            rates.close()
            for actor in created:
                try:
                    ray.kill(actor)
                except Exception:
                    pass


class _ShardFailed(ImageWorkerError):
    """A shard whose actor failed every attempt."""

    name = "ShardFailed"

    def __init__(self, shard: int, attempts: int, cause: BaseException) -> None:
        self.message = f"shard {shard} failed {attempts} times; last: {type(cause).__name__}: {cause}"
        super().__init__(self.message)


def download_dataset_distributed(table: Union[str, "os.PathLike[str]", Iterable[Mapping[str, Any]], Frame], output: str, *,
                                 tasks: int = 4, input_format: Optional[str] = None, url_col: str = "url",
                                 caption_col: Optional[str] = None, save_columns: Sequence[str] = (),
                                 verify_hash_col: Optional[str] = None, shard_size: int = 10_000, resume: bool = False,
                                 output_format: str = "webdataset", binary: Optional[str] = None,
                                 **options: Any) -> DatasetResult:
    """:func:`image_worker.download_dataset` on a Ray cluster: the table is read on the driver
    (streamed) and cut into shards of ``shard_size`` rows; each shard is one Ray task that runs
    ``image-worker get --first-shard N`` over its rows into ``output`` (a folder every node sees),
    so the layout is the one a single machine writes: ``00000.tar``, ``00001.tar``, … (or the
    folders ``00000``, … with ``output_format="files"``) with their ``.parquet`` and
    ``_stats.json``. At most ``tasks`` shards run at once (each holds its rows). ``resume``: shards
    complete in ``output`` are not run again (shards of another ``shard_size`` are refused).
    Returns every shard's stats summed."""
    ray = _ray()
    columns = table_columns(url_col, caption_col, save_columns, verify_hash_col)
    settings = dict(options, url_col=url_col, caption_col=caption_col, save_columns=list(save_columns),
                    verify_hash_col=verify_hash_col, shard_size=shard_size, output_format=output_format, binary=binary)
    run = ray.remote(_dataset_shard)
    os.makedirs(output, exist_ok=True)
    suffixes = ("_stats.json", ".parquet", SHARD_FILES.get(output_format, ".parquet"))
    pending: List[Any] = []
    worst = 0

    def settle(keep: int) -> None:
        nonlocal pending, worst
        while len(pending) > keep:
            done, pending = ray.wait(pending, num_returns=1)
            worst = max(worst, *ray.get(done))

    shard = 0
    rows: List[Dict[str, Any]] = []
    for row in itertools.chain(read_rows(table, columns, input_format), [None]):
        if row is not None:
            rows.append(row)
            if len(rows) < shard_size:
                continue
        if rows:
            name = os.path.join(output, f"{shard:05d}")
            if not (resume and _complete(name, suffixes, len(rows), shard_size, last=row is None)):
                settle(max(1, tasks) - 1)
                pending.append(run.remote(rows, output, shard, settings))
            shard += 1
            rows = []
    settle(0)
    return _dataset_result(output, output_format, worst)


def _complete(name: str, suffixes: Sequence[str], rows: int, size: int, last: bool) -> bool:
    """Whether the shard ``name`` is complete for this run, as ``get --continue`` decides: its files
    there, cut at this run's ``size`` and counting the rows this run gives it (the last shard of a
    table that grew since is written again). Shards cut at another size are refused: the two runs'
    shards would mix."""
    if not all(os.path.exists(name + s) for s in suffixes):
        return False
    with open(name + "_stats.json", encoding="utf-8") as f:
        stats = json.load(f)
    counted, cut = stats.get("count"), stats.get("shard_size")
    if (cut != size) if cut is not None else (counted != rows and not last):
        held = f"shards of {cut} rows" if cut is not None else f"{counted} rows"
        raise ValueError(f"{name}_stats.json: {held} where this run's hold {size if cut is not None else rows}: resume with "
                         "the shard_size of the run that wrote it, or into another folder")
    return bool(counted == rows)


def _dataset_shard(rows: List[Dict[str, Any]], output: str, shard: int, settings: Dict[str, Any]) -> int:
    """One shard of :func:`download_dataset_distributed`, in a Ray task: ``get``'s exit status."""
    from ._dataset import download_dataset as run
    return run(rows, output, first_shard=shard, **settings).exit_status


def download_distributed(urls: Union[str, "os.PathLike[str]", Iterable[Entry]], **options: Any) -> List[Dict[str, Any]]:
    """:func:`iter_distributed`'s records, all of them, in input order."""
    return sorted(iter_distributed(urls, **options), key=lambda r: int(r["index"]))
