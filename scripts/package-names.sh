# Sourced by scripts/package.sh, which builds the packages, and scripts/package-check.sh, which
# proves them: the repository's root (made the working directory), the version both clients carry,
# the folder the packages go to unless told (dist), and their names in a folder, so that the two
# scripts cannot disagree on any of them.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' clients/python/pyproject.toml)
[ -n "$version" ] || { echo "$(basename "$0"): no version in clients/python/pyproject.toml" >&2; exit 1; }
dist=$root/dist

# The wheel's name, a shell pattern for the manylinux tag auditwheel gives it ("$dir"/$wheel_pattern).
wheel_pattern="image_worker-$version-py3-none-manylinux_*_x86_64.whl"

# package_names DIR: client_tgz and platform_tgz, the npm client and its platform package in DIR.
package_names() {
    client_tgz="$1/image-worker-$version.tgz"
    platform_tgz="$1/image-worker-linux-x64-gnu-$version.tgz"
}
