"""Every frame of an animation (``frames="all"``), held to Pillow's ``ImageSequence`` (a reader
nobody here wrote): raw pixels as one ``(frames, height, width, channels)`` array with their
delays and loop count, animated WebP and GIF files Pillow reads back frame for frame, and the
rule that one-image formats refuse it. Files: ``Tests/Corpora`` (image-rs's and Pillow's test
images, with their licences)."""

from __future__ import annotations

import io
import pathlib
from typing import Any, List

import pytest

import image_worker
from loopback import LoopbackServer

# Required, not skipped: clients/test.sh installs both (a missing reference must fail, not pass).
import numpy  # type: ignore[import-not-found, unused-ignore]  # noqa: E402
from PIL import Image, ImageSequence  # type: ignore[import-not-found, unused-ignore]  # noqa: E402

CORPUS = pathlib.Path(__file__).resolve().parents[3] / "Tests" / "Corpora"
#: Animations Pillow composites as browsers do (no frame cleared to its background colour).
FILES = {"moon.gif": "gif/samples_moon_impact.gif", "dispose_prev.gif": "gif-animated/dispose_prev.gif",
         "iss634.gif": "gif-animated/iss634.gif", "random.webp": "webp-animated/animated_random_lossless.webp"}


@pytest.fixture()
def frames_server(server: LoopbackServer) -> LoopbackServer:
    for name, path in FILES.items():
        server.files[name] = (CORPUS / path).read_bytes()
    return server


def pillow_frames(data: bytes, mode: str = "RGBA") -> List[Any]:
    return [numpy.asarray(frame.convert(mode)) for frame in ImageSequence.Iterator(Image.open(io.BytesIO(data)))]


def pillow_delays(data: bytes) -> List[int]:
    image = Image.open(io.BytesIO(data))
    delays = []
    for index in range(image.n_frames):
        image.seek(index)
        delays.append(image.info.get("duration", 0))
    return delays


@pytest.mark.parametrize("name", list(FILES))
def test_every_frame_is_pillows(binary: str, frames_server: LoopbackServer, name: str) -> None:
    data = frames_server.files[name]
    with image_worker.Worker(binary) as worker:
        image = worker.download(frames_server.url(f"/files/{name}"), format="rgba", frames="all").result()
    array = image.to_numpy()
    reference = pillow_frames(data)
    assert array.shape == (len(reference), *reference[0].shape)
    assert image.frames == len(reference)
    for ours, theirs in zip(array, reference):
        # The same alpha everywhere, the same colour wherever a pixel shows.
        assert (ours[..., 3] == theirs[..., 3]).all()
        shown = ours[..., 3] > 0
        assert (ours[shown] == theirs[shown]).all()
    if name.endswith(".gif"):
        assert image.delays_ms == pillow_delays(data)
        assert image.loop_count == Image.open(io.BytesIO(data)).info.get("loop")
    assert len(image.delays_ms or []) == image.frames


def test_frames_are_sized_and_written(binary: str, frames_server: LoopbackServer, tmp_path: pathlib.Path) -> None:
    with image_worker.Worker(binary) as worker:
        small = worker.download(frames_server.url("/files/moon.gif"), format="rgb", frames="all", width=40, height=40).result()
        gif = worker.download(frames_server.url("/files/moon.gif?gif"), format="gif", frames="all", max_pixel_size=58,
                              dir=str(tmp_path), name="moon.gif").result()
        webp = worker.download(frames_server.url("/files/moon.gif?webp"), format="webp", frames="all", lossless=True,
                               dir=str(tmp_path), name="moon.webp").result()
    assert small.to_numpy().shape == (14, 40, 40, 3)
    reference = [numpy.asarray(Image.fromarray(frame).convert("RGB")) for frame in pillow_frames(frames_server.files["moon.gif"])]
    # Each frame the whole frame covered (fit cover on a near-square source): close to Pillow's own fit.
    from PIL import ImageOps  # type: ignore[import-not-found, unused-ignore]
    for ours, theirs in zip(small.to_numpy(), reference):
        fitted = numpy.asarray(ImageOps.fit(Image.fromarray(theirs), (40, 40), Image.Resampling.LANCZOS))
        assert float(numpy.abs(ours.astype(numpy.int16) - fitted.astype(numpy.int16)).mean()) < 6
    written = Image.open(tmp_path / "moon.gif")
    assert written.n_frames == 14 and written.size == (58, 50) and written.info["loop"] == 10
    assert gif.to_numpy().shape == (14, 50, 58, 3)  # no transparency: RGB
    opened = Image.open(tmp_path / "moon.webp")
    assert opened.is_animated and opened.size == (116, 100) and opened.info["loop"] == 10
    # A lossless WebP keeps every pixel (frames the encoder merged show as long as both did).
    shown = [numpy.asarray(frame.convert("RGB")) for frame in ImageSequence.Iterator(opened)]
    assert all(any((frame == theirs).all() for frame in shown) for theirs in reference)
    assert webp.to_numpy().shape[1:] == (100, 116, 4)  # (Pillow opens an animated WebP in RGBA)


def test_one_image_formats_refuse_every_frame(binary: str, frames_server: LoopbackServer) -> None:
    with image_worker.Worker(binary) as worker:
        with pytest.raises(image_worker.RequestError, match="frames .all. goes with format webp or gif or rgba or rgb or gray"):
            worker.download(frames_server.url("/files/moon.gif"), format="png", frames="all")
        still = worker.download(frames_server.url("/files/moon.gif?first"), format="rgb").result()
    assert still.frames is None and still.to_numpy().shape == (100, 116, 3)
