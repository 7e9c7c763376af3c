#!/usr/bin/env bash
# Proves the packages scripts/package.sh built on a machine without Swift or codecs: installs the
# wheel into a fresh venv and the two npm tarballs into a fresh folder (offline: nothing else is
# needed), then, in a mount namespace where /opt/swift is an empty tmpfs and every system library
# the source build loads besides glibc and the C++ runtime reads as empty (so loading one fails),
# runs scripts/package_check.py and scripts/package_check.mjs: the bundled worker is found, `ldd`
# resolves only glibc and libstdc++/libgcc_s from the system, and a download, every decoder,
# partial images and the command line work. With --ray it then runs the Ray tests
# (clients/python/tests/test_distributed.py) from a venv that has the wheel and Ray, no source,
# and scripts/package_check_ray.py: actors that get the worker from the wheel in runtime_env.
#   scripts/package-check.sh [--dist DIR] [--ray]
set -euo pipefail
source "$(dirname "$0")/package-names.sh"
ray=no
while [ $# -gt 0 ]; do
    case $1 in
        --dist) dist=$(realpath "$2"); shift ;;
        --ray) ray=yes ;;
        *) echo "usage: scripts/package-check.sh [--dist DIR] [--ray]" >&2; exit 2 ;;
    esac
    shift
done
package_names "$dist"
wheel=$(ls "$dist"/$wheel_pattern)
[ -f "$client_tgz" ] && [ -f "$platform_tgz" ] || { echo "package-check: no npm tarballs in $dist (scripts/package.sh)" >&2; exit 1; }
case $(basename "$wheel") in
    *manylinux_2_*) echo "package-check: $(basename "$wheel")" ;;
    *) echo "package-check: the wheel has no manylinux tag: $wheel" >&2; exit 1 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The README's install block, as written (its `dist/` is $dist), with pip the fresh venv's and npm
# in a fresh folder; offline, as neither needs more than the files.
install_block=$(awk '/^```sh install$/ { found = 1; next } found && /^```$/ { exit } found' README.md)
[ -n "$install_block" ] || { echo "package-check: README.md has no \`\`\`sh install block" >&2; exit 1; }
python3 -m venv "$work/venv"
mkdir "$work/npm"
echo '{"name": "package-check", "private": true}' > "$work/npm/package.json"
ln -s "$dist" "$work/npm/dist"
echo "package-check: README's install block:"
printf '%s\n' "$install_block" | sed 's/^/    /'
(cd "$work/npm" && PATH="$work/venv/bin:$PATH" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    npm_config_offline=true npm_config_audit=false npm_config_fund=false bash -euo pipefail -c "$install_block")

# The client's tarball alone, against a registry on loopback that records what it is asked: npm
# must ask it nothing (a dependency on the platform package's name, which is not published, would
# let whoever publishes it first run code on the user's machine; an offline install skips a
# missing optional dependency silently, so this is online, to a registry of our own).
mkdir "$work/alone"
echo '{"name": "package-check-alone", "private": true}' > "$work/alone/package.json"
python3 - "$work/registry.log" "$work/registry.port" <<'PY' &
import http.server, sys
log, port_file = sys.argv[1], sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f: f.write(self.path + "\n")
        self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *args): pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
open(port_file, "w").write(str(server.server_address[1]))
server.serve_forever()
PY
registry_pid=$!
for _ in $(seq 100); do [ -s "$work/registry.port" ] && break; sleep 0.05; done
(cd "$work/alone" && npm_config_registry="http://127.0.0.1:$(cat "$work/registry.port")/" npm_config_audit=false \
    npm_config_fund=false npm_config_update_notifier=false npm install -q "$client_tgz" >/dev/null)
kill "$registry_pid"
if [ -s "$work/registry.log" ]; then
    echo "package-check: installing $(basename "$client_tgz") alone asked the registry for: $(paste -sd' ' "$work/registry.log")" >&2
    exit 1
fi
echo "package-check: the client's tarball alone installs without asking a registry"

# The system libraries to hide: what the source build loads besides glibc and the C++/GCC runtime
# (scripts/vendored-libraries.sh).
# zlib stays visible, as Python's own zlib module loads it; ldd proves the worker takes its own.
reference=$root/.build-dist/release/image-worker
[ -x "$reference" ] || reference=$root/.build/debug/image-worker
hide=()
while read -r lib; do
    case $(basename "$lib") in libz.so.*) ;; *) hide+=("$(realpath "$lib")") ;; esac
done < <(scripts/vendored-libraries.sh "$reference")
echo "package-check: hiding /opt/swift and ${#hide[@]} system libraries: ${hide[*]##*/}"

# Run in a namespace of our own (as root, or as a mapped root in a user namespace).
namespace=(unshare --mount --propagation private)
[ "$(id -u)" -eq 0 ] || namespace=(unshare --map-root-user --mount --propagation private)
hidden() {
    "${namespace[@]}" env -u IMAGE_WORKER_BIN HIDE="${hide[*]}" ROOT="$root" bash -c '
        set -euo pipefail
        mount -t tmpfs tmpfs /opt/swift
        # The repository'"'"'s own builds too: nothing may find a worker there.
        for build in "$ROOT"/.build "$ROOT"/.build-*; do if [ -d "$build" ]; then mount -t tmpfs tmpfs "$build"; fi; done
        for lib in $HIDE; do mount --bind /dev/null "$lib"; done
        if command -v swift >/dev/null 2>&1 && swift --version >/dev/null 2>&1; then
            echo "package-check: swift still runs inside the namespace" >&2; exit 1
        fi
        # Nothing named image-worker on PATH but what the packages install.
        export PATH=$(printf "%s" "$PATH" | tr ":" "\n" | grep -v -e "/\.build" -e "^/opt/swift" | paste -sd: -)
        "$@"' hidden "$@"
}
hidden "$work/venv/bin/python" scripts/package_check.py "$root"
# The oldest Python the wheel promises (3.9), when this machine has one (pyenv's, or on PATH).
oldest=""
for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.9*/bin/python python3.9; do
    # (a pyenv shim answers to the name but may not run)
    if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 9)' >/dev/null 2>&1; then
        oldest=$(command -v "$candidate"); break
    fi
done
if [ -n "$oldest" ]; then
    "$oldest" -m venv "$work/venv39"
    "$work/venv39/bin/python" -m pip install -q --disable-pip-version-check --no-index "$wheel"
    echo "package-check: again with $("$work/venv39/bin/python" --version)"
    hidden "$work/venv39/bin/python" scripts/package_check.py "$root"
else
    echo "package-check: no Python 3.9 on this machine; checked with $("$work/venv/bin/python" --version) only"
fi
hidden node scripts/package_check.mjs "$root" "$work/npm"

if [ $ray = yes ]; then
    # Ray and pytest beside the wheel; no source on the path: the tests import the wheel's package
    # and start its bundled worker (tests/conftest.py prefers it when $IMAGE_WORKER_BIN is unset).
    "$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel[ray]" pytest
    (cd clients/python && hidden "$work/venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_distributed.py)
    # The README's way to a cluster without a toolchain: the wheel in the job's runtime_env, and a
    # driver that has the client but no worker (Ray clones the driver's venv for the actors, with
    # virtualenv, and pip-installs the wheel there).
    python3 -m venv "$work/driver"
    "$work/driver/bin/python" -m pip install -q --disable-pip-version-check ray pyarrow virtualenv
    hidden "$work/driver/bin/python" scripts/package_check_ray.py "$root" "$wheel"
fi
echo "package-check: ok"
