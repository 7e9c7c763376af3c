#!/usr/bin/env bash
# The Ray fan-out benchmark (scripts/distributed-bench.py) in a venv with Ray and the Python client
# (.build-bench/ray-venv, made once), against the debug binary unless --binary says otherwise.
#   scripts/distributed-bench.sh [--urls N] [--rounds N] [--format original|png] [--binary PATH]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.build-bench/ray-venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$root/clients/python[ray]"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$root/clients/python"
[ -x "$root/.build/debug/image-worker" ] || (cd "$root" && swift build)
exec "$venv/bin/python" "$root/scripts/distributed-bench.py" "$@"
