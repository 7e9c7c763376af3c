#!/usr/bin/env bash
# The main job with no network beyond loopback: serve samples/ on 127.0.0.1, download every
# sample through image-worker into a fresh directory (and some decoded: a progressive JPEG to PNG,
# a WebP and an animated GIF to JPEG), and print the events
# as they arrive.
#   scripts/demo.sh            (installs the system packages a fresh machine lacks, and builds the
#                               debug binary first if it is missing)
#   IMAGE_WORKER=path/to/image-worker scripts/demo.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${IMAGE_WORKER:-$root/.build/debug/image-worker}
if [ ! -x "$bin" ]; then
    "$root/scripts/system-packages.sh" build
    echo "building image-worker…" >&2
    (cd "$root" && swift build --product image-worker >&2)
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/image-worker-demo.XXXXXX")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$root/samples" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    sleep 0.1
done

{
    printf '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n'
    for path in "$root"/samples/*.jpg "$root"/samples/*.png "$root"/samples/*.gif "$root"/samples/*.webp "$root"/samples/*.avif; do
        name=$(basename "$path")
        printf '{"jsonrpc":"2.0","method":"download","params":{"token":"%s","url":"http://127.0.0.1:%s/%s","output":{"delivery":"file","dir":"%s"}}}\n' \
            "$name" "$port" "$name" "$out"
    done
    # The same progressive JPEG decoded (libjpeg-turbo) and delivered as a PNG, with partial images
    # if the bytes arrive slowly enough to show any.
    printf '{"jsonrpc":"2.0","method":"download","params":{"token":"decoded","url":"http://127.0.0.1:%s/testimgp.jpg","progressive":true,"output":{"format":"png","delivery":"file","dir":"%s"}}}\n' \
        "$port" "$out"
    # A WebP and an animated GIF decoded and written as JPEG (the GIF's first frame; the event
    # says how many frames it has).
    printf '{"jsonrpc":"2.0","method":"download","params":{"token":"webp-as-jpeg","url":"http://127.0.0.1:%s/test.webp","output":{"format":"jpeg","quality":85,"delivery":"file","path":"%s/test-from-webp.jpg"}}}\n' \
        "$port" "$out"
    printf '{"jsonrpc":"2.0","method":"download","params":{"token":"gif-as-jpeg","url":"http://127.0.0.1:%s/beacon.gif","output":{"format":"jpeg","delivery":"file","path":"%s/beacon-first-frame.jpg"}}}\n' \
        "$port" "$out"
    printf '{"jsonrpc":"2.0","method":"download","params":{"token":"missing","url":"http://127.0.0.1:%s/no-such-image.jpg"}}\n' "$port"
} | "$bin"

echo >&2
echo "files written to $out:" >&2
ls -l "$out" >&2
