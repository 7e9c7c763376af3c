// swift-tools-version:6.2
import PackageDescription

/// The other packages' modules the targets use.
let asyncHTTPClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioLocks: Target.Dependency = .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let nioSSL: Target.Dependency = .product(name: "NIOSSL", package: "swift-nio-ssl")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let nioSOCKS: Target.Dependency = .product(name: "NIOSOCKS", package: "swift-nio-extras")
let nioHTTP2: Target.Dependency = .product(name: "NIOHTTP2", package: "swift-nio-http2")
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
let deque: Target.Dependency = .product(name: "DequeModule", package: "swift-collections")
let heap: Target.Dependency = .product(name: "HeapModule", package: "swift-collections")
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let x509: Target.Dependency = .product(name: "X509", package: "swift-certificates")
let asn1: Target.Dependency = .product(name: "SwiftASN1", package: "swift-asn1")

let package = Package(
    name: "image-worker",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "image-worker", targets: ["ImageWorkerCLI"]),
        .executable(name: "image-worker-bench", targets: ["ImageWorkerBenchmark"]),
        // For the fuzzers in Fuzz/ (a package of their own, built with libFuzzer): the modules that
        // read untrusted bytes, without the network stack.
        .library(name: "ImageWorkerFuzzable", targets: ["ImageWorkerProtocol", "ImageDecoding", "InputValidation"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // Tests only: a TLS + HTTP/2 loopback server with a certificate made at run time.
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
    ],
    targets: [
        // The wire format: JSON values, JSON-RPC 2.0 messages, framing, the dispatcher.
        .target(
            name: "ImageWorkerProtocol",
            dependencies: []
        ),
        // Checks of untrusted text shared by the protocol and the downloader: URLs (scheme, host,
        // port, user information) and header fields. Foundation only, so the fuzzers build it alone.
        .target(name: "InputValidation"),
        // The operation-queue downloader: queue, operation life, HTTP and file loading, policies.
        .target(
            name: "ImageDownloader",
            dependencies: [
                "InputValidation",
                asyncHTTPClient, nioCore, nioLocks, nioHTTP1, nioPosix, nioSSL, nioSOCKS, nioHTTP2, logging, crypto,
                deque, heap,
            ]
        ),
        // System libraries, found with pkg-config (Debian: libjpeg62-turbo-dev, libturbojpeg0-dev, libpng-dev).
        .systemLibrary(name: "CLibJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg62-turbo-dev"])]),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CLibPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        // Whole-buffer DEFLATE for PNGs that fit a small buffer (thumbnails, previews), and gzip.
        .systemLibrary(name: "CLibDeflate", pkgConfig: "libdeflate", providers: [.apt(["libdeflate-dev"])]),
        // Zstandard and Brotli: the pages of Parquet tables written with ZSTD (Polars' default) or
        // BROTLI (libjxl loads libbrotlidec too).
        .systemLibrary(name: "CLibZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CLibBrotli", pkgConfig: "libbrotlidec", providers: [.apt(["libbrotli-dev"])]),
        // The formats of today's web (Debian: libwebp-dev, libgif-dev, libavif-dev). giflib has no
        // pkg-config file, and libavif's adds a define SwiftPM refuses: their headers and libraries
        // are in the system's default paths.
        .systemLibrary(name: "CLibWebP", pkgConfig: "libwebpdemux", providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(name: "CLibGIF", providers: [.apt(["libgif-dev"])]),
        .systemLibrary(name: "CLibAVIF", providers: [.apt(["libavif-dev"])]),
        // Colour management: embedded profiles to sRGB (Debian: liblcms2-dev).
        .systemLibrary(name: "CLittleCMS", pkgConfig: "lcms2", providers: [.apt(["liblcms2-dev"])]),
        // JPEG XL (Debian: libjxl-dev). Its pkg-config file adds a define SwiftPM refuses (a warning
        // in every build), so, as libavif's, it is found in the system's default paths.
        .systemLibrary(name: "CLibJXL", providers: [.apt(["libjxl-dev"])]),
        // The C side of the decoders and encoders: every libjpeg/libpng call under a setjmp in C, so
        // their error exits return codes and never longjmp through Swift frames; libwebp, giflib,
        // libavif and TurboJPEG return codes of their own.
        .target(
            name: "CImageCodecs",
            dependencies: ["CLibJPEG", "CTurboJPEG", "CLibPNG", "CLibDeflate", "CLibZstd", "CLibBrotli", "CLibWebP", "CLibGIF", "CLibAVIF", "CLittleCMS", "CLibJXL"],
            // A module map's `link` reaches the linker only through a Swift import; giflib and libavif
            // have no pkg-config flags to carry it, and lcms2's and libjxl's link flags do not reach a C target.
            linkerSettings: [
                .linkedLibrary("webpmux"), .linkedLibrary("gif"), .linkedLibrary("avif"), .linkedLibrary("lcms2"), .linkedLibrary("jxl"),
                .linkedLibrary("zstd"), .linkedLibrary("brotlidec"),
            ]
        ),
        // The decoders: format detection, incremental JPEG and PNG decoding, whole-buffer decoding,
        // PNG encoding; gzip, Zstandard and Brotli for Parquet pages. The only module that calls C.
        .target(
            name: "ImageDecoding",
            dependencies: ["CImageCodecs"]
        ),
        // The worker: requests to downloader calls, events to the wire, output delivery, lifecycle.
        .target(
            name: "ImageWorkerServer",
            dependencies: [
                "ImageWorkerProtocol", "ImageDownloader", "ImageDecoding", "InputValidation",
                logging, nioLocks,
                nioCore,  // A fetched body is a ByteBuffer.
                crypto,  // SHA-256 of what is delivered (BoringSSL's, as the HTTP cache's).
            ]
        ),
        // `image-worker get`: the worker in process, driven for a person (progress bars, result lines).
        .target(
            name: "ImageWorkerConsole",
            dependencies: [
                "ImageWorkerProtocol", "ImageWorkerServer", "ImageDecoding", "InputValidation",
                logging, nioLocks,
            ]
        ),
        // The `image-worker` executable: `serve` (the protocol, the default) and `get`.
        .executableTarget(
            name: "ImageWorkerCLI",
            dependencies: [
                "ImageDecoding", "ImageDownloader", "ImageWorkerServer", "ImageWorkerConsole",
                argumentParser, logging,
            ]
        ),
        // Benchmarks (not tests): drives the built binary against the loopback server, prints figures.
        .executableTarget(
            name: "ImageWorkerBenchmark",
            dependencies: [
                "ImageWorkerProtocol", "ImageDecoding", "LoopbackFixtures",
                asyncHTTPClient, nioCore, nioHTTP1, nioLocks,
            ]
        ),
        // A misbehaving loopback HTTP server and a seeded generator, shared by tests and benchmarks.
        .target(
            name: "LoopbackFixtures",
            dependencies: [
                nioCore, nioLocks, nioPosix, nioHTTP1, nioSSL, nioHTTP2, x509, asn1, crypto,
            ]
        ),
        // Helpers to drive the built binary in tests (transcripts, schemas, worker processes).
        .target(
            name: "TestSupport",
            dependencies: ["ImageWorkerProtocol", "LoopbackFixtures"],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "ImageWorkerProtocolTests",
            dependencies: ["ImageWorkerProtocol", "TestSupport"],
            exclude: ["Vectors"]
        ),
        .testTarget(
            name: "InputValidationTests",
            dependencies: ["InputValidation"]
        ),
        .testTarget(
            name: "ImageDownloaderTests",
            dependencies: [
                "ImageDownloader", "InputValidation", "TestSupport",
                asyncHTTPClient, nioCore, logging,
            ]
        ),
        .testTarget(
            name: "ImageDecodingTests",
            dependencies: ["ImageDecoding", "CImageCodecs", "CLibDeflate", "TestSupport"]
        ),
        .testTarget(
            name: "ImageWorkerServerTests",
            dependencies: [
                "ImageWorkerServer", "ImageWorkerProtocol", "ImageDownloader", "ImageDecoding", "TestSupport",
                nioCore, logging,
            ]
        ),
        .testTarget(
            name: "ImageWorkerConsoleTests",
            dependencies: ["ImageWorkerConsole", "ImageWorkerProtocol"]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["ImageWorkerProtocol", "ImageDecoding", "ImageWorkerConsole", "TestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
