from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


def test_the_bundled_worker_after_what_the_caller_names(binary: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from image_worker import _binary
    carried = tmp_path / "package" / "_bin" / "image-worker"
    carried.parent.mkdir(parents=True)
    shutil.copy(binary, carried)
    monkeypatch.setattr(_binary, "BUNDLED", str(carried))
    monkeypatch.delenv("IMAGE_WORKER_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert find_binary() == (str(carried), "bundled")
    with Worker() as worker:
        assert worker.binary_source == "bundled"
    # What the caller names overrides what the package carries.
    on_path = tmp_path / "bin" / "image-worker"
    on_path.parent.mkdir()
    shutil.copy(binary, on_path)
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_binary() == (str(on_path), "PATH")
    monkeypatch.setenv("IMAGE_WORKER_BIN", binary)
    assert find_binary() == (os.path.abspath(binary), "$IMAGE_WORKER_BIN")


def test_the_image_worker_command_is_not_taken_for_the_worker(binary: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # pip writes this script for the console entry point; it runs the worker, it is not one.
    script = tmp_path / "image-worker"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom image_worker.__main__ import main\n"
                      "if __name__ == '__main__':\n    sys.exit(main())\n")
    script.chmod(0o755)
    monkeypatch.delenv("IMAGE_WORKER_BIN", raising=False)
    real = tmp_path / "later" / "image-worker"
    real.parent.mkdir()
    shutil.copy(binary, real)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{real.parent}")
    assert find_binary() == (str(real), "PATH")
    # Run as a user would, with nothing else anywhere: a clear message and 127, not itself again.
    env = {k: v for k, v in os.environ.items() if k != "IMAGE_WORKER_BIN"}
    env["PATH"] = f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin"
    env["PYTHONPATH"] = str(Path(image_worker.__file__).resolve().parent.parent)
    lost = subprocess.run([str(script), "--version"], env=env, capture_output=True, text=True, timeout=60)
    from image_worker import _binary
    elsewhere = _binary.bundled_binary() is not None or any(os.path.isfile(p) for p in _binary._repository_builds())
    if elsewhere:  # a wheel's worker, or the repository's release build: the command runs that
        assert lost.returncode == 0 and lost.stdout.strip() == image_worker.__version__, lost.stderr
    else:
        assert lost.returncode == 127, lost.stderr
        assert "cannot find the image-worker executable" in lost.stderr


def test_python_m_image_worker_runs_the_worker(binary: str) -> None:
    env = {**os.environ, "IMAGE_WORKER_BIN": binary,
           "PYTHONPATH": str(Path(image_worker.__file__).resolve().parent.parent)}
    version = subprocess.run([sys.executable, "-m", "image_worker", "--version"], env=env, capture_output=True,
                             text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.strip() == image_worker.__version__
    # The worker's own status and stderr come through: it replaced the Python process.
    usage = subprocess.run([sys.executable, "-m", "image_worker", "get"], env=env, capture_output=True, text=True,
                           timeout=60)
    assert usage.returncode not in (0, 127) and "give at least one URL" in usage.stderr
    # The protocol through it, as a program that spawns `python -m image_worker` would use it.
    served = subprocess.run([sys.executable, "-m", "image_worker"], env=env, capture_output=True, text=True,
                            input='{"jsonrpc": "2.0", "id": 1, "method": "status"}\n', timeout=60)
    assert served.returncode == 0 and '"id":1' in served.stdout.replace(" ", "")
