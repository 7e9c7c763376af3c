"""``image-worker get --output-format webdataset`` read back as its users read it: Python's
``tarfile`` and the ``webdataset`` package (PyPI) iterate the samples (and img2dataset's ``files``
layout, a folder a shard); the images decode, captions
and metadata are there, and the stats count every row of the table."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path
from typing import Any, Dict, Iterator, Sequence

import image_worker
import pytest
from loopback import REPO, LoopbackServer

# Required, not skipped: clients/test.sh installs them.
import webdataset  # type: ignore[import-not-found, import-untyped, unused-ignore]  # noqa: E402
from PIL import Image  # type: ignore[import-not-found, unused-ignore]  # noqa: E402


def test_shards_read_back_with_tarfile_and_webdataset(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    rows = [("testorig.jpg", "a boat, at sea"), ("missing.jpg", "gone"), ("test.webp", 'a "webp"'),
            ("testimgp.jpg", "two\nlines"), ("testorig.jpg?robots=noimageai", "opted out")]
    table = tmp_path / "rows.csv"
    with table.open("w", newline="") as f:
        import csv
        writer = csv.writer(f)
        writer.writerow(["url", "caption", "n"])
        for n, (name, caption) in enumerate(rows):
            writer.writerow([server.url(f"/files/{name}"), caption, n])
    out = tmp_path / "shards"
    run = subprocess.run([binary, "get", "-i", str(table), "--caption-col", "caption", "--save-columns", "n",
                          "--output-format", "webdataset", "--shard-size", "2", "-o", str(out),
                          "--width", "64", "--height", "64", "--format", "jpeg"], capture_output=True, text=True)
    assert run.returncode == 1, run.stderr  # the 404 and the opt-out
    shards = sorted(str(p) for p in out.glob("*.tar"))
    assert [Path(p).name for p in shards] == ["00000.tar", "00001.tar", "00002.tar"]
    with tarfile.open(shards[0]) as tar:
        assert tar.getnames() == ["000000.jpg", "000000.txt", "000000.json"]
        meta = json.loads(tar.extractfile("000000.json").read())  # type: ignore[union-attr]
    assert meta["caption"] == "a boat, at sea" and meta["n"] == "0" and meta["status"] == "success"
    assert (meta["width"], meta["height"], meta["original_width"], meta["original_height"]) == (64, 64, 227, 149)
    samples = list(webdataset.WebDataset(shards, shardshuffle=False))
    assert [s["__key__"] for s in samples] == ["000000", "000010", "000011"]
    by_key = {s["__key__"]: s for s in samples}
    assert by_key["000011"]["txt"].decode() == "two\nlines"
    assert json.loads(by_key["000010"]["json"])["caption"] == 'a "webp"'
    for sample in samples:
        assert Image.open(io.BytesIO(sample["jpg"])).size == (64, 64)
    stats = [json.loads((out / f"{n:05d}_stats.json").read_text()) for n in range(3)]
    assert sum(s["count"] for s in stats) == len(rows)
    assert [s["successes"] for s in stats] == [1, 2, 0]
    assert stats[0]["failed_to_download"] == 1 and stats[2]["opted_out"] == 1
    assert image_worker.OptedOut.name in stats[2]["errors"]


def test_download_dataset_to_img2datasets_files_layout(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """``output_format="files"``: img2dataset's default layout, a folder a shard with each sample's
    image, caption and metadata, read back as its users do (a glob of the images and the files
    beside them); the result names the folders, and a resumed run keeps them."""
    rows = [{"url": server.url("/files/testorig.jpg"), "caption": "a boat"}, {"url": server.url("/files/missing.jpg"), "caption": "gone"},
            {"url": server.url("/files/test.webp"), "caption": "a webp"}]
    out = tmp_path / "files"
    result = image_worker.download_dataset(iter(rows), out, caption_col="caption", shard_size=2, output_format="files",
                                           binary=binary, width=32, height=32, format="jpeg")
    assert (result.count, result.successes, result.exit_status) == (3, 2, 1)
    assert result.shards == [str(out / "00000"), str(out / "00001")]
    assert sorted(p.name for p in out.iterdir()) == ["00000", "00000.parquet", "00000_stats.json",
                                                    "00001", "00001.parquet", "00001_stats.json"]
    samples = {}
    for image in sorted(out.glob("*/*.jpg")):
        meta = json.loads(image.with_suffix(".json").read_text())
        samples[meta["key"]] = (image.with_suffix(".txt").read_text(), meta["status"], Image.open(image).size)
    assert samples == {"000000": ("a boat", "success", (32, 32)), "000010": ("a webp", "success", (32, 32))}
    assert result.status == {"success": 2, "failed_to_download": 1}
    hits = server.hits.get("/files/test.webp", 0)
    again = image_worker.download_dataset(iter(rows), out, caption_col="caption", shard_size=2, output_format="files",
                                          binary=binary, width=32, height=32, format="jpeg", resume=True)
    assert again.shards == result.shards and server.hits.get("/files/test.webp", 0) == hits


def test_download_dataset_takes_dataframes_and_arrow_tables(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """A pandas DataFrame or a pyarrow Table, as img2dataset's users hold their tables, read a batch
    at a time (iterating one gives column names, not rows): numpy's numbers are numbers, missing
    values null; a column the table lacks and rows that are not mappings are the caller's errors."""
    import pandas  # type: ignore[import-not-found, import-untyped, unused-ignore]
    import pyarrow as pa  # type: ignore[import-not-found, import-untyped, unused-ignore]
    frame = pandas.DataFrame({"url": [server.url("/files/test.webp"), server.url("/files/testorig.jpg")],
                              "caption": ["a webp", None], "score": [0.5, float("nan")], "n": [3, 4]})
    for name, table in (("pandas", frame), ("arrow", pa.Table.from_pandas(frame))):
        out = tmp_path / name
        result = image_worker.download_dataset(table, out, caption_col="caption", save_columns=["score", "n"], shard_size=5,
                                               binary=binary, max_pixel_size=20, format="png")
        assert (result.count, result.successes) == (2, 2), name
        with tarfile.open(out / "00000.tar") as tar:
            first = json.loads(tar.extractfile("000000.json").read())  # type: ignore[union-attr]
            second = json.loads(tar.extractfile("000001.json").read())  # type: ignore[union-attr]
        assert (first["caption"], first["score"], first["n"]) == ("a webp", 0.5, 3), (name, first)
        assert second.get("caption") is None and second["score"] is None and second["n"] == 4, (name, second)
        with pytest.raises(ValueError, match="no column 'link'"):
            image_worker.download_dataset(table, out, url_col="link", binary=binary)
    with pytest.raises(TypeError, match="mappings"):
        image_worker.download_dataset([server.url("/files/test.webp")], tmp_path / "strings", binary=binary)


