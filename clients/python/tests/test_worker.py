from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import List

import pytest

import image_worker
from image_worker import (
    BadImageData, Cancelled, Completed, Event, InvalidDownloadStatusCode, InvalidURL, NetworkError, PartialImage,
    Progress, RequestError, Response, Started, UnsupportedFormat, Worker, WorkerClosed, WorkerExited,
)
from loopback import LoopbackServer


def test_download_to_a_directory_with_typed_events(binary: str, server: LoopbackServer, tmp_path: Path,
                                                   samples: Path) -> None:
    with Worker(binary) as worker:
        assert worker.binary_source == "argument"
        assert worker.info["protocolVersion"] == image_worker.PROTOCOL_VERSION
        handle = worker.download(server.url("/files/testorig.jpg"), dir=str(tmp_path))
        events = list(handle)
        image = handle.result(timeout=30)
    kinds = [type(e) for e in events]
    assert kinds[0] is Started and kinds[1] is Response and kinds[-1] is Completed
    assert all(k is Progress for k in kinds[2:-1]) and len(kinds) >= 4
    progress = [e for e in events if isinstance(e, Progress)]
    assert progress[-1].received_bytes == progress[-1].expected_bytes == 5770
    assert progress[-1].fraction == 1.0
    assert image.path == str(tmp_path / "testorig.jpg")
    assert image.source_format == "jpeg" and image.mime_type == "image/jpeg" and image.byte_length == 5770
    assert image.read_bytes() == (samples / "testorig.jpg").read_bytes()
    assert handle.done() and not handle.cancel()


