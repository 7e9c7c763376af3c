"""``image-worker get --output-format webdataset`` read back as its users read it: Python's
``tarfile`` and the ``webdataset`` package (PyPI) iterate the samples; the images decode, captions
and metadata are there, and the stats count every row of the table."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

import image_worker
from loopback import LoopbackServer

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