@pytest.mark.parametrize("compression", ["snappy", "zstd", "through pyarrow"])
def test_download_dataset_from_a_parquet_table_to_parquet_shards(binary: str, server: LoopbackServer, tmp_path: Path,
                                                                  compression: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Parquet table in (Snappy and ZSTD: handed to the worker as it is; one with a codec it
    could not read goes through pyarrow, streamed), Parquet shards out: one row per input row, the
    images' bytes in the ``jpg`` column, img2dataset's fields beside them, read back with pyarrow."""
    import pyarrow as pa  # type: ignore[import-not-found, import-untyped, unused-ignore]
    import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
    names = ["testorig.jpg", "missing.jpg", "test.webp", "testorig.jpg?robots=noai", "testimgp.jpg"]
    table = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"link": [server.url(f"/files/{n}") for n in names], "text": [f"caption {i}" for i in range(5)],
                             "license": ["cc-by", "cc0", None, "mit", "x"], "unused": list(range(5))}), table,
                   compression="snappy" if compression == "through pyarrow" else compression)
    if compression == "through pyarrow":
        monkeypatch.setattr(image_worker._dataset, "_WORKER_CODECS", ("UNCOMPRESSED",))
    read, through = image_worker._dataset.parquet_rows, []

    def spy(path: str, columns: Sequence[str]) -> Iterator[Dict[str, Any]]:
        through.append(path)
        return read(path, columns)
    monkeypatch.setattr(image_worker._dataset, "parquet_rows", spy)
    out = tmp_path / "shards"
    result = image_worker.download_dataset(table, out, url_col="link", caption_col="text", save_columns=["license"],
                                           output_format="parquet", shard_size=2, binary=binary,
                                           width=32, height=32, fit="cover", format="jpeg", concurrency=4)
    assert (result.count, result.successes, result.failed) == (5, 3, 2)
    assert bool(through) == (compression == "through pyarrow"), through
    assert result.status == {"success": 3, "failed_to_download": 1, "opted_out": 1}
    assert result.errors == {"InvalidDownloadStatusCode": 1, "OptedOut": 1} and result.exit_status == 1
    assert [Path(p).name for p in result.shards] == ["00000.parquet", "00001.parquet", "00002.parquet"]
    rows = [r for p in result.shards for r in pq.read_table(p).to_pylist()]
    assert [r["key"] for r in rows] == ["00000" + k for k in ("0", "1")] + ["00001" + k for k in ("0", "1")] + ["000020"]
    assert [r["status"] for r in rows] == ["success", "failed_to_download", "success", "opted_out", "success"]
    assert [r["caption"] for r in rows] == [f"caption {i}" for i in range(5)]
    assert [r["license"] for r in rows] == ["cc-by", "cc0", None, "mit", "x"]
    assert "404" in rows[1]["error_message"] and rows[1]["jpg"] is None
    first = rows[0]
    assert Image.open(io.BytesIO(first["jpg"])).size == (32, 32) and first["bytes"] == len(first["jpg"])
    photo = (REPO / "samples" / "testorig.jpg").read_bytes()
    assert first["original_bytes"] == len(photo) and (first["original_width"], first["original_height"]) == (227, 149)
    import hashlib
    assert first["sha256"] == hashlib.sha256(photo).hexdigest() and first["url"] == server.url("/files/testorig.jpg")


def test_download_dataset_from_rows_with_a_first_shard_and_resume(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """Rows given in Python; shards numbered from ``first_shard`` (a distributed task's part of a
    table); a resumed run keeps the complete shards and fetches nothing again; opt-outs can be
    turned off; an option ``get`` does not have is the caller's error."""
    rows = [{"url": server.url("/files/testorig.jpg?robots=noai"), "caption": "a"},
            {"url": server.url("/files/test.webp"), "caption": "b"}, {"url": server.url("/files/testimgp.jpg")}]
    out = tmp_path / "part"
    result = image_worker.download_dataset(iter(rows), out, caption_col="caption", shard_size=2, first_shard=7,
                                           binary=binary, disallowed_header_directives=[], max_pixel_size=40, format="jpeg")
    assert (result.count, result.successes, result.exit_status) == (3, 3, 0)
    assert sorted(p.name for p in out.iterdir()) == ["00007.parquet", "00007.tar", "00007_stats.json",
                                                    "00008.parquet", "00008.tar", "00008_stats.json"]
    with tarfile.open(out / "00008.tar") as tar:
        assert tar.getnames() == ["000080.jpg", "000080.txt", "000080.json"]  # (no caption: an empty one)
    hits = server.hits.get("/files/test.webp", 0)
    again = image_worker.download_dataset(iter(rows), out, caption_col="caption", shard_size=2, first_shard=7,
                                          binary=binary, disallowed_header_directives=[], resume=True)
    assert again.count == 3 and server.hits.get("/files/test.webp", 0) == hits == 1
    with pytest.raises(TypeError, match="no_such_option"):
        image_worker.download_dataset(iter(rows), out, binary=binary, no_such_option=1)
    with pytest.raises(ValueError, match="output_format"):
        image_worker.download_dataset(iter(rows), out, binary=binary, output_format="tfrecord")


def test_get_reads_the_parquet_tables_pyarrow_writes(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """``get -i table.parquet`` reads pyarrow's files as pandas, DuckDB, Spark and Polars users make
    them: Snappy with dictionaries (the default), v2 data pages in several row groups, uncompressed
    PLAIN pages, ZSTD, GZIP, Brotli and LZ4, and the v2 writers' DELTA and BYTE_STREAM_SPLIT
    encodings, with nulls and numbers, booleans and doubles in the kept columns; a nested column is
    refused by name, before anything is fetched."""
    import pyarrow as pa  # type: ignore[import-not-found, import-untyped, unused-ignore]
    import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
    n = 23
    names = ["testorig.jpg", "missing.jpg", "test.webp"]
    table = pa.table({"URL": [server.url(f"/files/{names[i % 3]}?i={i}") for i in range(n)],
                      "TEXT": [None if i % 5 == 0 else f"légende {i}" for i in range(n)],
                      "NSFW": ["UNLIKELY" if i % 2 else None for i in range(n)],
                      "similarity": [0.25 * i for i in range(n)],
                      "width": pa.array([i if i % 3 else None for i in range(n)], pa.int32()),
                      "flag": [i % 2 == 0 for i in range(n)],
                      "tags": [["a", "b"]] * n})
    v2_encodings = {"URL": "DELTA_BYTE_ARRAY", "TEXT": "DELTA_LENGTH_BYTE_ARRAY", "NSFW": "DELTA_BYTE_ARRAY",
                    "similarity": "BYTE_STREAM_SPLIT", "width": "DELTA_BINARY_PACKED"}
    variants = {"snappy": {}, "v2": dict(data_page_version="2.0", row_group_size=5),
                "plain": dict(compression="none", use_dictionary=False, row_group_size=4, data_page_size=64),
                "zstd": dict(compression="zstd"), "gzip": dict(compression="gzip", row_group_size=9),
                "brotli": dict(compression="brotli"), "lz4": dict(compression="lz4", data_page_version="2.0"),
                "delta": dict(use_dictionary=False, column_encoding=v2_encodings, compression="zstd", data_page_version="2.0",
                              row_group_size=7, data_page_size=100)}
    records = {}
    for name, options in variants.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(table, path, **options)
        manifest = tmp_path / f"{name}.jsonl"
        run = subprocess.run([binary, "get", "-i", str(path), "--url-col", "URL", "--caption-col", "TEXT",
                              "--save-columns", "NSFW,similarity,width,flag", "-o", str(tmp_path / name),
                              "--manifest", str(manifest), "--no-progress"], capture_output=True, text=True)
        assert run.returncode == 1, run.stderr  # the 404s
        lines = [json.loads(line) for line in manifest.read_text().splitlines()]
        records[name] = sorted(({k: v for k, v in r.items() if k not in ("ms", "path")} for r in lines), key=lambda r: r["index"])
    assert all(records[name] == records["snappy"] for name in variants), {n: r[:2] for n, r in records.items()}
    rows = records["snappy"]
    assert len(rows) == n and [r["index"] for r in rows] == list(range(n))
    assert "caption" not in rows[0] and rows[1]["caption"] == "légende 1"
    assert rows[3]["columns"] == {"NSFW": "UNLIKELY", "similarity": 0.75, "width": None, "flag": False}
    assert [r["outcome"] for r in rows[:3]] == ["ok", "failed", "ok"]
    before = dict(server.hits)
    run = subprocess.run([binary, "get", "-i", str(tmp_path / "snappy.parquet"), "--url-col", "URL", "--save-columns", "tags",
                          "-o", str(tmp_path / "nested"), "--manifest", str(tmp_path / "nested.jsonl")], capture_output=True, text=True)
    assert run.returncode == 64 and "nested" in run.stderr, run.stderr
    assert server.hits == before  # refused before anything is fetched


def test_a_table_damaged_past_its_start_ends_the_run_with_what_was_read(binary: str, server: LoopbackServer,
                                                                          tmp_path: Path) -> None:
    """``get`` counts a Parquet table from its footer and checks it there; a page damaged in a later
    row group is met only when it is read: the rows before it are fetched and kept (the first
    shard), the run says where the input broke and exits 2 (Python's ``download_dataset`` raises)."""
    import pyarrow as pa  # type: ignore[import-not-found, import-untyped, unused-ignore]
    import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"url": [server.url(f"/files/test.webp?d={i}") for i in range(30)]}), path,
                   row_group_size=10, compression="none", use_dictionary=False)
    offset = pq.ParquetFile(path).metadata.row_group(1).column(0).data_page_offset
    data = bytearray(path.read_bytes())
    data[offset:offset + 6] = b"\xff" * 6
    path.write_bytes(bytes(data))
    out = tmp_path / "shards"
    run = subprocess.run([binary, "get", "-i", str(path), "--output-format", "webdataset", "--shard-size", "10", "-o", str(out),
                          "--no-progress"], capture_output=True, text=True)
    assert run.returncode == 2 and "input: " in run.stderr and "a page header cannot be read" in run.stderr, run.stderr
    assert sorted(p.name for p in out.iterdir()) == ["00000.parquet", "00000.tar", "00000_stats.json"]
    assert server.hits.get("/files/test.webp") == 10
    with pytest.raises(image_worker.ImageWorkerError, match="page header"):
        image_worker.download_dataset(path, tmp_path / "py", shard_size=10, binary=binary)


