"""What a Python user does first with the wheel, run by scripts/package-check.sh with the python of
a fresh venv that holds only the wheel (Swift and the codec libraries hidden): the bundled worker
is the one found, it loads nothing from the system but glibc and the C++ runtime, and it
downloads, decodes every format and streams partial images; `python -m image_worker` and the
`image-worker` command run it.
    python scripts/package_check.py REPO"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(REPO / "clients" / "python" / "tests"))

import image_worker  # noqa: E402
from image_worker import PartialImage, Worker, download_many, find_binary  # noqa: E402
from loopback import LoopbackServer  # noqa: E402

def system_sonames() -> set[str]:
    """What a wheel may take from the system: the sonames in scripts/system-libraries.txt."""
    lines = (REPO / "scripts" / "system-libraries.txt").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def check(condition: bool, message: str) -> None:
    if not condition:
        print(f"package-check (python): FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def check_metadata() -> None:
    """What `pip show image-worker` and PyPI's page show: home page, author, project URLs,
    classifiers and keywords, as pyproject.toml gives them."""
    from importlib.metadata import metadata
    meta = metadata("image-worker")
    urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL") or [])
    check({"Homepage", "Repository", "Issues", "Documentation"} <= set(urls), f"project URLs: {urls}")
    check(all(u.startswith("https://") for u in urls.values()), f"project URLs: {urls}")
    check(bool(meta.get("Author") or meta.get("Author-email")), "no author")
    classifiers = meta.get_all("Classifier") or []
    check("Typing :: Typed" in classifiers and any(c.startswith("License ::") for c in classifiers), f"classifiers: {classifiers}")
    check("image" in (meta.get("Keywords") or ""), f"keywords: {meta.get('Keywords')}")
    shown = subprocess.run([sys.executable, "-m", "pip", "show", "image-worker"], capture_output=True, text=True).stdout
    check(f"Home-page: {urls['Homepage']}" in shown and "Author: The image-worker developers" in shown, f"pip show:\n{shown}")


def main() -> None:
    check_metadata()
    package = Path(image_worker.__file__).resolve().parent
    check(REPO not in package.parents, f"image_worker is imported from the source tree ({package}), not the wheel")
    path, source = find_binary()
    check(source == "bundled", f"find_binary() found {path} ({source}), not the bundled worker")
    check(Path(path).resolve().is_relative_to(package), f"the bundled worker {path} is outside {package}")

    ldd = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    libs_dir = (package.parent / "image_worker.libs").resolve()
    system = system_sonames()
    vendored, from_system = [], []
    for line in ldd.splitlines():
        name, _, where = line.strip().partition(" => ")
        name = name.split(" (")[0]
        resolved = where.split(" (")[0].strip()
        check("not found" not in where, f"ldd: {line.strip()}")
        if resolved and Path(resolved).resolve().is_relative_to(libs_dir):
            vendored.append(name)
            continue
        check(os.path.basename(name) in system, f"the worker loads {name} from the system ({resolved}); only glibc "
              "and the C++ runtime may come from there")
        from_system.append(os.path.basename(name))
    print(f"package-check (python): ldd: {len(vendored)} libraries from the wheel; from the system only "
          + ", ".join(sorted(from_system)))

    licenses = package / "_licenses"
    carried = sorted(p.name for p in (licenses / "libraries").glob("*.txt"))
    check((licenses / "README.txt").is_file() and (licenses / "swift-runtime-LICENSE.txt").is_file()
          and len(carried) >= 1 and any((licenses / "swift-packages").iterdir()),
          f"the wheel carries no licences in {licenses}")
    print(f"package-check (python): licences of {len(carried)} library packages, the Swift runtime and "
          f"{sum(1 for _ in (licenses / 'swift-packages').iterdir())} Swift package files")

    version = subprocess.run([sys.executable, "-m", "image_worker", "--version"], capture_output=True, text=True)
    check(version.returncode == 0 and version.stdout.strip() == image_worker.__version__,
          f"python -m image_worker --version: {version.returncode} {version.stdout!r} {version.stderr!r}")
    command = Path(sys.executable).parent / "image-worker"
    version = subprocess.run([str(command), "--version"], capture_output=True, text=True)
    check(version.returncode == 0 and version.stdout.strip() == image_worker.__version__,
          f"{command} --version: {version.returncode} {version.stdout!r} {version.stderr!r}")

    server = LoopbackServer()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch)
            with Worker() as worker:
                check(worker.binary_source == "bundled", f"Worker() started {worker.binary_source}")
                # A progressive JPEG trickled in small chunks: partial images, then the whole one.
                handle = worker.download(server.url("/files/testimgp.jpg?chunk=256&delayMs=15"), dir=str(out),
                                         format="png", progressive=True)
                partials = [e for e in handle if isinstance(e, PartialImage)]
                image = handle.result()
                check(len(partials) >= 1, "no partial image while a progressive JPEG arrived")
                check(image.path is not None and (image.width, image.height) == (227, 149),
                      f"testimgp.jpg: {image}")
                print(f"package-check (python): {len(partials)} partial images, then {image.path} "
                      f"{image.width}x{image.height}")
            # Every decoder, through the bulk path: each format's library is the wheel's own.
            names = ["testorig.jpg", "basn2c08.png", "basi6a08.png", "test.webp", "extended_pixi.avif", "beacon.gif"]
            outcomes = download_many([server.url(f"/files/{n}") for n in names], dir=str(out / "bulk"),
                                     format="png", progress=False)
            for name, outcome in zip(names, outcomes):
                check(outcome.ok and outcome.image is not None and outcome.image.width > 0,
                      f"{name}: {outcome.error!r}")
            print(f"package-check (python): decoded {', '.join(names)}")
            # The command line through `python -m image_worker`.
            got = subprocess.run([sys.executable, "-m", "image_worker", "get", "-o", str(out / "get"),
                                  server.url("/files/testorig.jpg")], capture_output=True, text=True)
            check(got.returncode == 0 and got.stdout.startswith("ok "), f"get: {got.returncode} {got.stdout!r} "
                  f"{got.stderr!r}")
            check((out / "get" / "testorig.jpg").stat().st_size > 0, "get wrote no file")
            print("package-check (python): python -m image_worker get: " + got.stdout.strip())
    finally:
        server.close()
    print("package-check (python): ok")


if __name__ == "__main__":
    main()
