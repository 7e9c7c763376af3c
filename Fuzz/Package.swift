// swift-tools-version:6.2
import PackageDescription

// libFuzzer targets for the code that reads untrusted bytes. Built and run by scripts/fuzz.sh
// with `--sanitize fuzzer --sanitize address --sanitize undefined`; a package of its own so that
// the main build never links them (libFuzzer provides their `main`).
let package = Package(
    name: "image-worker-fuzz",
    dependencies: [
        .package(name: "image-worker", path: "..")
    ],
    targets: [
        // NDJSON and Content-Length framing, the JSON parser and writer, JSON-RPC validation.
        .executableTarget(name: "FuzzProtocol", dependencies: [.product(name: "ImageWorkerFuzzable", package: "image-worker")]),
        // JPEG and PNG: whole-buffer and incremental decoding, fed in random chunk sizes, with random
        // scaling and layouts.
        .executableTarget(name: "FuzzDecoders", dependencies: [.product(name: "ImageWorkerFuzzable", package: "image-worker")]),
        // URL and header-field validation.
        .executableTarget(name: "FuzzInputValidation", dependencies: [.product(name: "ImageWorkerFuzzable", package: "image-worker")]),
    ],
    swiftLanguageModes: [.v6]
)