def test_a_sigint_at_a_random_moment_then_continue_gives_the_same_shards(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """SIGINT at random moments (seeded, so a failure can be replayed): whatever is left under a
    final name is a complete shard (its archive reads, its stats and table are there), and
    ``--continue`` ends with the same files as an uninterrupted run, byte for byte apart from the
    stats' times."""
    import random
    import signal
    import time
    names = ["testorig.jpg", "test.webp", "basn2c08.png", "testimgp.jpg"]
    table = tmp_path / "rows.csv"
    with table.open("w") as f:
        f.write("url,caption\n")
        for i in range(30):
            f.write(f"{server.url(f'/files/{names[i % 4]}?i={i}&chunk=4096&delayMs={(i * 37) % 60}')},row {i}\n")

    def arguments(out: Path) -> list:
        return [binary, "get", "-i", str(table), "--caption-col", "caption", "--output-format", "webdataset",
                "--shard-size", "4", "-o", str(out), "--width", "32", "--height", "32", "--format", "png", "-j", "3",
                "--no-progress"]

    def contents(out: Path) -> dict:
        files = {}
        for path in sorted(out.iterdir()):
            data = path.read_bytes()
            if path.name.endswith("_stats.json"):
                stats = json.loads(data)
                for key in ("start_time", "end_time", "duration"):
                    stats.pop(key)
                data = json.dumps(stats, sort_keys=True).encode()
            files[path.name] = data
        return files

    whole = tmp_path / "whole"
    assert subprocess.run(arguments(whole), capture_output=True).returncode == 0
    expected = contents(whole)
    assert len(expected) == 8 * 3
    rng = random.Random(62)
    interrupted = 0
    for attempt in range(3):
        out = tmp_path / f"cut{attempt}"
        process = subprocess.Popen(arguments(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 0.6))
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=60)
        assert status in (0, 130)
        interrupted += status == 130
        for stats in out.glob("*_stats.json"):
            shard = stats.name[: -len("_stats.json")]
            with tarfile.open(out / f"{shard}.tar") as tar:
                assert len(tar.getnames()) == 4 * 3, shard
            assert (out / f"{shard}.parquet").read_bytes()[:4] == b"PAR1"
        assert not [p.name for p in out.iterdir() if p.name.endswith(".partial") or p.name.startswith(".staging")]
        assert subprocess.run(arguments(out) + ["--continue"], capture_output=True).returncode == 0
        assert contents(out) == expected, f"attempt {attempt}"
    assert interrupted >= 2, "most runs were cut while under way"


