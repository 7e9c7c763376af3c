"""img2dataset's size filters (``min_image_size``, ``max_image_area``, ``max_aspect_ratio``): the
worker refuses from the header, before any decode, and the client raises ``Filtered`` naming the
filter; bulk jobs report it per URL and go on."""

from __future__ import annotations

import pytest

import image_worker
from loopback import LoopbackServer


def test_a_filtered_download_raises_filtered(binary: str, server: LoopbackServer) -> None:
    with image_worker.Worker(binary) as worker:
        small = worker.download(server.url("/files/basn2c08.png"), format="rgb", inline=True, min_image_size=33)
        with pytest.raises(image_worker.Filtered) as caught:
            small.result()
        assert caught.value.filter == "minImageSize"
        assert caught.value.data["width"] == 32 and caught.value.data["height"] == 32
        assert isinstance(caught.value, image_worker.DownloadError) and caught.value.code == 1011
        # The same bytes as they came (no decode asked): judged by their header all the same.
        wide = worker.download(server.url("/files/testorig.jpg"), max_aspect_ratio=1.5)
        with pytest.raises(image_worker.Filtered) as caught:
            wide.result()
        assert caught.value.filter == "maxAspectRatio"
        kept = worker.download(server.url("/files/testorig.jpg"), format="rgb", inline=True, max_image_area=227 * 149,
                               min_image_size=149, max_aspect_ratio=1.6).result()
        assert (kept.width, kept.height) == (227, 149)


def test_bulk_jobs_report_filtered_urls_and_go_on(binary: str, server: LoopbackServer) -> None:
    urls = [server.url("/files/testorig.jpg"), server.url("/files/basn2c08.png")]
    outcomes = image_worker.download_many(urls, binary=binary, format="png", inline=True, min_image_size=64)
    assert [o.ok for o in outcomes] == [True, False]
    assert isinstance(outcomes[1].error, image_worker.Filtered) and outcomes[1].error.filter == "minImageSize"


def test_out_of_range_values_are_refused(binary: str, server: LoopbackServer) -> None:
    with image_worker.Worker(binary) as worker:
        with pytest.raises((ValueError, image_worker.RequestError)):
            worker.download(server.url("/files/testorig.jpg"), max_aspect_ratio=0.5).result()


def test_opted_out_downloads_raise_opted_out(binary: str, server: LoopbackServer) -> None:
    with image_worker.Worker(binary) as worker:
        # By default nothing is refused.
        assert worker.download(server.url("/files/testorig.jpg?robots=noai")).result().byte_length == 5770
        configured = worker.configure(disallowed_header_directives=["noai", "noimageai"], user_agent_token="mybot")
        assert configured["disallowedHeaderDirectives"] == ["noai", "noimageai"]
        with pytest.raises(image_worker.OptedOut) as caught:
            worker.download(server.url("/files/testorig.jpg?robots=mybot:%20noimageai,%20nofollow")).result()
        assert caught.value.directives == ["noimageai"] and caught.value.code == 1012
        assert worker.download(server.url("/files/testorig.jpg?robots=googlebot:%20noai")).result().byte_length == 5770
        with pytest.raises((ValueError, image_worker.RequestError)):
            worker.configure(disallowed_header_directives="noai")