def test_inline_pixels_over_64_kib_per_line_and_numpy(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    numpy = pytest.importorskip("numpy")
    with Worker(binary) as worker:
        inline = worker.download(server.url("/files/testorig.jpg"), inline=True, format="rgba").result(30)
        on_disk = worker.download(server.url("/files/testorig.jpg"), dir=str(tmp_path), format="rgba").result(30)
        gray = worker.download(server.url("/files/testorig.jpg"), inline=True, format="gray",
                               max_pixel_size=100).result(30)
        rgb = worker.download(server.url("/files/testorig.jpg"), inline=True, format="rgb").result(30)
    assert inline.data is not None and len(inline.data) == 227 * 149 * 4  # ~180 KB of base64 on one line
    assert inline.pixel_format == "rgba" and inline.stride == 227 * 4 and inline.width == 227
    assert inline.data == Path(on_disk.path or "").read_bytes()
    array = inline.to_numpy()
    assert array.shape == (149, 227, 4) and array.dtype == numpy.uint8
    assert (array[:, :, 3] == 255).all()
    # (height, width, channels) for every format, as documented: gray too.
    assert gray.width == 100 and gray.to_numpy().shape == (gray.height, 100, 1)
    assert rgb.to_numpy().shape == (149, 227, 3)
    assert (rgb.to_numpy() == array[:, :, :3]).all()


def test_to_pil_when_pillow_is_installed(binary: str, server: LoopbackServer) -> None:
    pytest.importorskip("PIL")
    with Worker(binary) as worker:
        image = worker.download(server.url("/files/basn2c08.png"), inline=True, format="png").result(30)
    assert image.to_pil().size == (32, 32)


def test_webp_gif_avif_in_jpeg_and_webp_out(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    with Worker(binary) as worker:
        assert {"webp", "gif", "avif"} <= set(worker.info["capabilities"]["decodes"])
        jpeg = worker.download(server.url("/files/test.webp"), inline=True, format="jpeg", quality=70,
                               chroma_subsampling="4:4:4").result(30)
        webp = worker.download(server.url("/files/extended_pixi.avif"), dir=str(tmp_path), format="webp",
                               lossless=True).result(30)
        gif = worker.download(server.url("/files/beacon.gif"), format="rgba").result(30)
        worker.configure(max_frames=1)
        with pytest.raises(image_worker.LimitExceeded) as caught:
            worker.download(server.url("/files/beacon.gif"), format="png").result(30)
    assert jpeg.mime_type == "image/jpeg" and jpeg.data is not None and jpeg.data[:3] == b"\xff\xd8\xff"
    assert jpeg.source_format == "webp" and (jpeg.width, jpeg.height) == (128, 128) and not jpeg.animated
    assert webp.path == str(tmp_path / "extended_pixi.webp") and webp.mime_type == "image/webp"
    assert Path(webp.path).read_bytes()[8:12] == b"WEBP"
    assert gif.animated and gif.frame_count == 2 and gif.loop_count == 0 and gif.source_format == "gif"
    assert caught.value.data["limit"] == "frames" and caught.value.data["maximum"] == 1


@pytest.mark.parametrize("path, options, error, check", [
    ("/status/404", {}, InvalidDownloadStatusCode, lambda e: e.status_code == 404),
    ("/text", {"format": "png"}, UnsupportedFormat, lambda e: e.code == 1008),
    ("/truncate/testorig.jpg", {}, NetworkError, lambda e: e.reason == "truncated"),
    ("/files/testorig.jpg", {"format": "png", "max_pixel_count": 1}, None, None),
])
def test_each_error_code_is_its_own_exception(binary: str, server: LoopbackServer, path: str, options: dict,  # type: ignore[type-arg]
                                              error: type, check: object) -> None:
    with Worker(binary) as worker:
        handle = worker.download(server.url(path), **options)
        if error is None:
            assert handle.result(30).width is not None
            return
        with pytest.raises(error) as caught:
            handle.result(30)
        assert callable(check) and check(caught.value)
        assert caught.value.url == server.url(path) and caught.value.token == handle.token
        assert handle.completed is not None and handle.completed.outcome == "error"


def test_bad_bytes_and_bad_urls(binary: str, server: LoopbackServer) -> None:
    server.files["broken.jpg"] = b"\xff\xd8\xff\xe0" + b"\x00" * 100
    with Worker(binary) as worker:
        with pytest.raises(BadImageData):
            worker.download(server.url("/files/broken.jpg"), format="png").result(30)
        with pytest.raises(InvalidURL):
            worker.download("not a url").result(30)


def test_refused_requests_raise_at_once(binary: str, server: LoopbackServer) -> None:
    with Worker(binary) as worker:
        with pytest.raises(RequestError) as caught:
            worker.download(server.url("/files/testorig.jpg"), progressive=True, format="original")
        assert caught.value.code == -32602
        assert caught.value.data == {"option": "format"}
        with pytest.raises(RequestError):
            worker.download(server.url("/files/testorig.jpg"), dir="a", path="b")
        with pytest.raises(RequestError):
            worker.download(server.url("/files/testorig.jpg"), token="t", priority="urgent")  # type: ignore[arg-type]
        with pytest.raises(RequestError, match="did you mean max_pixel_size"):
            worker.download(server.url("/files/testorig.jpg"), format="png", max_pixel_sise=5)  # type: ignore[call-arg]
        with pytest.raises(RequestError):
            worker.set_priority("t", "urgent")  # type: ignore[arg-type]
        with pytest.raises(RequestError) as caught:
            worker.configure(max_concurrent_downloads=0)
        assert caught.value.data == {"option": "max_concurrent_downloads"}
        # Refused before anything was sent: the worker saw no download, and goes on.
        status = worker.status()
        assert status["finished"] == 0 and status["liveTokens"] == []
        assert status["configuration"]["maxConcurrentDownloads"] == 6
        assert worker.download(server.url("/files/testorig.jpg")).result(30).byte_length == 5770


def test_cancel_and_set_priority(binary: str, server: LoopbackServer) -> None:
    with Worker(binary) as worker:
        handle = worker.download(server.url("/hang"))
        assert handle.set_priority("veryHigh") is True
        assert worker.status()["liveTokens"][0]["priority"] == "veryHigh"
        assert handle.cancel() is True
        with pytest.raises(Cancelled) as caught:
            handle.result(30)
        # Said once, not "Cancelled: Cancelled: Cancelled (url)" in a traceback.
        assert str(caught.value) == f"the download was cancelled ({server.url('/hang')})"
        assert "".join(traceback.format_exception_only(type(caught.value), caught.value)).count("Cancelled") == 1
        events = list(handle)
        assert isinstance(events[-1], Completed) and events[-1].outcome == "cancelled"
        assert handle.set_priority("low") is False


def test_cancel_from_an_event_callback_does_not_deadlock(binary: str, server: LoopbackServer) -> None:
    seen: List[Event] = []

    def on_event(event: Event) -> None:
        seen.append(event)
        if isinstance(event, Progress) and event.received_bytes > 0:
            handle.cancel()

    with Worker(binary) as worker:
        handle = worker.download(server.url("/files/testorig.jpg?chunk=500&delayMs=50"), on_event=on_event)
        with pytest.raises(Cancelled):
            handle.result(30)
    assert isinstance(seen[-1], Completed)


def test_partial_images_arrive_in_order_then_the_final_one(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    with Worker(binary) as worker:
        handle = worker.download(server.url("/files/testimgp.jpg?chunk=400&delayMs=20"), dir=str(tmp_path),
                                 progressive=True, partial_interval_ms=0)
        partials = [e for e in handle if isinstance(e, PartialImage)]
        image = handle.result(30)
    assert partials, "a progressive JPEG trickling in gives partial images"
    assert [p.sequence for p in partials] == sorted(p.sequence for p in partials)
    assert all(p.width == 227 and p.height == 149 and p.path == image.path for p in partials)
    assert image.mime_type == "image/png" and image.width == 227


def test_a_crashing_worker_fails_every_pending_handle_with_its_stderr(binary: str, server: LoopbackServer) -> None:
    worker = Worker(binary, args=["--log-level", "debug"])
    handles = [worker.download(server.url("/hang")) for _ in range(3)]
    deadline = time.monotonic() + 10
    while not worker.stderr_tail and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(worker.pid, signal.SIGKILL)
    for handle in handles:
        with pytest.raises(WorkerExited) as caught:
            handle.result(30)
        assert caught.value.returncode == -signal.SIGKILL
        assert "killed by signal 9" in str(caught.value)
        assert caught.value.stderr and caught.value.stderr[-1] in str(caught.value)
    with pytest.raises(WorkerExited):
        list(handles[0])
    with pytest.raises(WorkerExited):
        worker.download(server.url("/files/testorig.jpg"))
    worker.close()


def client_threads() -> set:  # type: ignore[type-arg]
    """Every thread but the loopback server's own."""
    return {t for t in threading.enumerate() if "process_request" not in t.name}


def test_close_leaves_no_thread_or_process(binary: str, server: LoopbackServer) -> None:
    before = client_threads()
    worker = Worker(binary)
    handle = worker.download(server.url("/files/testorig.jpg?chunk=1000&delayMs=20"))
    assert worker.close() == 0
    assert handle.result(0).byte_length == 5770  # close let it finish
    assert client_threads() <= before
    with pytest.raises(OSError):
        os.kill(worker.pid, 0)
    with pytest.raises(WorkerClosed):
        worker.download(server.url("/files/testorig.jpg"))

    worker = Worker(binary)
    hanging = worker.download(server.url("/hang"))
    assert worker.close(cancel_pending=True) == 0
    with pytest.raises(Cancelled):
        hanging.result(0)
    assert client_threads() <= before


def test_leaving_the_block_on_an_error_cancels(binary: str, server: LoopbackServer) -> None:
    with pytest.raises(KeyError):
        with Worker(binary) as worker:
            hanging = worker.download(server.url("/hang"))
            raise KeyError("boom")
    with pytest.raises(Cancelled):
        hanging.result(10)


def test_configure_and_status(binary: str) -> None:
    with Worker(binary) as worker:
        configuration = worker.configure(max_concurrent_downloads=3, execution_order="lifo")
        assert configuration["maxConcurrentDownloads"] == 3 and configuration["executionOrder"] == "lifo"
        with pytest.raises(RequestError):
            worker.configure(max_concurrent_downloads=0)
        status = worker.status()
        assert status["running"] == 0 and status["configuration"]["maxConcurrentDownloads"] == 3
        assert worker.cancel_all() == 0


def test_per_host_limits_and_proxies(binary: str, server: LoopbackServer) -> None:
    from loopback import ConnectProxy

    proxy = ConnectProxy("me:s3cret")
    try:
        environment = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        environment.update(HTTP_PROXY=f"http://me:s3cret@127.0.0.1:{proxy.port}", NO_PROXY="example.org")
        with Worker(binary, env=environment) as worker:
            configuration = worker.configure(max_concurrent_per_host=2, max_requests_per_second_per_host=50)
            assert configuration["maxConcurrentPerHost"] == 2 and configuration["maxRequestsPerSecondPerHost"] == 50
            assert configuration["httpProxy"] == f"http://me@127.0.0.1:{proxy.port}"
            assert configuration["noProxy"] == "example.org"
            url = f"http://images.test:{server.port}/files/testorig.jpg"
            image = worker.download(url).result(30)
            assert image.byte_length == 5770
            assert proxy.forwarded == [url] and proxy.tunnels == []
            assert worker.configure(proxy="")["httpProxy"] is None
            with pytest.raises(NetworkError):
                worker.download(url, max_retries=0).result(30)
            with pytest.raises(RequestError):
                worker.configure(proxy="socks5://u:p@127.0.0.1:1080")
            assert "s3cret" not in "".join(worker.stderr_tail)
    finally:
        proxy.close()


def test_http_cache(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    with Worker(binary, args=["--cache-dir", str(tmp_path / "cache")]) as worker:
        assert worker.info["capabilities"]["httpCache"] is True
        url = server.url("/files/testorig.jpg")
        first = worker.download(url).result(30)
        assert first.from_cache is False and first.revalidated is False
        assert first.metrics is not None and first.metrics.attempts == 1 and first.metrics.http_version == "1.1"
        assert first.metrics.wire_bytes == first.byte_length and first.metrics.ttfb_ms is not None
        hits = server.hits["/files/testorig.jpg"]
        again = worker.download(url, cache_policy="cacheOnly").result(30)
        assert again.from_cache is True and again.byte_length == first.byte_length
        assert again.metrics is not None and again.metrics.from_cache and again.metrics.wire_bytes == 0
        assert server.hits["/files/testorig.jpg"] == hits
        with pytest.raises(NetworkError) as missing:
            worker.download(server.url("/files/testimgp.jpg"), cache_policy="cacheOnly").result(30)
        assert missing.value.reason == "notCached"
        assert missing.value.metrics is not None and missing.value.metrics.wire_bytes == 0
        assert worker.configure(cache_max_bytes=0)["cacheMaxBytes"] == 0
        with pytest.raises(NetworkError):
            worker.download(url, cache_policy="cacheOnly").result(30)
        with pytest.raises(RequestError):
            worker.download(url, cache_policy="sometimes")


def test_the_workers_warnings_reach_the_user_once(binary: str, server: LoopbackServer, caplog: pytest.LogCaptureFixture) -> None:
    """A warning of the worker (here a proxy setting it cannot use) is given to warnings.warn and
    the image_worker logger once, and kept on the worker, not only in its stderr tail."""
    env = dict(os.environ, HTTPS_PROXY="socks9://nowhere:1", https_proxy="socks9://nowhere:1")
    with pytest.warns(image_worker.ImageWorkerWarning, match="proxy settings from the environment skipped") as caught:
        with image_worker.Worker(binary, env=env) as worker:
            worker.download(server.url("/files/testorig.jpg"), inline=True).result()
            worker.status()  # the warning came before initialize's answer; anything after it is routed
    assert [w.code for w in worker.warnings] == ["proxySkipped"]
    assert "socks9" in worker.warnings[0].message
    assert len([w for w in caught if issubclass(w.category, image_worker.ImageWorkerWarning)]) == 1
    assert [r.getMessage() for r in caplog.records if r.name == "image_worker"] == [worker.warnings[0].args[0]]


def test_closing_with_a_hung_download_takes_the_grace_not_the_timeout(binary: str, server: LoopbackServer) -> None:
    """Leaving ``with Worker()`` with a download that never answers: what runs gets a short grace
    (2 s by default, ``grace=`` to change it), then is cancelled; it used to wait 29 s."""
    with Worker(binary) as worker:
        hanging = worker.download(server.url("/hang"))
        started = time.monotonic()
    took = time.monotonic() - started
    with pytest.raises(Cancelled):
        hanging.result(0)
    assert 1.5 <= took < 6, f"closing took {took:.1f} s"

    worker = Worker(binary)
    hanging = worker.download(server.url("/hang"))
    started = time.monotonic()
    assert worker.close(grace=0.2) == 0
    assert time.monotonic() - started < 3
    with pytest.raises(Cancelled):
        hanging.result(0)
    worker = Worker(binary)
    with pytest.raises(ValueError, match="grace"):
        worker.close(grace=-1)
    worker.close()


def test_verify_full_and_the_originals_facts(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """``verify="full"`` refuses an original whose header is right and whose scan is cut short
    (``verify=True`` saves it); a thumbnail's result names the original's digest and size."""
    import hashlib
    photo = server.files["testorig.jpg"]
    server.files["cut.jpg"] = photo[:4000]
    with Worker(binary) as worker:
        kept = worker.download(server.url("/files/cut.jpg"), dir=str(tmp_path / "a"), verify=True).result(30)
        assert kept.path is not None and (kept.source_width, kept.source_height) == (227, 149)
        with pytest.raises(BadImageData):
            worker.download(server.url("/files/cut.jpg"), dir=str(tmp_path / "b"), verify="full").result(30)
        assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())
        with pytest.raises(RequestError, match="verify"):
            worker.download(server.url("/files/cut.jpg"), verify=1)  # type: ignore[arg-type]
        thumb = worker.download(server.url("/files/testorig.jpg"), dir=str(tmp_path / "t"), format="webp", max_pixel_size=100,
                                sha256=True).result(30)
        assert thumb.path is not None
        assert thumb.sha256 == hashlib.sha256(Path(thumb.path).read_bytes()).hexdigest()
        assert thumb.source_sha256 == hashlib.sha256(photo).hexdigest() and thumb.byte_length == len(photo)
        assert (thumb.width, thumb.source_width, thumb.source_height) == (100, 227, 149)
