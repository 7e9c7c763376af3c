"""Bulk jobs users can re-run: names, manifests, resume, verified originals, streaming results."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from image_worker import (AsyncWorker, Cancelled, InvalidDownloadStatusCode, NetworkError, UnsupportedFormat, Worker,
                          WorkerExited, download_many, iter_downloads)
from image_worker._bulk import entry_options
from image_worker._options import download_params
from loopback import LoopbackServer
from protocol_files import Schemas

SCHEMAS = Schemas()


def read_manifest(path: Path) -> List[Dict[str, Any]]:
    """The manifest's records, each checked against protocol/schema/manifest-record.schema.json."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        assert not SCHEMAS.problems(record, "manifest-record.schema.json"), record
    return records


def test_index_placeholders_go_to_the_worker_with_the_entrys_index() -> None:
    params = download_params("http://h/a.jpg", 1, entry_options({"dir": "/tmp", "name_template": "p{index:3}.{ext}"}, 7, None))
    assert params["output"]["nameTemplate"] == "p{index:3}.{ext}" and params["output"]["index"] == 7
    named = download_params("http://h/a.jpg", 1, entry_options({"dir": "/tmp", "name_template": "p{index}"}, 7, "mine.png"))
    assert named["output"] == {"dir": "/tmp", "name": "mine.png", "delivery": "file"}


