#!/usr/bin/env bash
# Every test, on a fresh machine too: installs the system packages it lacks (scripts/
# system-packages.sh), builds, runs the Swift tests (the decoder tests in a process of their own)
# and the clients' tests against the built binary.
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/system-packages.sh build test
swift build --build-tests
swift test --skip-build --skip ImageDecodingTests
swift test --skip-build --filter ImageDecodingTests
clients/test.sh
