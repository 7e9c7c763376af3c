#!/usr/bin/env bash
# Installs what a fresh Debian or Ubuntu machine lacks for image-worker, and nothing it has:
#   build   pkg-config and the codecs' libraries (libjpeg-turbo, TurboJPEG, libpng, libdeflate,
#           libzstd, Brotli, libwebp, giflib, libavif, Little CMS, libjxl), and python3 (the demo's
#           loopback server)
#   test    what the tests use besides: djpeg, dwebp, avifdec, djxl and Pillow (reference decoders),
#           Python's venv, node and tsc, jq, script(1),
#           chromium (the preview example's browser test), gdb (the stacks of a worker that
#           would not exit, in the failure's message), and tinyproxy (a real proxy to go through)
#   package what scripts/package.sh and package-check.sh use besides: npm (npm pack), strip
#           (binutils), Python's venv, and unshare (util-linux)
# Checks by what is used (pkg-config modules, commands), installs with apt-get (through sudo when
# not root). Where that cannot work (no apt-get, or not root and no sudo) it says what to install
# and exits 1.
#   scripts/system-packages.sh build [test] [package]
set -euo pipefail
missing=()
need() { missing+=("$@"); }
for set in "$@"; do
    case "$set" in
    build)
        command -v python3 >/dev/null || need python3
        command -v pkg-config >/dev/null || need pkg-config
        for pair in libjpeg:libjpeg-dev libturbojpeg:libturbojpeg0-dev libpng:libpng-dev libdeflate:libdeflate-dev libzstd:libzstd-dev libbrotlidec:libbrotli-dev \
            libwebpdemux:libwebp-dev libavif:libavif-dev lcms2:liblcms2-dev libjxl:libjxl-dev; do
            command -v pkg-config >/dev/null && pkg-config --exists "${pair%%:*}" || need "${pair#*:}"
        done
        # giflib has no pkg-config file.
        [ -f /usr/include/gif_lib.h ] || need libgif-dev
        ;;
    test)
        command -v djpeg >/dev/null || need libjpeg-turbo-progs
        # The reference decoders of the WebP, AVIF and GIF tests: dwebp, avifdec, Pillow.
        command -v dwebp >/dev/null || need webp
        command -v avifdec >/dev/null || need libavif-bin
        command -v djxl >/dev/null || need libjxl-tools
        { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import PIL' 2>/dev/null; } || need python3-pil
        python3 -c 'import ensurepip, venv' 2>/dev/null || need python3-venv
        command -v node >/dev/null || need nodejs
        command -v tsc >/dev/null || need node-typescript
        # The README's TypeScript command is `npx tsc …`, as its reader runs it.
        command -v npx >/dev/null || need npm
        command -v jq >/dev/null || need jq
        command -v script >/dev/null || need bsdutils
        command -v gdb >/dev/null || need gdb
        command -v tinyproxy >/dev/null || [ -x /usr/bin/tinyproxy ] || need tinyproxy
        command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null \
            || need chromium
        ;;
    package)
        command -v node >/dev/null || need nodejs
        command -v npm >/dev/null || need npm
        command -v strip >/dev/null || need binutils
        command -v unshare >/dev/null || need util-linux
        python3 -c 'import ensurepip, venv' 2>/dev/null || need python3-venv
        ;;
    *)
        echo "system-packages: unknown set '$set' (build, test, package)" >&2
        exit 2
        ;;
    esac
done
[ "${#missing[@]}" -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if ! command -v apt-get >/dev/null; then
    echo "system-packages: this machine lacks ${missing[*]} (Debian/Ubuntu names), and has no apt-get:" >&2
    echo "  install the equivalents with your package manager, then run this again." >&2
    exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null; then
    sudo=(sudo)
else
    echo "system-packages: this machine lacks ${missing[*]}; as root, run:" >&2
    echo "  apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "system-packages: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
