"""The README's quick start runs as written: each fenced ``sh``, ``python`` and ``ts`` block, with
its example.org URLs pointed at the loopback server. Python blocks also pass ``mypy --strict`` and
the TypeScript block is compiled and run by the README's own ``sh ts`` command; and the first of
the "Two commands". (The ``sh source`` block, which builds the packages, is run by .ci/run, and the
``sh install`` block by scripts/package-check.sh; the second of the two commands is CI's own.)"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from loopback import REPO, LoopbackServer

README = REPO / "README.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(info: str) -> List[str]:
    return [body for tag, body in FENCE.findall(README.read_text()) if tag.strip() == info]


def loopback_urls(server: LoopbackServer) -> Dict[str, str]:
    # photo.jpg is a progressive JPEG arriving in chunks, so that partial images come.
    return {
        "https://example.org/photo.jpg": server.url("/files/testimgp.jpg?chunk=1024&delayMs=20"),
        "https://example.org/logo.png": server.url("/files/basn2c08.png"),
    }


def localised(body: str, server: LoopbackServer, shell: bool = False) -> str:
    """The block with loopback URLs (shell-quoted for a command line; as they are inside a string)."""
    for public, local in loopback_urls(server).items():
        body = body.replace(public, shlex.quote(local) if shell else local)
    assert "example.org" not in body, f"a README URL the test does not serve:\n{body}"
    return body


def environment(binary: str, tmp_path: Path) -> Dict[str, str]:
    # `image-worker` on PATH, as the README's reader has it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "image-worker").exists():
        (bin_dir / "image-worker").symlink_to(os.path.abspath(binary))
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "IMAGE_WORKER_BIN": binary}


def run(command: List[str], cwd: Path, env: Dict[str, str]) -> Tuple[str, str]:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{command} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout, result.stderr


def test_the_readme_has_its_quick_start() -> None:
    assert len(blocks("sh")) == 2 and len(blocks("python")) == 1 and len(blocks("ts")) == 1 and len(blocks("sh ts")) == 1
    assert len(blocks("sh install")) == 1 and len(blocks("sh source")) == 1


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed (Debian: jq)")
def test_the_shell_blocks(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    env = environment(binary, tmp_path)
    get, protocol = blocks("sh")
    (tmp_path / "urls.txt").write_text("\n".join(loopback_urls(server).values()) + "\n")
    stdout, _ = run(["bash", "-euo", "pipefail", "-c", localised(get, server, shell=True)], tmp_path, env)
    assert stdout.count("ok ") >= 2 and "failed" not in stdout, stdout
    records = [json.loads(line) for line in (tmp_path / "job.jsonl").read_text().splitlines()]
    assert sorted(r["outcome"] for r in records) == ["ok", "ok"], records
    assert {r["format"] for r in records} == {"webp"} and all(max(r["width"], r["height"]) <= 256 for r in records)
    # A photo's thumbnail is smaller than the photo (PNG thumbnails of JPEG photos were larger).
    (photo,) = [r for r in records if r["path"].endswith("testimgp.webp")]
    assert os.path.getsize(photo["path"]) < len(server.files["testimgp.jpg"]), photo
    # Exact squares: every URL's image cropped to 256 x 256 (a JPEG's size is in its frame header).
    from PIL import Image
    squares = sorted((tmp_path / "squares").iterdir())
    assert len(squares) == len(records) and all(Image.open(p).size == (256, 256) for p in squares), squares

    stdout, _ = run(["bash", "-euo", "pipefail", "-c", localised(protocol, server)], tmp_path, env)
    assert len(stdout.splitlines()) == 1, stdout
    completed = json.loads(stdout)
    assert completed["token"] == "a" and completed["outcome"] == "success", completed
    assert (completed["width"], completed["height"]) == (227, 149) and Path(completed["path"]).is_file()


def test_the_python_block(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    script = tmp_path / "quick_start.py"
    script.write_text(localised(blocks("python")[0], server))
    env = environment(binary, tmp_path)
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.fail("mypy is not installed: clients/test.sh installs it")
    run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(script)], tmp_path, env)
    stdout, _ = run([sys.executable, str(script)], tmp_path, env)
    lines = stdout.splitlines()
    assert sum(1 for line in lines if line.startswith("partial image")) >= 1, stdout
    assert lines[-2].endswith("227 149 jpeg") and "previews/testimgp.png" in lines[-2], stdout
    assert lines[-1] == "(256, 256, 3)", stdout
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == ["basn2c08.png", "testimgp.jpg"]


@pytest.mark.skipif(shutil.which("node") is None or shutil.which("tsc") is None or shutil.which("npx") is None,
                    reason="node, npx and tsc are needed (Debian: nodejs, npm, node-typescript)")
def test_the_typescript_block(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    # A project as the README's reader has it: the client installed, and TypeScript
    # (`npm install --save-dev typescript`; here the system's, so that nothing is fetched).
    modules = tmp_path / "node_modules"
    (modules / ".bin").mkdir(parents=True)
    (modules / "image-worker").symlink_to(REPO / "clients" / "node")
    (modules / ".bin" / "tsc").symlink_to(str(shutil.which("tsc")))
    (tmp_path / "package.json").write_text(json.dumps({"name": "quick", "private": True}))
    (tmp_path / "quick.mts").write_text(localised(blocks("ts")[0], server))
    env = environment(binary, tmp_path)
    # The README's own command, as written.
    (command,) = blocks("sh ts")
    stdout, _ = run(["bash", "-euo", "pipefail", "-c", command], tmp_path, env)
    lines = stdout.splitlines()
    assert sum(1 for line in lines if line.startswith("partial image")) >= 1, stdout
    assert lines[-1].endswith("227 149") and "previews/testimgp.png" in lines[-1], stdout
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == ["basn2c08.png", "testimgp.jpg"]


def test_the_main_job_of_the_two_commands(binary: str, tmp_path: Path) -> None:
    # "Two commands": the first runs the main job (the second, scripts/test.sh, is what CI runs).
    text = README.read_text()
    section = text[text.index("## Two commands"):text.index("## Run every test")]
    commands = [line.strip().split("#")[0].strip() for line in section.splitlines() if line.startswith("    ")]
    assert commands == ["scripts/demo.sh", "scripts/test.sh"], commands
    env = {**os.environ, "IMAGE_WORKER": binary, "TMPDIR": str(tmp_path)}
    stdout, stderr = run(["bash", "-c", commands[0]], REPO, env)
    events = [json.loads(line) for line in stdout.splitlines()]
    completed = {e["params"]["token"]: e["params"] for e in events if e.get("method") == "download/completed"}
    assert completed["decoded"]["outcome"] == "success" and completed["decoded"]["mimeType"] == "image/png", completed
    assert completed["missing"]["outcome"] == "error"
    assert sum(1 for c in completed.values() if c["outcome"] == "success") == len(completed) - 1
    assert "files written to" in stderr
