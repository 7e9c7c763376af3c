from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loopback import REPO, LoopbackServer, binary_path  # noqa: E402


@pytest.fixture(scope="session")
def binary() -> str:
    path = binary_path()
    if path is None:
        pytest.fail(f"no image-worker binary: run `swift build` in {REPO} or set $IMAGE_WORKER_BIN")
    return path


@pytest.fixture()
def server() -> Iterator[LoopbackServer]:
    s = LoopbackServer()
    yield s
    s.close()


@pytest.fixture()
def samples() -> Path:
    return REPO / "samples"
