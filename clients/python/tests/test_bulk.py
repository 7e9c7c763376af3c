from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from image_worker import InvalidDownloadStatusCode, InvalidURL, RequestError, Worker, download_many
from image_worker._bulk import PlainProgress
from loopback import LoopbackServer


def test_every_url_gets_an_outcome_in_order(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    urls = [server.url("/files/testorig.jpg"), server.url("/status/404"), "not a url",
            server.url("/files/basn2c08.png"), server.url("/files/testimgp.jpg?chunk=1000&delayMs=5")]
    stream = io.StringIO()
    outcomes = download_many(urls, dir=str(tmp_path), concurrency=2, progress=stream, binary=binary)
    assert [o.url for o in outcomes] == urls
    assert [o.ok for o in outcomes] == [True, False, False, True, True]
    assert isinstance(outcomes[1].error, InvalidDownloadStatusCode)
    assert isinstance(outcomes[2].error, InvalidURL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["basn2c08.png", "testimgp.jpg", "testorig.jpg"]
    last = stream.getvalue().strip().splitlines()[-1]
    assert "5/5 images, 2 failed" in last  # the plain bar (tqdm is used when installed)


def test_impossible_options_fail_the_job_once_up_front(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    urls = [server.url("/files/testorig.jpg")] * 2
    with Worker(binary) as worker:
        with pytest.raises(RequestError) as caught:
            worker.download_many(urls, progress=False, progressive=True, format="original")
        assert caught.value.data == {"option": "format"}
        assert worker.status()["finished"] == 0, "nothing was sent"
    # Checked before a worker is even started (this binary does not exist).
    with pytest.raises(RequestError, match="max_pixel_size"):
        download_many(urls, dir=str(tmp_path), format="png", max_pixel_size=0, binary="/nonexistent/image-worker")
    with pytest.raises(RequestError, match="concurrency"):
        download_many(urls, dir=str(tmp_path), concurrency=0, binary="/nonexistent/image-worker")
    with pytest.raises(RequestError, match="urls"):
        download_many(server.url("/files/testorig.jpg"), binary="/nonexistent/image-worker")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_a_refused_url_is_an_outcome_too(binary: str, server: LoopbackServer) -> None:
    # A bad URL fails that URL alone (refused before sending, or by the worker: InvalidURL).
    with Worker(binary) as worker:
        outcomes = worker.download_many([server.url("/files/testorig.jpg"), 42, "ftp://x/y.jpg"],  # type: ignore[list-item]
                                        progress=False)
    assert outcomes[0].ok
    assert isinstance(outcomes[1].error, RequestError) and outcomes[1].error.data == {"option": "url"}
    assert isinstance(outcomes[2].error, InvalidURL)


def test_plain_progress_bar_on_a_pipe() -> None:
    stream = io.StringIO()
    bar = PlainProgress(4, stream)
    bar.update(1, 0, 1500)
    bar.update(4, 1, 3_000_000)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[#######-----------------------] 1/4 images, 1.5 kB"
    assert lines[-1] == "[##############################] 4/4 images, 1 failed, 3.0 MB"


def test_deadlines_and_retries_per_download_bound_a_batch(binary: str, server: LoopbackServer) -> None:
    # URLs that never answer end at their deadline (not after the idle timeout and retries), and
    # say so; retries are per call (max_retries=0 is accepted) and the failure lists every attempt.
    import time
    from image_worker import NetworkError
    hanging = [server.url(f"/hang?n={i}") for i in range(4)]
    started = time.monotonic()
    outcomes = download_many(hanging + [server.url("/files/testorig.jpg")], progress=False, binary=binary,
                             deadline_ms=400, max_retries=0, timeout_ms=60_000)
    assert time.monotonic() - started < 20, "bounded by the deadline, not the 60 s idle timeout"
    assert [o.ok for o in outcomes] == [False] * 4 + [True]
    for outcome in outcomes[:4]:
        assert isinstance(outcome.error, NetworkError) and outcome.error.reason == "deadline"
        assert outcome.error.attempts == 1 and outcome.error.earlier_attempts == []
    with Worker(binary) as worker:
        once, = worker.download_many([server.url("/status/503")], progress=False, max_retries=0)
        thrice, = worker.download_many([server.url("/status/503")], progress=False, max_retries=2, retry_delay_ms=1)
    assert isinstance(once.error, InvalidDownloadStatusCode) and once.error.attempts is None
    assert isinstance(thrice.error, InvalidDownloadStatusCode) and thrice.error.attempts == 3
    assert [e["data"]["statusCode"] for e in thrice.error.earlier_attempts] == [503, 503]
    with pytest.raises(RequestError, match="deadline_ms"):
        download_many(hanging, deadline_ms=0, binary="/nonexistent/image-worker")


def test_plain_progress_with_rates() -> None:
    # The distributed driver's bar: files/s and bytes/s besides the counts.
    stream = io.StringIO()
    bar = PlainProgress(None, stream, rates=True)
    bar.update(3, 1, 3_000_000)
    bar.close()
    line = stream.getvalue().splitlines()[-1]
    assert line.startswith("3 images, 1 failed, 3.0 MB, ") and line.endswith("/s") and " files/s, " in line


def test_without_a_progress_bar_the_job_asks_only_for_each_urls_end(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """``progress=False``: the downloads are ``quiet`` (no started, response or progress events
    to encode, send and parse), and the manifest still times each URL."""
    from image_worker import Worker, iter_downloads
    from image_worker._options import download_params
    import json
    urls = [server.url(f"/files/testorig.jpg?n={i}") for i in range(4)]
    seen = []
    with Worker(binary) as worker:
        original = worker._router.route

        def spy(line: bytes) -> list:  # type: ignore[type-arg]
            seen.append(json.loads(line).get("method"))
            return original(line)

        worker._router.route = spy  # type: ignore[method-assign]
        manifest = tmp_path / "m.jsonl"
        outcomes = list(iter_downloads(urls, str(tmp_path / "out"), worker=worker, manifest=str(manifest)))
    assert all(o.ok for o in outcomes)
    assert "download/started" not in seen and "download/progress" not in seen
    assert seen.count("download/completed") == 4
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert all(isinstance(r.get("ms"), int) for r in records)
    with pytest.raises(RequestError, match="quiet"):
        download_params("u", 1, {"quiet": True, "progressive": True})


def test_a_manifest_never_records_a_urls_password(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    import json
    url = server.url("/files/testorig.jpg").replace("://", "://user:hunter2@")
    manifest = tmp_path / "m.jsonl"
    outcomes = download_many([url], str(tmp_path / "out"), progress=False, binary=binary, manifest=str(manifest))
    assert outcomes[0].ok
    text = manifest.read_text()
    assert "hunter2" not in text and json.loads(text)["url"] == server.url("/files/testorig.jpg")
    again = download_many([url], str(tmp_path / "out"), progress=False, binary=binary, manifest=str(manifest), resume=True)
    assert again[0].skipped, "recognised without its password"


def test_a_link_planted_beside_the_manifest_is_not_followed(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """The manifest's temporary file was ``M.tmp-PID``, a name anyone could guess, opened
    without O_EXCL or O_NOFOLLOW: a link planted there had its target truncated and replaced,
    and M became a link to it. Now: a new file under a random name."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    for suffix in (f".tmp-{os.getpid()}", f".tmp-{os.getpid() + 1}"):
        for name in ("m.jsonl", "m.parquet"):
            os.symlink(victim, tmp_path / (name + suffix))
    url = server.url("/files/testorig.jpg")
    manifest = tmp_path / "m.jsonl"
    outcomes = download_many([url], str(tmp_path / "out"), progress=False, binary=binary, manifest=str(manifest))
    assert all(o.ok for o in outcomes)
    again = download_many([url], str(tmp_path / "out"), progress=False, binary=binary, manifest=str(manifest), resume=True)
    assert len(again) == 1
    assert victim.read_text() == "precious\n", "the link's target is untouched"
    assert manifest.is_file() and not manifest.is_symlink()
    assert len([line for line in manifest.read_text().splitlines() if line]) >= 1
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name and not p.is_symlink()], "no temporary file left"


CTRL_C_CHILD = r"""
import sys, image_worker
binary, manifest, directory, *urls = sys.argv[1:]
for outcome in image_worker.iter_downloads(urls, directory, manifest=manifest, resume=True, concurrency=4, binary=binary,
                                          name_template="p{index:5}.{ext}"):
    print(outcome.index, "ok" if outcome.ok else type(outcome.error).__name__, flush=True)
"""


def test_ctrl_c_to_the_process_group_records_no_failure(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches every process of the foreground group. The worker used to die of
    it first, and the downloads in flight were recorded as failed (``WorkerExited``); now it
    is the script's alone: KeyboardInterrupt, what was under way recorded as cancelled, and a
    resume fetches exactly the rest."""
    import signal
    import subprocess
    import sys
    import time

    manifest = tmp_path / "job.jsonl"
    urls = [server.url(f"/files/testorig.jpg?n={i}&chunk=1000&delayMs=60") for i in range(60)]
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD, binary, str(manifest), str(tmp_path / "images"), *urls],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert child.stdout is not None
    lines = [child.stdout.readline() for _ in range(3)]
    assert all(line.endswith(" ok\n") for line in lines), lines
    os.killpg(child.pid, signal.SIGINT)  # as a terminal does: the script and whatever shares its group
    out, err = child.communicate(timeout=60)
    assert child.returncode in (-signal.SIGINT, 130, 1), (child.returncode, err)
    assert "KeyboardInterrupt" in err, err
    assert "WorkerExited" not in out + err and "RequestError" not in out + err, out + err
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    outcomes = {r["outcome"] for r in records}
    assert outcomes <= {"ok", "cancelled"} and "ok" in outcomes, records
    done = {r["index"] for r in records if r["outcome"] == "ok"}
    # The rest on resume, nothing done fetched again, every URL ok.
    fetched, ended = [], []
    with Worker(binary) as worker:
        for outcome in worker.iter_downloads(urls, str(tmp_path / "images"), manifest=str(manifest), resume=True,
                                             name_template="p{index:5}.{ext}"):
            assert outcome.ok, outcome
            ended.append(outcome.index)
            if not outcome.skipped:
                fetched.append(outcome.index)
    assert sorted(ended) == list(range(60)) and not set(fetched) & done