def test_ctrl_c_in_python_stops_the_worker_once_and_resume_finishes(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """A script's Ctrl-C (SIGINT to the Python process) mid-run: ``download_dataset`` passes one
    SIGINT to its worker, which keeps the complete shards and drops the rest (no ``.partial``,
    no staging folder), then raises ``KeyboardInterrupt``; ``resume=True`` finishes the set."""
    import signal
    import sys
    import time
    table = tmp_path / "rows.csv"
    with table.open("w") as f:
        f.write("url\n")
        for i in range(24):
            f.write(server.url(f"/files/testorig.jpg?i={i}&chunk=2048&delayMs={40 if i >= 8 else 0}") + "\n")
    out = tmp_path / "shards"
    script = (f"import image_worker\nimage_worker.download_dataset({str(table)!r}, {str(out)!r}, shard_size=4, "
              f"binary={binary!r}, concurrency=2)\n")
    process = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (out / "00001_stats.json").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert "KeyboardInterrupt" in stderr
    left = sorted(p.name for p in out.iterdir())
    assert left and all(name.endswith((".tar", ".parquet", "_stats.json")) for name in left), left
    assert "00005_stats.json" not in left, "stopped before the end"
    for stats in out.glob("*_stats.json"):
        with tarfile.open(out / stats.name.replace("_stats.json", ".tar")) as tar:
            assert len(tar.getnames()) == 4 * 2
    result = image_worker.download_dataset(table, out, shard_size=4, binary=binary, resume=True)
    assert (result.count, result.successes, len(result.shards)) == (24, 24, 6)
