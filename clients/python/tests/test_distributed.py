"""image_worker.distributed in Ray's local mode: thousands of URLs, failures, a killed worker
process, a killed actor, and a resumed run. Skipped where Ray is not installed (.ci/run installs it)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

ray = pytest.importorskip("ray")

from image_worker.distributed import download_distributed, iter_distributed, make_actors, read_urls  # noqa: E402
from loopback import LoopbackServer  # noqa: E402


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    import image_worker
    source = Path(__file__).resolve().parent.parent / "src"
    if source in Path(image_worker.__file__).resolve().parents:
        # The package is imported from the source tree: Ray's workers import it from there too.
        runtime_env = {"env_vars": {"PYTHONPATH": str(source) + os.pathsep + os.environ.get("PYTHONPATH", "")}}
    else:
        runtime_env = {}  # installed (from the wheel, by scripts/package-check.sh --ray): as a user has it
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env=runtime_env)
    yield
    ray.shutdown()


def by_index(records: List[Dict[str, Any]]) -> Dict[int, Dict[str, Any]]:
    assert len({r["index"] for r in records}) == len(records), "no URL counted twice"
    return {r["index"]: r for r in records}


def test_thousands_of_urls_one_record_each(cluster: None, binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    urls = [server.url(f"/files/{'testorig.jpg' if i % 2 else 'basn2c08.png'}?n={i}") for i in range(2000)]
    for i in range(0, 2000, 100):
        urls[i] = server.url(f"/status/404?n={i}")
    manifest = tmp_path / "job.jsonl"
    records = download_distributed(urls, dir=str(tmp_path / "out"), actors=2, shard_size=250, concurrency=8,
                                   manifest=str(manifest), progress=False, binary=binary, max_retries=0)
    assert len(records) == 2000 and [r["index"] for r in records] == list(range(2000))
    failed = [r for r in records if r["outcome"] == "failed"]
    assert len(failed) == 20 and all(r["error"]["name"] == "InvalidDownloadStatusCode" for r in failed)
    ok = records[1]
    assert ok["outcome"] == "ok" and ok["path"].endswith("/00000/000000001.jpg") and ok["width"] == 227
    assert {r["shard"] for r in records} == set(range(8))
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert len(written) == 1980, "every success a file of its own: names by shard and index"
    assert len(manifest.read_text().splitlines()) == 2000


def test_a_killed_worker_process_and_a_killed_actor_lose_nothing(cluster: None, binary: str, server: LoopbackServer,
                                                                  tmp_path: Path) -> None:
    actors = make_actors(2, binary)
    urls = [server.url(f"/files/testorig.jpg?chunk=2000&delayMs=20&n={i}") for i in range(240)]
    pid = ray.get(actors[0].pid.remote())
    records: List[Dict[str, Any]] = []
    killed = {"worker": False, "actor": False}
    for r in iter_distributed(urls, dir=str(tmp_path), actors=actors, shard_size=30, concurrency=4, progress=False,
                              max_retries=0):
        records.append(r)
        if len(records) == 30 and not killed["worker"]:
            os.kill(pid, signal.SIGKILL)  # the worker process under a running actor
            killed["worker"] = True
        if len(records) == 90 and not killed["actor"]:
            ray.kill(actors[1], no_restart=True)  # an actor (as if its node went away)
            killed["actor"] = True
    assert killed == {"worker": True, "actor": True}
    got = by_index(records)
    assert sorted(got) == list(range(240)), "every URL, once"
    assert all(r["outcome"] in ("ok", "skipped") for r in records), [r for r in records if r["outcome"] not in ("ok", "skipped")][:3]
    assert ray.get(actors[0].worker_restarts.remote()) >= 1


def test_an_interrupted_run_resumes_with_only_the_missing_urls(cluster: None, binary: str, server: LoopbackServer,
                                                               tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(server.url(f"/files/basn2c08.png?n={i}") + "\n" for i in range(120)))
    manifest = tmp_path / "job.jsonl"
    first = []
    for r in iter_distributed(str(urls), dir=str(tmp_path / "out"), actors=1, shard_size=20, progress=False,
                              manifest=str(manifest), binary=binary):
        first.append(r)
        if len(first) == 40:
            break
    assert len(first) == 40
    hits = server.hits["/files/basn2c08.png"]
    rest = download_distributed(str(urls), dir=str(tmp_path / "out"), actors=1, shard_size=20, progress=False,
                                manifest=str(manifest), resume=True, binary=binary)
    assert [r["index"] for r in rest] == list(range(120))
    assert server.hits["/files/basn2c08.png"] - hits <= 80, "the 40 done are not fetched again"
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert sorted({r["index"] for r in records}) == list(range(120))


def test_a_parquet_file_of_the_records(cluster: None, binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    urls = [server.url(f"/files/testorig.jpg?n={i}") for i in range(40)] + [server.url("/status/500")]
    download_distributed(urls, dir=str(tmp_path / "out"), actors=1, shard_size=16, progress=False, binary=binary,
                         manifest=str(tmp_path / "job.parquet"), max_retries=0)
    rows = pq.read_table(str(tmp_path / "job.parquet")).to_pylist()
    assert sorted(r["index"] for r in rows) == list(range(41))
    assert {r["shard"] for r in rows} == {0, 1, 2}
    assert [r["error"]["name"] for r in rows if r["outcome"] == "failed"] == ["InvalidDownloadStatusCode"]


def test_url_sources(tmp_path: Path) -> None:
    text = tmp_path / "u.txt"
    text.write_text("# list\nhttp://a/1.jpg\n\nhttp://a/2.jpg\tcats/2.jpg\n")
    assert list(read_urls(str(text))) == ["http://a/1.jpg", ("http://a/2.jpg", "cats/2.jpg")]
    table = tmp_path / "u.csv"
    table.write_text("id,link\n1,http://a/1.jpg\n2,\n3,http://a/3.jpg\n")
    assert list(read_urls(str(table), column="link")) == ["http://a/1.jpg", "http://a/3.jpg"]
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"url": ["http://a/1.jpg", None, "http://a/3.jpg"]}), str(tmp_path / "u.parquet"))
    assert list(read_urls(str(tmp_path / "u.parquet"))) == ["http://a/1.jpg", "http://a/3.jpg"]


def test_a_dataset_on_ray_has_the_layout_of_one_machine(cluster: None, binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """``download_dataset_distributed``: a CSV table cut into shards, a Ray task each, writing into
    one folder; the shards, their Parquet tables and stats are the ones ``download_dataset`` writes
    on one machine (byte for byte, apart from the stats' times); a resumed run runs nothing again."""
    import csv
    import tarfile

    from image_worker import download_dataset
    from image_worker.distributed import download_dataset_distributed
    table = tmp_path / "rows.csv"
    with table.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["url", "caption"])
        for i in range(23):
            name = "missing.jpg" if i % 7 == 3 else ("testorig.jpg" if i % 2 else "test.webp")
            writer.writerow([server.url(f"/files/{name}?n={i}"), f"row {i}"])
    options: Dict[str, Any] = dict(caption_col="caption", shard_size=5, binary=binary, width=24, height=24,
                                   format="jpeg", max_retries=0)
    spread = download_dataset_distributed(str(table), str(tmp_path / "ray"), tasks=3, **options)
    alone = download_dataset(table, tmp_path / "alone", **options)
    assert (spread.count, spread.successes) == (alone.count, alone.successes) == (23, 20)
    assert spread.status == alone.status and spread.exit_status == 1
    names = sorted(p.name for p in (tmp_path / "ray").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "alone").iterdir()) and len(names) == 15
    for name in names:
        a, b = (tmp_path / "ray" / name).read_bytes(), (tmp_path / "alone" / name).read_bytes()
        if name.endswith("_stats.json"):
            x, y = json.loads(a), json.loads(b)
            for key in ("start_time", "end_time", "duration"):
                x.pop(key), y.pop(key)
            assert x == y, name
        else:
            assert a == b, name
    with tarfile.open(tmp_path / "ray" / "00004.tar") as tar:
        assert tar.getnames()[:3] == ["000040.jpg", "000040.txt", "000040.json"]
    before = dict(server.hits)
    again = download_dataset_distributed(str(table), str(tmp_path / "ray"), tasks=3, resume=True, **options)
    assert again.count == 23 and server.hits == before
    # Resumed at another shard size, the shards would mix: refused, nothing fetched.
    with pytest.raises(ValueError, match="shards of 5 rows where this run's hold 4"):
        download_dataset_distributed(str(table), str(tmp_path / "ray"), tasks=3, resume=True, **dict(options, shard_size=4))
    assert server.hits == before
