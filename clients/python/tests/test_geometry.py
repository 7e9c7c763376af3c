"""Exact sizes with fit and crop, held to Pillow's ``ImageOps`` (a reference nobody here wrote):
``fit`` for cover, ``pad`` for contain, ``contain`` for inside, ``resize`` for fill. The worker
resamples by area (a box filter) and Pillow by Lanczos, so pixels differ a little; sizes and
where the image lands may not."""

from __future__ import annotations

import io
from typing import Any, Tuple

import pytest

import image_worker
from loopback import LoopbackServer

# Required, not skipped: clients/test.sh installs both (a missing reference must fail, not pass).
import numpy  # type: ignore[import-not-found, unused-ignore]  # noqa: E402
from PIL import Image, ImageOps  # type: ignore[import-not-found, unused-ignore]  # noqa: E402

#: sharp's positions and Pillow's centering for them (x, y from 0 to 1).
CENTERING = {
    "center": (0.5, 0.5), "top": (0.5, 0.0), "right top": (1.0, 0.0), "right": (1.0, 0.5), "right bottom": (1.0, 1.0),
    "bottom": (0.5, 1.0), "left bottom": (0.0, 1.0), "left": (0.0, 0.5), "left top": (0.0, 0.0),
}


def source(server: LoopbackServer, name: str) -> Any:
    return Image.open(io.BytesIO(server.files[name])).convert("RGB")


def pixels(worker: image_worker.Worker, url: str, **options: Any) -> Any:
    return worker.download(url, format="rgb", inline=True, **options).result().to_numpy()


def mean_difference(a: Any, b: Any) -> float:
    return float(numpy.abs(a.astype(numpy.int16) - numpy.asarray(b).astype(numpy.int16)).mean())


@pytest.mark.parametrize("box", [(64, 64), (200, 60), (40, 120), (300, 300)])
@pytest.mark.parametrize("position", sorted(CENTERING))
def test_cover_is_pillows_fit(binary: str, server: LoopbackServer, box: Tuple[int, int], position: str) -> None:
    reference = ImageOps.fit(source(server, "testorig.jpg"), box, Image.LANCZOS, centering=CENTERING[position])
    with image_worker.Worker(binary) as worker:
        got = pixels(worker, server.url("/files/testorig.jpg"), width=box[0], height=box[1], fit="cover", position=position)
    assert got.shape == (box[1], box[0], 3)
    assert mean_difference(got, reference) < 6, (box, position)


@pytest.mark.parametrize("box", [(64, 64), (300, 100), (100, 300)])
@pytest.mark.parametrize("position", ["center", "left top", "right bottom", "bottom"])
def test_contain_is_pillows_pad(binary: str, server: LoopbackServer, box: Tuple[int, int], position: str) -> None:
    color = (200, 30, 90)
    reference = ImageOps.pad(source(server, "testorig.jpg"), box, Image.LANCZOS, color=color, centering=CENTERING[position])
    with image_worker.Worker(binary) as worker:
        got = pixels(worker, server.url("/files/testorig.jpg"), width=box[0], height=box[1], fit="contain", position=position,
                     background="#c81e5a")
    assert got.shape == (box[1], box[0], 3)
    assert mean_difference(got, reference) < 6, (box, position)
    # The canvas where the image is not: exactly the background (Pillow's canvas is the same there).
    canvas = numpy.all(numpy.asarray(reference) == color, axis=2)
    assert numpy.all(got[canvas] == color)


def test_fill_inside_outside_and_one_side(binary: str, server: LoopbackServer) -> None:
    image = source(server, "testimgp.jpg")  # 227 x 149
    url = server.url("/files/testimgp.jpg")
    with image_worker.Worker(binary) as worker:
        fill = pixels(worker, url, width=50, height=120, fit="fill")
        assert fill.shape == (120, 50, 3)
        assert mean_difference(fill, image.resize((50, 120), Image.LANCZOS)) < 6
        inside = pixels(worker, url, width=100, height=100, fit="inside")
        reference = ImageOps.contain(image, (100, 100), Image.LANCZOS)
        assert inside.shape == (reference.height, reference.width, 3) == (66, 100, 3)
        assert mean_difference(inside, reference) < 6
        outside = pixels(worker, url, width=100, height=100, fit="outside")
        assert outside.shape == (100, 152, 3)
        assert pixels(worker, url, width=114).shape == (75, 114, 3)
        assert pixels(worker, url, height=50).shape == (50, 76, 3)


