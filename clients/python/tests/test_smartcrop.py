"""``position="entropy"`` and ``"attention"`` held to libvips' own ``smartcrop`` (pyvips, a reference
nobody here wrote), on the worker's own image at the cover scale (``fit="outside"``): entropy
finds the same crop to the pixel (the same algorithm on the same pixels); attention, whose
libvips pipeline resamples and converts colours its own way, lands near it."""

from __future__ import annotations

from typing import Any

import pytest

import image_worker
from loopback import LoopbackServer

# Required, not skipped: clients/test.sh installs them (a missing reference must fail, not pass).
import numpy  # type: ignore[import-not-found, unused-ignore]  # noqa: E402
import pyvips  # type: ignore[import-not-found, unused-ignore]  # noqa: E402

BOXES = [(64, 64), (120, 40), (40, 120), (100, 100)]
FILES = ["testorig.jpg", "basn2c08.png", "testimgp.jpg"]


def vips_crop(pixels: Any, box: tuple[int, int], interesting: str) -> Any:
    height, width, bands = pixels.shape
    image = pyvips.Image.new_from_memory(numpy.ascontiguousarray(pixels).tobytes(), width, height, bands, "uchar")
    image = image.copy(interpretation="srgb")
    cropped = image.smartcrop(box[0], box[1], interesting=interesting)
    return numpy.ndarray(buffer=cropped.write_to_memory(), dtype=numpy.uint8, shape=(box[1], box[0], bands))


def cover_scale_and_crop(binary: str, server: LoopbackServer, name: str, box: tuple[int, int], position: str) -> tuple[Any, Any]:
    """The worker's image at the cover scale (``fit="outside"``) and its ``cover`` crop at ``position``."""
    url = server.url(f"/files/{name}")
    with image_worker.Worker(binary) as worker:
        outside = worker.download(url, format="rgb", inline=True, width=box[0], height=box[1], fit="outside").result().to_numpy()
        got = worker.download(url, format="rgb", inline=True, width=box[0], height=box[1], position=position).result().to_numpy()
    return outside, got


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("box", BOXES)
def test_entropy_is_libvips_smartcrop(binary: str, server: LoopbackServer, name: str, box: tuple[int, int]) -> None:
    outside, got = cover_scale_and_crop(binary, server, name, box, "entropy")
    assert got.shape == (box[1], box[0], 3)
    assert numpy.array_equal(got, vips_crop(outside, box, "entropy")), (name, box)


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("box", BOXES)
def test_attention_lands_near_libvips(binary: str, server: LoopbackServer, name: str, box: tuple[int, int]) -> None:
    outside, got = cover_scale_and_crop(binary, server, name, box, "attention")
    reference = vips_crop(outside, box, "attention")
    # Where each crop lies in the outside image: the offset with the smallest difference.
    def place(crop: Any) -> tuple[int, int]:
        best, where = None, (0, 0)
        for y in range(outside.shape[0] - box[1] + 1):
            for x in range(outside.shape[1] - box[0] + 1):
                d = numpy.abs(outside[y:y + box[1], x:x + box[0]].astype(int) - crop.astype(int)).sum()
                if best is None or d < best:
                    best, where = d, (x, y)
        return where
    (gx, gy), (vx, vy) = place(got), place(reference)
    slack = (outside.shape[1] - box[0], outside.shape[0] - box[1])
    # Within a quarter of the room the crop had to move in (or 4 pixels).
    assert abs(gx - vx) <= max(4, slack[0] // 4) and abs(gy - vy) <= max(4, slack[1] // 4), (name, box, (gx, gy), (vx, vy))
