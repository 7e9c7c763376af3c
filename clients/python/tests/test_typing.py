"""The options are typed: ``mypy --strict`` passes the README's uses and catches the mistakes in
typing_check.py (each marked with the ``type: ignore`` it needs; --strict reports one that
ignores nothing, so a mistake mypy stopped catching fails here)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_mypy_strict_catches_misspelt_and_impossible_options() -> None:
    pytest.importorskip("mypy")
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", f"--cache-dir={os.devnull}",
                          str(HERE / "typing_check.py")],
                         capture_output=True, text=True, cwd=HERE, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = (HERE / "typing_check.py").read_text().splitlines()
    assert sum("# type: ignore[" in line for line in lines) >= 12