def test_enlargement_and_without_it(binary: str, server: LoopbackServer) -> None:
    image = source(server, "testimgp.jpg")
    url = server.url("/files/testimgp.jpg")
    with image_worker.Worker(binary) as worker:
        big = pixels(worker, url, width=454, height=454, fit="cover")
        assert big.shape == (454, 454, 3)
        assert mean_difference(big, ImageOps.fit(image, (454, 454), Image.BILINEAR)) < 4
        kept = pixels(worker, url, width=454, height=454, fit="cover", without_enlargement=True)
        assert kept.shape == (149, 227, 3)
        padded = pixels(worker, url, width=400, height=400, fit="contain", without_enlargement=True, background="#ffffff")
        assert padded.shape == (400, 400, 3)
        assert numpy.array_equal(padded[125:274, 86:313], pixels(worker, url))  # the image as it is, in the middle
        assert numpy.all(padded[:125] == 255)


def test_a_see_through_background_gives_an_rgba_png(binary: str, server: LoopbackServer) -> None:
    with image_worker.Worker(binary) as worker:
        png = worker.download(server.url("/files/testorig.jpg"), format="png", inline=True, width=100, height=100, fit="contain",
                              background="#00000000").result()
    image = Image.open(io.BytesIO(png.read_bytes()))
    assert image.mode == "RGBA" and image.size == (100, 100)
    assert image.getpixel((50, 0)) == (0, 0, 0, 0) and image.getpixel((50, 50))[3] == 255
    # Raw rgb and gray, and JPEG, have no alpha: the background's colour shows, in their layout.
    with image_worker.Worker(binary) as worker:
        url = server.url("/files/testorig.jpg")
        rgb = pixels(worker, url, width=100, height=100, fit="contain", background="#10203040")
        gray = worker.download(url, format="gray", inline=True, width=100, height=100, fit="contain", background="#10203040").result()
        jpeg = worker.download(url, format="jpeg", inline=True, width=100, height=100, fit="contain", background="#ff000080").result()
    assert rgb.shape == (100, 100, 3) and tuple(rgb[0, 50]) == (0x10, 0x20, 0x30)
    assert gray.to_numpy().shape == (100, 100, 1) and len(gray.read_bytes()) == 100 * 100
    corner = Image.open(io.BytesIO(jpeg.read_bytes())).convert("RGB").getpixel((50, 2))
    assert corner[0] > 240 and corner[1] < 16 and corner[2] < 16, corner


def test_the_rules_between_the_options(binary: str, server: LoopbackServer) -> None:
    url = server.url("/files/testorig.jpg")
    with image_worker.Worker(binary) as worker:
        for options, says in [
            (dict(format="png", fit="cover"), "fit"),
            (dict(format="png", width=10, max_pixel_size=20), "max_pixel_size"),
            (dict(format="original", width=10), "width"),
            (dict(format="png", width=10, background="red"), "background"),
            (dict(format="png", width=10, fit="squash"), "fit"),
        ]:
            with pytest.raises((image_worker.ImageWorkerError, ValueError)) as caught:
                worker.download(url, inline=True, **options).result()
            assert says in str(caught.value), (options, str(caught.value))


