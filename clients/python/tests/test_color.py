"""Colours as a browser shows them, held to Pillow's ``ImageCms`` (Little CMS, a reference nobody
here wrote): files with Display P3, ProPhoto, Adobe RGB (1998) and CMYK (SWOP) profiles, from
``Tests/Corpora/color``, converted to sRGB by default and kept as stored with
``color_profile="keep"`` (the profile in ``image.icc_profile``, and in the files written)."""

from __future__ import annotations

import io
import pathlib
from typing import Any

import pytest

import image_worker
from loopback import LoopbackServer

# Required, not skipped: clients/test.sh installs both (a missing reference must fail, not pass).
import numpy  # type: ignore[import-not-found, unused-ignore]  # noqa: E402
from PIL import Image, ImageCms  # type: ignore[import-not-found, unused-ignore]  # noqa: E402

CORPUS = pathlib.Path(__file__).resolve().parents[3] / "Tests" / "Corpora" / "color"
FILES = ["p3.png", "prophoto.png", "xmp_test.jpg", "icc_profile_big.jpg", "Channel_digital_image_CMYK_color.jpg",
         "xmp_tags_orientation.avif", "p3-lossless.webp"]


@pytest.fixture()
def color_server(server: LoopbackServer) -> LoopbackServer:
    for name in FILES:
        server.files[name] = (CORPUS / name).read_bytes()
    return server


def pillow_srgb(data: bytes) -> Any:
    image = Image.open(io.BytesIO(data))
    profile = ImageCms.ImageCmsProfile(io.BytesIO(image.info["icc_profile"]))
    if image.mode not in ("CMYK", "RGB"):
        image = image.convert("RGB")
    return numpy.asarray(ImageCms.profileToProfile(image, profile, ImageCms.createProfile("sRGB"), outputMode="RGB"))


def mean_difference(a: Any, b: Any) -> float:
    return float(numpy.abs(a.astype(numpy.int16) - numpy.asarray(b).astype(numpy.int16)).mean())


@pytest.mark.parametrize("name", FILES)
def test_pixels_are_what_imagecms_makes_of_them(binary: str, color_server: LoopbackServer, name: str) -> None:
    data = color_server.files[name]
    with image_worker.Worker(binary) as worker:
        converted = worker.download(color_server.url(f"/files/{name}"), format="rgb").result()
        kept = worker.download(color_server.url(f"/files/{name}"), format="rgb", color_profile="keep").result()
    assert converted.icc_profile is None
    try:
        opened = Image.open(io.BytesIO(data))
    except Exception:  # an AVIF, before Pillow 11.2: the worker's stored values through ImageCms instead
        assert kept.icc_profile is not None
        profile = ImageCms.ImageCmsProfile(io.BytesIO(kept.icc_profile))
        reference = numpy.asarray(ImageCms.profileToProfile(Image.fromarray(kept.to_numpy()), profile,
                                                            ImageCms.createProfile("sRGB"), outputMode="RGB"))
    else:
        assert kept.icc_profile == opened.info["icc_profile"]
        reference = pillow_srgb(data)
    got = converted.to_numpy()
    assert got.shape == reference.shape
    assert mean_difference(got, reference) < 1.5, name
    assert mean_difference(kept.to_numpy(), reference) > 0.5, name


def test_a_kept_profile_is_in_the_file_written(binary: str, color_server: LoopbackServer, tmp_path: pathlib.Path) -> None:
    source = Image.open(io.BytesIO(color_server.files["xmp_test.jpg"]))
    with image_worker.Worker(binary) as worker:
        for fmt in ("png", "jpeg", "webp"):
            kept = worker.download(color_server.url("/files/xmp_test.jpg"), format=fmt, dir=str(tmp_path), width=200,
                                   color_profile="keep", name=f"kept.{fmt}").result()
            srgb = worker.download(color_server.url("/files/xmp_test.jpg"), format=fmt, dir=str(tmp_path), width=200,
                                   name=f"srgb.{fmt}").result()
            assert Image.open(kept.path).info.get("icc_profile") == source.info["icc_profile"], fmt
            assert Image.open(srgb.path).info.get("icc_profile") is None, fmt
            # The kept file, shown through its profile as Pillow shows it, looks like the sRGB one.
            shown = pillow_srgb(pathlib.Path(kept.path).read_bytes())
            assert mean_difference(shown, numpy.asarray(Image.open(srgb.path).convert("RGB"))) < 3, fmt
