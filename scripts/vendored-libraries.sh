#!/usr/bin/env bash
# The libraries BINARY loads that are not the system's (scripts/system-libraries.txt): the paths
# ldd resolves, one per line. What package.sh copies into the packages, with their licences, and
# what package-check.sh hides.
#   scripts/vendored-libraries.sh BINARY
set -euo pipefail
system=$(grep -v -e '^#' -e '^$' "$(dirname "$0")/system-libraries.txt")
ldd "$1" | sed -n 's/.* => \(\/[^ ]*\) (.*/\1/p' | while read -r lib; do
    grep -qxF "$(basename "$lib")" <<<"$system" || printf '%s\n' "$lib"
done
