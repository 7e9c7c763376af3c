#!/usr/bin/env python3
"""Each Swift module imports exactly what Package.swift declares for it, and ARCHITECTURE.md's
import lines say the same of the project's own modules.

    scripts/check-imports.py          # exit 1 and one line per mismatch

A module that imports one it does not declare builds today only because another target pulled
the module in; one that declares a dependency it never imports carries a dead edge. Both are
reported, as is an ARCHITECTURE.md line that lists other first-party modules than the code imports.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The toolchain's and the platform's modules, which no Package.swift declares.
SYSTEM = {"Foundation", "FoundationEssentials", "Dispatch", "Glibc", "Musl", "Darwin",
          "Synchronization", "Testing", "XCTest", "_Concurrency", "Observation"}
IMPORT = re.compile(r"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:public\s+|internal\s+|package\s+)?"
                    r"import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
                    re.M)


def package():
    out = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def declared(target):
    names = set()
    for dep in target["dependencies"]:
        kind, value = next(iter(dep.items()))
        names.add(value[0])  # byName / target: the module; product: its name (each is one module here)
    return names


def header(text):
    """A file's lines before its first declaration: imports, comments, `#if`s (so an `import` in
    a string literal further down, a script the test writes, is not taken for one)."""
    lines = []
    for line in text.splitlines():
        bare = line.strip()
        if bare and not bare.startswith(("//", "/*", "*", "#", "@")) and not IMPORT.match(line):
            break
        lines.append(line)
    return "\n".join(lines)


def swift_files(path):
    for folder, _, files in os.walk(path):
        for name in sorted(files):
            if name.endswith(".swift"):
                yield os.path.join(folder, name)


def imports(path):
    found = {}
    for file in swift_files(path):
        text = open(file, encoding="utf-8").read()
        # `#if canImport(Glibc) import Glibc`: the platform's choice, in SYSTEM.
        for module in IMPORT.findall(header(text)):
            found.setdefault(module, os.path.relpath(file, ROOT))
    return found


def architecture_lines():
    """`Module → A, B (+ libraries)` lines of ARCHITECTURE.md's module block."""
    text = open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8").read()
    block = text.split("```", 2)[1]
    lines = {}
    for line in block.splitlines():
        if "→" not in line:
            continue
        name, rest = (part.strip() for part in line.split("→")[:2])
        rest = re.sub(r"\(.*?\)", "", rest)
        lines[name] = {word.strip() for word in rest.split(",") if word.strip()}
    return lines


def main():
    pkg = package()
    targets = {t["name"]: t for t in pkg["targets"]}
    first_party = set(targets)
    problems = []
    imported_first_party = {}
    for name, target in sorted(targets.items()):
        if target["type"] == "system":
            continue
        base = "Tests" if target["type"] == "test" else "Sources"
        path = os.path.join(ROOT, target.get("path") or os.path.join(base, name))
        if next(swift_files(path), None) is None:
            continue  # a C target
        found = imports(path)
        wanted = declared(target)
        for module, file in sorted(found.items()):
            if module not in SYSTEM and module not in wanted and module != name:
                problems.append(f"{name}: {file} imports {module}, which Package.swift does not declare for it")
        for module in sorted(wanted - set(found)):
            # A C module linked for its symbols is imported by the Swift code that calls it only.
            problems.append(f"{name}: Package.swift declares {module}, which none of its files imports")
        imported_first_party[name] = {m for m in found if m in first_party and m != name}
    for name, listed in architecture_lines().items():
        if name not in imported_first_party:
            problems.append(f"ARCHITECTURE.md: {name} is not a Swift module of Package.swift")
            continue
        code = imported_first_party[name]
        listed_first_party = {m for m in listed if m in first_party}
        if listed_first_party != code:
            problems.append(f"ARCHITECTURE.md: {name} → {', '.join(sorted(listed_first_party)) or 'nothing'}, "
                            f"but its code imports {', '.join(sorted(code)) or 'nothing'}")
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"check-imports: {len(problems)} mismatch(es) between the imports, Package.swift and ARCHITECTURE.md",
              file=sys.stderr)
        return 1
    print(f"check-imports: {len(imported_first_party)} modules import what Package.swift and ARCHITECTURE.md say")
    return 0


if __name__ == "__main__":
    sys.exit(main())
