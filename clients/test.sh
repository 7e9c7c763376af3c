#!/usr/bin/env bash
# The clients' tests against the built binary (.build/debug/image-worker unless $IMAGE_WORKER_BIN):
# the Python package (installed into a throwaway venv, mypy --strict, pytest) and the Node
# package (node --test; tsc checks index.d.ts when installed), then the preview example in
# headless chromium (clients/examples/preview/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export IMAGE_WORKER_BIN="${IMAGE_WORKER_BIN:-$root/.build/debug/image-worker}"
[ -x "$IMAGE_WORKER_BIN" ] || { echo "clients: no binary at $IMAGE_WORKER_BIN (run swift build)" >&2; exit 1; }

venv="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$root/clients/python"
# (Pillow: the reference the geometry and colour tests are held to, imported as PIL; pyvips, with
# libvips in pyvips-binary: the smart crops'; webdataset: the reader get's shards are held to;
# pandas: the DataFrames download_dataset takes.)
for module in pytest jsonschema mypy pyarrow numpy PIL pyvips webdataset pandas; do
    packages=$module
    [ "$module" = PIL ] && packages=Pillow
    [ "$module" = pyvips ] && packages="pyvips pyvips-binary"
    # shellcheck disable=SC2086 # (two packages for pyvips)
    "$venv/bin/python" -c "import $module" 2>/dev/null || "$venv/bin/python" -m pip install -q --disable-pip-version-check $packages
done
echo "clients: mypy --strict"
(cd "$root/clients/python" && "$venv/bin/python" -m mypy --strict src/image_worker)
echo "clients: pytest"
(cd "$root/clients/python" && "$venv/bin/python" -m pytest -q -p no:cacheprovider tests)
echo "clients: node --test"
(cd "$root/clients/node" && node --test test/)
echo "clients: the preview example in headless chromium"
websocket=()
node -e 'process.exit(typeof WebSocket === "undefined" ? 1 : 0)' || websocket=(--experimental-websocket)
(cd "$root" && node "${websocket[@]}" --test clients/examples/preview/test/)
