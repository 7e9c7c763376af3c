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


def _pip_script(folder: Path) -> Path:
    """The script pip writes for the wheel's console entry point."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "image-worker"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom image_worker.__main__ import main\n"
                      "if __name__ == '__main__':\n    sys.exit(main())\n")
    script.chmod(0o755)
    return script


def _npm_shim(folder: Path) -> Path:
    """What npm puts on PATH for the Node package: a link to its bin/image-worker.js."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "image-worker"
    shim.symlink_to(Path(__file__).resolve().parents[2] / "node" / "bin" / "image-worker.js")
    return shim


def test_both_clients_entry_points_on_path_never_start_each_other(binary: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """With the wheel's script and npm's shim both on PATH, each client passes over the other's
    (the worker the package carries wins), and no entry point ever starts another: before, each
    took the other's for the worker, an endless and growing chain of processes."""
    from image_worker import _binary
    npm = _npm_shim(tmp_path / "npm-bin")
    pip = _pip_script(tmp_path / "venv-bin")
    carried = tmp_path / "package" / "_bin" / "image-worker"
    carried.parent.mkdir(parents=True)
    shutil.copy(binary, carried)
    monkeypatch.setattr(_binary, "BUNDLED", str(carried))
    monkeypatch.delenv("IMAGE_WORKER_BIN", raising=False)
    for order in ([npm.parent, pip.parent], [pip.parent, npm.parent]):
        monkeypatch.setenv("PATH", os.pathsep.join(map(str, order)))
        assert find_binary() == (str(carried), "bundled")
    # Run as a user would, each entry point with the other first on PATH: a worker or a clear
    # message (127), never a chain; a timeout here would be the chain.
    env = {k: v for k, v in os.environ.items() if k not in ("IMAGE_WORKER_BIN", "IMAGE_WORKER_ENTRY_POINT")}
    env["PYTHONPATH"] = str(Path(image_worker.__file__).resolve().parent.parent)
    system = f"{os.pathsep}/usr/bin{os.pathsep}/bin"
    node = shutil.which("node")
    runs = [(pip, f"{npm.parent}{os.pathsep}{pip.parent}{system}")]
    if node:
        runs.append((npm, f"{pip.parent}{os.pathsep}{npm.parent}{os.pathsep}{os.path.dirname(node)}{system}"))
    for entry, path in runs:
        done = subprocess.run([str(entry), "--version"], env={**env, "PATH": path}, capture_output=True, text=True, timeout=60)
        assert done.returncode in (0, 127), (entry, done.returncode, done.stderr)
        assert "started by another one" not in done.stderr, done.stderr
        if done.returncode == 0:
            assert done.stdout.strip() == image_worker.__version__
    # An entry point started by another one (whatever shape it had) refuses at once.
    guarded = subprocess.run([str(pip), "--version"], env={**env, "IMAGE_WORKER_ENTRY_POINT": "node",
                             "IMAGE_WORKER_BIN": binary}, capture_output=True, text=True, timeout=60)
    assert guarded.returncode == 127 and "started by another one (node)" in guarded.stderr


def test_a_relative_path_entry_gives_an_absolute_path(binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With `.` on PATH the worker found is named absolutely: `Worker(cwd=...)` starts that file,
    not another one relative to its new folder."""
    shutil.copy(binary, tmp_path / "image-worker")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IMAGE_WORKER_BIN", raising=False)
    for entry in (".", "./"):
        monkeypatch.setenv("PATH", f"{entry}{os.pathsep}/nonexistent")
        path, source = find_binary()
        assert source == "PATH" and path == str(tmp_path / "image-worker"), path
    monkeypatch.setenv("PATH", ".")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with Worker(cwd=str(elsewhere)) as worker:
        assert worker.binary == str(tmp_path / "image-worker")
        assert worker.status() is not None
