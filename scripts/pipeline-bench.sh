#!/usr/bin/env bash
# The whole-pipeline benchmark in one command: installs what this machine lacks (nginx, curl,
# aria2; a venv with aiohttp, Pillow, numpy, scikit-image, PyTurboJPEG, OpenCV, pyvips and this checkout's
# Python client, and one with img2dataset, under .build-bench/), makes the corpus from
# ../shared/bench/make_corpus.py (once), builds the release worker as the packages carry it
# (scripts/package.sh's build: the Swift runtime linked in, into .build-dist/), serves the corpus with nginx
# on 127.0.0.1:8081, and runs scripts/pipeline_bench.py (arguments pass through, e.g. --rounds 5
# or --jobs decode,thumb-png).
#   scripts/pipeline-bench.sh [--rounds N] [--scaling [--scaling-rounds N]] [--jobs LIST]
#   scripts/pipeline-bench.sh --dataset [--rounds N]   (scripts/dataset_bench.py: get's shards
#                                                       against img2dataset's)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench="$root/../shared/bench"
work="$root/.build-bench"
[ -f "$bench/make_corpus.py" ] || { echo "pipeline-bench: ../shared/bench is not beside the repository" >&2; exit 1; }
missing=()
for tool in nginx curl; do command -v "$tool" >/dev/null || missing+=("$tool")
done
command -v aria2c >/dev/null || missing+=(aria2)
"$root/scripts/system-packages.sh" build
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    echo "pipeline-bench: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ! -x "$work/venv/bin/python" ]; then
    python3 -m venv "$work/venv"
fi
"$work/venv/bin/python" -c "import aiohttp, PIL, numpy, skimage, turbojpeg, cv2, pyvips" 2>/dev/null ||
    "$work/venv/bin/pip" install -q aiohttp pillow numpy scikit-image "PyTurboJPEG<2" opencv-python-headless pyvips pyvips-binary
# The Python client of this checkout, installed as a user installs it (editable: it follows the
# checkout), for the user-path jobs (py-dir, py-numpy).
"$work/venv/bin/python" -c "import image_worker, sys; sys.exit(not image_worker.__file__.startswith('$root/'))" 2>/dev/null ||
    "$work/venv/bin/pip" install -q -e "$root/clients/python"
# Its bytecode, as pip compiles an installed wheel's (and the anchor's aiohttp): where
# PYTHONDONTWRITEBYTECODE is set, each run would otherwise compile the client anew (20-25 ms).
"$work/venv/bin/python" -m compileall -q "$root/clients/python/src/image_worker"
# img2dataset in a venv of its own (its dependencies pin versions the first venv's tools do not want).
if [ ! -x "$work/i2d/bin/img2dataset" ]; then
    python3 -m venv "$work/i2d"
    "$work/i2d/bin/pip" install -q img2dataset
fi
if [ ! -f "$work/corpus/web_urls.txt" ]; then
    echo "pipeline-bench: making the corpus (once)" >&2
    "$work/venv/bin/python" "$bench/make_corpus.py" "$work/corpus" --skip-sizes >&2
fi
# The worker users run: the one the wheel and npm packages carry, and the README's from-source
# build (scripts/package.sh), not `swift build -c release`'s, which loads the Swift runtime's
# shared libraries (slower to start; BENCHMARKS.md).
(cd "$root" && swift build -c release --static-swift-stdlib --product image-worker --scratch-path "$root/.build-dist" >&2)
# The JPEG-phases anchor, with whichever C compiler there is (Swift's toolchain brings clang).
compiler=$(command -v "${CC:-cc}" || command -v clang || command -v gcc) || { echo "pipeline-bench: no C compiler" >&2; exit 1; }
"$compiler" -O2 -o "$work/jpeg_phases" "$root/scripts/anchors/jpeg_phases.c" -lturbojpeg -ljpeg
export STATE="$work/serve"
"$bench/serve.sh" stop >/dev/null 2>&1 || true
"$bench/serve.sh" start "$work/corpus" >&2
trap '"$bench/serve.sh" stop >/dev/null 2>&1 || true' EXIT
if [ "${1:-}" = --dataset ]; then
    shift
    "$work/venv/bin/python" "$root/scripts/dataset_bench.py" --corpus "$work/corpus" --base http://127.0.0.1:8081 \
        --worker "$root/.build-dist/release/image-worker" --img2dataset "$work/i2d/bin/img2dataset" "$@"
    exit
fi
"$work/venv/bin/python" "$root/scripts/pipeline_bench.py" --corpus "$work/corpus" --base http://127.0.0.1:8081 \
    --python "$work/venv/bin/python" --phases "$work/jpeg_phases" --img2dataset "$work/i2d/bin/img2dataset" "$@"
