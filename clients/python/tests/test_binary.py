from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import image_worker
from image_worker import BinaryNotFound, Worker, find_binary


def test_argument_then_environment_then_path(binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_binary(binary) == (os.path.abspath(binary), "argument")
    monkeypatch.setenv("IMAGE_WORKER_BIN", binary)
    assert find_binary() == (os.path.abspath(binary), "$IMAGE_WORKER_BIN")
    monkeypatch.delenv("IMAGE_WORKER_BIN")
    link = tmp_path / "image-worker"
    shutil.copy(binary, link)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_binary() == (str(link), "PATH")
    with Worker() as worker:
        assert worker.binary_source == "PATH"


def test_the_repositorys_release_build(binary: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IMAGE_WORKER_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    repo = Path(__file__).resolve().parents[3]
    release = repo / ".build" / "release" / "image-worker"
    inside = repo in Path(image_worker.__file__).resolve().parents  # an editable install, or the source tree
    if inside and release.exists():
        assert find_binary() == (str(release), ".build/release")
        return
    with pytest.raises(BinaryNotFound) as caught:
        find_binary()
    expected = str(release) if inside else "this package is not inside the repository"
    assert expected in str(caught.value) and "on PATH" in str(caught.value)


def test_a_clear_message_when_nothing_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BinaryNotFound, match="not an executable file"):
        find_binary(str(tmp_path / "nope"))
    monkeypatch.setenv("IMAGE_WORKER_BIN", str(tmp_path / "nope"))
    with pytest.raises(BinaryNotFound, match=r"\$IMAGE_WORKER_BIN is set"):
        Worker()
