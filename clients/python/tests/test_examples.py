"""The examples in clients/examples run as documented, against the loopback server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopback import REPO, LoopbackServer

EXAMPLES = REPO / "clients" / "examples"


def env_with(binary: str) -> dict:  # type: ignore[type-arg]
    return {**os.environ, "IMAGE_WORKER_BIN": binary}


def test_bulk_download_example(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    urls = [server.url("/files/testorig.jpg"), server.url("/files/basn2c08.png"), server.url("/status/404")]
    result = subprocess.run([sys.executable, str(EXAMPLES / "bulk_download.py"), "--out", str(tmp_path), *urls],
                            env=env_with(binary), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"ok      {urls[0]} -> {tmp_path / 'testorig.jpg'}"
    assert lines[2].startswith(f"failed  {urls[2]}: InvalidDownloadStatusCode")
    assert "3/3 images, 1 failed" in result.stderr


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed (Debian: jq)")
def test_jq_pipeline_example(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    urls = [server.url("/files/testorig.jpg"), server.url("/status/404")]
    result = subprocess.run(["bash", str(EXAMPLES / "jq-pipeline.sh"), str(tmp_path), *urls],
                            env=env_with(binary), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == sorted([
        f"{tmp_path / 'testorig.png'}  227x149",
        "FAILED 2: Download marked as failed because of invalid response status code 404",
    ])


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_partial_images_example(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    url = server.url("/files/testimgp.jpg?chunk=400&delayMs=20")
    result = subprocess.run(["node", str(EXAMPLES / "partial_images.mjs"), url, str(tmp_path)],
                            env=env_with(binary), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("partial #") and "227x149" in lines[0]
    assert lines[-1] == f"final: 227x149 jpeg -> {tmp_path / 'testimgp.png'}"