def test_names_manifest_and_a_rerun_that_fetches_nothing(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    out = tmp_path / "images"
    manifest = tmp_path / "job.jsonl"
    urls: List[Any] = [server.url("/files/testorig.jpg"), server.url("/text"), server.url("/status/404"),
                       (server.url("/files/basn2c08.png"), "named/chosen.png"), server.url("/files/testorig.jpg")]
    outcomes = download_many(urls, str(out), name_template="p{index:3}.{ext}", manifest=str(manifest), progress=False,
                             max_retries=0, binary=binary)
    assert [o.index for o in outcomes] == [0, 1, 2, 3, 4]
    assert [o.ok for o in outcomes] == [True, False, False, True, True]
    assert isinstance(outcomes[1].error, UnsupportedFormat), "verified by default: text is not saved"
    assert isinstance(outcomes[2].error, InvalidDownloadStatusCode)
    assert outcomes[0].image is not None and outcomes[0].image.path == str(out / "p000.jpg")
    assert outcomes[3].image is not None and outcomes[3].image.path == str(out / "named" / "chosen.png")
    assert outcomes[4].image is not None and outcomes[4].image.path == str(out / "p004.jpg"), "duplicates get their own name"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == ["named/chosen.png", "p000.jpg", "p004.jpg"]

    records = {r["index"]: r for r in read_manifest(manifest)}
    assert sorted(records) == [0, 1, 2, 3, 4], "one record per input URL"
    original = (out / "p000.jpg").read_bytes()
    assert records[0]["outcome"] == "ok" and records[0]["sha256"] == hashlib.sha256(original).hexdigest()
    assert (records[0]["width"], records[0]["height"], records[0]["format"], records[0]["bytes"]) == (227, 149, "jpeg", len(original))
    assert records[1]["outcome"] == "failed" and records[1]["error"]["name"] == "UnsupportedFormat"
    assert records[2]["error"]["name"] == "InvalidDownloadStatusCode"
    assert records[3]["name"] == "named/chosen.png"
    assert "ms" in records[0]

    hits = dict(server.hits)
    again = download_many(urls, str(out), name_template="p{index:3}.{ext}", manifest=str(manifest), resume=True,
                          progress=False, max_retries=0, binary=binary)
    assert [o.ok for o in again] == [True, False, False, True, True]
    assert all(o.skipped for o in again if o.ok), "the finished URLs come from the manifest"
    assert server.hits["/files/testorig.jpg"] == hits["/files/testorig.jpg"], "no request for what was done"
    assert server.hits["/files/basn2c08.png"] == hits["/files/basn2c08.png"]
    assert server.hits["/text"] == hits["/text"] + 1, "what failed is tried again"
    assert sorted(r["index"] for r in read_manifest(manifest)) == [0, 1, 2, 3, 4]

    # Without a manifest, skip_existing keeps the files: nothing fetched, each outcome says so.
    kept = download_many(urls[:1] + urls[3:], str(out), name_template="p{index:3}.{ext}", skip_existing=True,
                         progress=False, binary=binary)
    assert [o.skipped for o in kept] == [True, True, False], "index 2 here is p002.jpg: not there yet"
    assert server.hits["/files/testorig.jpg"] == hits["/files/testorig.jpg"] + 1, "only p002.jpg was fetched"


def test_iter_downloads_streams_in_completion_order(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    def urls() -> Any:  # a generator: read as downloads are sent
        yield server.url("/files/testimgp.jpg?chunk=500&delayMs=20")
        yield server.url("/files/testorig.jpg")
        yield server.url("/status/500")
    seen = [(o.index, o.ok) for o in iter_downloads(urls(), str(tmp_path), max_retries=0, binary=binary)]
    assert sorted(seen) == [(0, True), (1, True), (2, False)]
    assert seen[-1] == (0, True), "the slow one ends last"


def test_an_endless_input_is_read_only_a_window_ahead(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    pulled = 0

    def urls() -> Any:  # never ends
        nonlocal pulled
        n = 0
        while True:
            pulled += 1
            n += 1
            yield server.url(f"/files/basn2c08.png?{n}")
    got = 0
    for outcome in iter_downloads(urls(), str(tmp_path), concurrency=2, max_retries=0, binary=binary):
        assert outcome.ok
        got += 1
        if got == 50:
            break
    # The window at concurrency 2 is 34: what was pulled is what ended plus at most that.
    assert 50 < pulled <= 50 + 34 + 1, pulled


def test_leaving_early_cancels_the_rest_and_the_manifest_keeps_what_ended(binary: str, server: LoopbackServer,
                                                                          tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"
    urls = [server.url("/files/testorig.jpg"), server.url("/hang"), server.url("/hang?2")]
    with Worker(binary) as worker:
        for outcome in worker.iter_downloads(urls, str(tmp_path), manifest=str(manifest), timeout_ms=60_000):
            assert outcome.ok and outcome.index == 0
            break  # the generator is closed: the hanging ones are cancelled
        assert worker.status()["queued"] == 0 and worker.status()["running"] == 0
    records = {r["index"]: r["outcome"] for r in read_manifest(manifest)}
    assert records == {0: "ok", 1: "cancelled", 2: "cancelled"}


def test_a_killed_worker_then_a_resumed_job(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"
    urls = [server.url("/files/testorig.jpg"), server.url("/files/basn2c08.png"), server.url("/hang")]
    worker = Worker(binary)
    got: List[Any] = []
    for outcome in worker.iter_downloads(urls, str(tmp_path), manifest=str(manifest), timeout_ms=60_000):
        got.append(outcome)
        if len(got) == 2:
            os.kill(worker.pid, signal.SIGKILL)
    worker.close()
    assert sorted(o.index for o in got if o.ok) == [0, 1]
    assert [type(o.error) for o in got if not o.ok] == [WorkerExited]
    records = {r["index"]: r["outcome"] for r in read_manifest(manifest)}
    assert records == {0: "ok", 1: "ok", 2: "failed"}
    hits = dict(server.hits)
    server.release.set()  # /hang answers 503 at once now
    again = download_many(urls, str(tmp_path), manifest=str(manifest), resume=True, progress=False, max_retries=0,
                          binary=binary)
    assert [o.skipped for o in again] == [True, True, False]
    assert server.hits["/files/testorig.jpg"] == hits["/files/testorig.jpg"]
    assert server.hits["/hang"] == hits["/hang"] + 1


def test_deadlines_bound_hanging_hosts_and_garbage_is_refused(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    urls = [server.url("/hang"), server.url("/truncate/testorig.jpg"), server.url("/text"), server.url("/files/testorig.jpg")]
    started = time.monotonic()
    outcomes = download_many(urls, str(tmp_path), deadline_ms=500, max_retries=0, progress=False, binary=binary)
    assert time.monotonic() - started < 20
    assert isinstance(outcomes[0].error, NetworkError) and outcomes[0].error.data.get("reason") == "deadline"
    assert isinstance(outcomes[1].error, NetworkError), "a dropped connection"
    assert isinstance(outcomes[2].error, UnsupportedFormat)
    assert outcomes[3].ok and outcomes[3].image is not None and outcomes[3].image.width == 227
    assert sorted(p.name for p in tmp_path.iterdir()) == ["testorig.jpg"]


def test_parquet_manifest(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    manifest = tmp_path / "job.parquet"
    urls = [server.url("/files/testorig.jpg"), server.url("/status/404")]
    download_many(urls, str(tmp_path / "out"), manifest=str(manifest), progress=False, max_retries=0, binary=binary)
    rows = sorted(pq.read_table(str(manifest)).to_pylist(), key=lambda r: r["index"])
    assert [r["outcome"] for r in rows] == ["ok", "failed"]
    assert rows[0]["width"] == 227 and len(rows[0]["sha256"]) == 64
    assert rows[1]["error"]["name"] == "InvalidDownloadStatusCode" and rows[1]["path"] is None
    hits = server.hits["/files/testorig.jpg"]
    again = download_many(urls, str(tmp_path / "out"), manifest=str(manifest), resume=True, progress=False,
                          max_retries=0, binary=binary)
    assert again[0].skipped and server.hits["/files/testorig.jpg"] == hits


def test_asyncio_bulk_helpers(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"

    async def main() -> None:
        async with AsyncWorker(binary) as worker:
            urls = [server.url("/files/testorig.jpg"), server.url("/status/404"), server.url("/files/basn2c08.png")]
            outcomes = await worker.download_many(urls, str(tmp_path), progress=False, max_retries=0,
                                                  name_template="{index}.{ext}", manifest=str(manifest))
            assert [o.ok for o in outcomes] == [True, False, True]
            assert [o.image.path if o.image else None for o in outcomes] == [str(tmp_path / "0.jpg"), None,
                                                                              str(tmp_path / "2.png")]
            streamed = []
            async with contextlib.aclosing(worker.iter_downloads([server.url("/hang"), server.url("/files/testorig.jpg")],
                                                                 str(tmp_path / "s"), timeout_ms=60_000)) as results:
                async for outcome in results:
                    streamed.append(outcome)
                    break
            assert streamed[0].index == 1 and streamed[0].ok
            assert [(await worker.status())[k] for k in ("queued", "running")] == [0, 0], "closing the iterator cancelled the hanging one"

    asyncio.run(main())
    assert sorted(r["index"] for r in read_manifest(manifest)) == [0, 1, 2]


def test_cancelling_an_asyncio_job_keeps_what_ended(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"

    async def main() -> None:
        async with AsyncWorker(binary) as worker:
            job = asyncio.ensure_future(worker.download_many(
                [server.url("/files/testorig.jpg"), server.url("/hang")], str(tmp_path), progress=False,
                manifest=str(manifest), timeout_ms=60_000))
            for _ in range(200):
                await asyncio.sleep(0.05)
                if manifest.exists() and manifest.read_text().strip():
                    break
            job.cancel()
            with pytest.raises(asyncio.CancelledError):
                await job

    asyncio.run(main())
    assert {r["index"]: r["outcome"] for r in read_manifest(manifest)} == {0: "ok", 1: "cancelled"}
    assert Cancelled.name == "Cancelled"


def test_ctrl_c_in_the_loop_keeps_what_ended(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    # KeyboardInterrupt raised while handling a result: the rest is cancelled, the job's own worker
    # closed, and the manifest holds both the finished URL and the cancelled one.
    manifest = tmp_path / "m.jsonl"
    with pytest.raises(KeyboardInterrupt):
        for _ in iter_downloads([server.url("/files/testorig.jpg"), server.url("/hang")], str(tmp_path),
                                manifest=str(manifest), timeout_ms=60_000, binary=binary):
            raise KeyboardInterrupt
    assert {r["index"]: r["outcome"] for r in read_manifest(manifest)} == {0: "ok", 1: "cancelled"}
