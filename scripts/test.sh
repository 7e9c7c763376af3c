#!/usr/bin/env bash
# Every test, on a fresh machine too: installs the system packages it lacks (scripts/
# system-packages.sh), builds, runs the Swift tests (the end-to-end and the decoder tests each in
# a process of their own) and the clients' tests against the built binary.
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/system-packages.sh build test
# The option tables of the worker and both clients are what protocol/schema gives.
python3 scripts/generate-options.py --check
# Each module imports what Package.swift declares for it and ARCHITECTURE.md draws.
python3 scripts/check-imports.py
# Locks are NIOLockedValueBox (LockedState in the server), never Synchronization.Mutex: on Linux
# that hands a contended lock to a sleeping thread (Sources/ImageWorkerServer/LockedState.swift).
if grep -rnE '\bMutex *[(<]' Sources; then
    echo "test.sh: Synchronization.Mutex in Sources/ (use NIOLockedValueBox; LockedState.swift says why)" >&2
    exit 1
fi
# The tests' servers are on loopback: keep it direct whatever proxy this machine uses (the worker,
# like curl, would send it through one). Tests that use a proxy set their own environment.
export no_proxy="127.0.0.1,localhost,::1${no_proxy:+,$no_proxy}" NO_PROXY="127.0.0.1,localhost,::1${NO_PROXY:+,$NO_PROXY}"
swift build --build-tests
# Three processes: the end-to-end tests apart from the rest. Run together, the tests in flight
# held up to ~1,450 descriptors at once (each loopback server its own event loop, each worker its
# pipes), and past ~1,350 Foundation's Process.run on Linux can crash: listing /proc/self/fd it
# copies each entry's whole 256-byte name, which reads past the end of the directory buffer once
# the entries fill it (a SIGSEGV in CI, 2026-11-27). Apart: ~940 and ~590 at the most.
swift test --skip-build --skip ImageDecodingTests --skip EndToEndTests
# (One at a time: these spawn workers and `get` runs, and some hold a worker to its promises in
# wall time, exits within seconds of stdin's end; run all at once on two cores, they measured
# the machine's queue instead, 10-40% over their bounds.)
swift test --skip-build --filter EndToEndTests --no-parallel
swift test --skip-build --filter ImageDecodingTests
clients/test.sh
