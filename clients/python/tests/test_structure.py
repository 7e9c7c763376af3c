"""The package's modules import each other without a circle (each can be read, and loaded,
after the ones it names)."""

import ast
from pathlib import Path
from typing import Dict, List, Set

import image_worker

PACKAGE = Path(image_worker.__file__).parent


def _imports() -> Dict[str, Set[str]]:
    graph: Dict[str, Set[str]] = {}
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        graph[path.stem] = {node.module for node in ast.walk(tree)
                            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}
    return graph


def test_no_module_imports_itself_through_others() -> None:
    graph = _imports()
    assert {"_worker", "_bulk", "_async", "_core"} <= set(graph)
    done: Set[str] = set()

    def visit(module: str, path: List[str]) -> None:
        assert module not in path, "import circle: " + " -> ".join(path + [module])
        if module in done:
            return
        for imported in sorted(graph.get(module, set())):
            visit(imported, path + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_a_sync_script_does_not_pay_for_asyncio() -> None:
    """``import image_worker`` leaves asyncio (about 90 ms, a tenth of a thousand-file job) to
    the first use of the asyncio API, which still works."""
    import subprocess
    import sys
    probe = ("import sys, image_worker; assert 'asyncio' not in sys.modules, 'asyncio imported';"
             "from image_worker import AsyncWorker; assert AsyncWorker.__name__ == 'AsyncWorker'")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_option_tables_are_what_the_schema_gives() -> None:
    """``_option_table.py``, Node's ``lib/option-table.js``, ``index.d.ts`` and the worker's
    ``OptionTable.swift`` are written by scripts/generate-options.py from protocol/schema: none
    may drift from it (run the script after editing the schema)."""
    import subprocess
    import sys

    import pytest

    root = PACKAGE.parents[3]
    script = root / "scripts" / "generate-options.py"
    if not script.exists():
        pytest.skip("an installed package, away from the repository")
    run = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_both_packages_say_where_they_come_from() -> None:
    """What ``pip show`` / PyPI and npm's page show: the same repository, licence and author in
    both packages, a home page, keywords and classifiers (as ruff's and esbuild's packages do)."""
    import json
    import re
    client = Path(__file__).resolve().parents[1]
    pyproject = (client / "pyproject.toml").read_text()
    package = json.loads((client.parent / "node" / "package.json").read_text())
    repository = re.search(r'^Repository = "([^"]+)"$', pyproject, re.MULTILINE)
    assert repository is not None, "pyproject.toml: [project.urls] Repository"
    assert package["repository"]["url"] == f"git+{repository.group(1)}.git"
    assert package["bugs"]["url"] == f"{repository.group(1)}/issues" and f'Issues = "{repository.group(1)}/issues"' in pyproject
    assert package["homepage"].startswith(repository.group(1)) and f'Homepage = "{repository.group(1)}"' in pyproject
    # `pip show` prints Home-page, which only setup.py can give: the same address.
    assert f'url="{repository.group(1)}"' in (client / "setup.py").read_text()
    assert f'name = "{package["author"]}"' in pyproject and f'license = {{ text = "{package["license"]}" }}' in pyproject
    assert "image" in package["keywords"] and '"image"' in pyproject
    assert "Typing :: Typed" in pyproject and "License :: OSI Approved :: MIT License" in pyproject