def test_partial_images_follow_the_box(binary: str, server: LoopbackServer, tmp_path: Any) -> None:
    from image_worker import PartialImage
    image = source(server, "testimgp.jpg")
    with image_worker.Worker(binary) as worker:
        handle = worker.download(server.url("/files/testimgp.jpg?chunk=400&delayMs=20"), dir=str(tmp_path), progressive=True,
                                 partial_interval_ms=0, width=80, height=80, fit="cover", position="left")
        partials = [e for e in handle if isinstance(e, PartialImage)]
        final = handle.result(30)
        shrunk = worker.download(server.url("/files/testimgp.jpg?chunk=400&delayMs=20"), inline=True, progressive=True,
                                 partial_interval_ms=0, width=80, height=80, fit="contain", partial_max_pixel_size=40)
        small = [e for e in shrunk if isinstance(e, PartialImage)]
        shrunk.result(30)
    assert partials and all((p.width, p.height) == (80, 80) for p in partials)
    assert [p.filled_rows for p in partials] == sorted(p.filled_rows for p in partials)
    assert (final.width, final.height) == (80, 80)
    written = Image.open(final.path).convert("RGB")
    assert mean_difference(numpy.asarray(written), ImageOps.fit(image, (80, 80), Image.LANCZOS, centering=(0, 0.5))) < 6
    assert small and all((p.width, p.height) == (40, 40) for p in small)


def test_a_box_over_the_pixel_limit_fails_its_own_download_only(binary: str, server: LoopbackServer, tmp_path: Any) -> None:
    # 16,384 wide keeps the aspect ratio: 16,384 x 10,754 (176 M pixels) is over the 100 M limit.
    url = server.url("/files/testimgp.jpg?chunk=400&delayMs=20")
    with image_worker.Worker(binary) as worker:
        for progressive in (True, False):
            plain = worker.download(url, dir=str(tmp_path / f"plain-{progressive}"), format="png", progressive=progressive)
            huge = worker.download(url, dir=str(tmp_path / f"huge-{progressive}"), format="png", progressive=progressive, width=16384,
                                   partial_interval_ms=0)
            with pytest.raises(image_worker.LimitExceeded, match="16384x10754"):
                huge.result(30)
            assert (plain.result(30).width, plain.result(30).height) == (227, 149)


@pytest.mark.parametrize("fmt", ["rgb", "gray", "jpeg"])
def test_a_format_without_alpha_flattens_onto_the_background(binary: str, server: LoopbackServer, fmt: str) -> None:
    # basi6a08.png: RGBA with every alpha from 0 to 255 (and gAMA 1.0, which the worker applies and
    # Pillow does not): Pillow's alpha_composite of the worker's own RGBA onto the colour.
    with image_worker.Worker(binary) as worker:
        url = server.url("/files/basi6a08.png")
        source = Image.fromarray(worker.download(url, format="rgba", inline=True).result().to_numpy(), "RGBA")
    reference = Image.alpha_composite(Image.new("RGBA", source.size, (200, 30, 90, 255)), source).convert("RGB")
    with image_worker.Worker(binary) as worker:
        image = worker.download(url, format=fmt, inline=True, background="#c81e5a").result()
        dropped = worker.download(url, format=fmt, inline=True).result()
    if fmt == "jpeg":
        got = numpy.asarray(Image.open(io.BytesIO(image.data)).convert("RGB"))
        assert mean_difference(got, reference) < 3
    elif fmt == "gray":
        assert mean_difference(image.to_numpy().reshape(32, 32), reference.convert("L")) < 1.5
    else:
        assert numpy.abs(image.to_numpy().astype(int) - numpy.asarray(reference).astype(int)).max() <= 1
    # Without a background the alpha is dropped, as before: the colours stored under it.
    assert mean_difference(dropped.to_numpy() if fmt != "jpeg" else numpy.asarray(Image.open(io.BytesIO(dropped.data)).convert("RGB")),
                           reference if fmt != "gray" else reference.convert("L")) > 5


def test_a_progressive_download_flattens_as_a_whole_one(binary: str, server: LoopbackServer) -> None:
    # The interlaced basi6a08.png decoded as it arrives (its final image from the progressive
    # decoder): the same flattened pixels as the whole-buffer decode.
    with image_worker.Worker(binary) as worker:
        url = server.url("/files/basi6a08.png")
        whole = worker.download(url, format="rgb", inline=True, background="#c81e5a").result().to_numpy()
        streamed = worker.download(url + "?chunk=64&delayMs=5", format="rgb", inline=True, background="#c81e5a",
                                   progressive=True).result().to_numpy()
    assert numpy.array_equal(whole, streamed)
