from __future__ import annotations

import io
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
