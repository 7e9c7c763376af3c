import Foundation
import ImageDecoding
import NIOConcurrencyHelpers

/// `image-worker-bench decode CORPUS`: the decoders against the C anchors of ../shared/bench, on
/// the same files in the same run (make the corpus with ../shared/bench/make_corpus.py CORPUS).
/// Prints throughput (1 thread and all cores), the incremental cost of 4000×3000 files fed in
/// 64 KiB chunks with every partial image taken, and the peak memory of one 4000×3000 decode.
enum DecodeBenchmark {
    static func run(corpus: String, anchors: String, only: String? = nil) throws {
        func chosen(_ name: String) -> Bool { only.map { name.contains($0) } ?? true }
        let sizes = URL(fileURLWithPath: corpus).appendingPathComponent("sizes")
        guard FileManager.default.fileExists(atPath: sizes.path) else {
            print("no \(sizes.path): make the corpus with python3 \(anchors)/make_corpus.py \(corpus)")
            exit(2)
        }
        let tools = try buildAnchors(anchors)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let (rounds, seconds, warmup) = (9, 0.4, 0.1)
        print("decode throughput, Mpixels/s (goal: ours ≥ 0.9 × anchor). The anchor reuses one output buffer")
        print("(as tjbench does); with -alloc it takes a fresh one per image, as a worker handing out bitmaps must.")
        print("Ours and the anchors take turns, \(rounds) rounds of \(seconds) s each (or three decodes); medians, and the median of")
        print("each round's ratio (a shared machine's speed drifts within seconds).")
        print("file                      threads    ours   anchor   ratio   anchor-alloc   ratio")
        let webp = try makeWebPFiles(from: sizes)
        for name in ["m1024_baseline.jpg", "m1024_progressive.jpg", "l4000_baseline.jpg", "l4000_progressive.jpg",
                     "m1024_rgb.png", "m1024_rgba.png", "l4000_rgb.png", "l4000_interlaced.png"] + webp.keys.sorted() where chosen(name) {
            let path = webp[name] ?? sizes.appendingPathComponent(name).path
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            let bytes = Array(data)
            let isJPEG = name.hasSuffix(".jpg")
            let isWebP = name.hasSuffix(".webp")
            var options = DecodeOptions()
            // The anchors' output: TurboJPEG to packed RGB; libpng's simplified API to RGB or RGBA.
            let started = monotonic()
            let anchorImage = try ImageDecoders.decode(bytes)
            // A window long enough for three decodes, so one decode more or less does not sway it.
            let window = max(seconds, 3 * (monotonic() - started))
            options.layout = isJPEG || isWebP || name.contains("rgb.png") || name == "l4000_interlaced.png" ? .rgb : .rgba
            if !isJPEG, anchorImage.pixels.enumerated().contains(where: { $0.offset % 4 == 3 && $0.element != 255 }) {
                options.layout = .rgba  // the anchor keeps alpha when the file has it
            }
            for threads in Array(Set([1, cores])).sorted() {
                let tool = tools[isJPEG ? "tjdec" : isWebP ? "webpdec" : "pngdec"]!
                var (ours, anchor, fresh): ([Double], [Double], [Double]) = ([], [], [])
                for _ in 0..<rounds {
                    ours.append(
                        throughput(bytes, options: options, threads: threads, seconds: window, warmup: warmup, pixels: anchorImage.width * anchorImage.height))
                    anchor.append(anchorFigure(tool, ["-t", "\(threads)", "-s", "\(window)", "-w", "\(warmup)", path]))
                    fresh.append(anchorFigure(tool, ["-t", "\(threads)", "-s", "\(window)", "-w", "\(warmup)", "-alloc", path]))
                }
                let ratio = median(zip(ours, anchor).map { $0 / max($1, 0.001) })
                let freshRatio = median(zip(ours, fresh).map { $0 / max($1, 0.001) })
                print(String(format: "%-24@ %7d %7.1f %8.1f %7.2f %14.1f %7.2f", name as NSString, threads, median(ours), median(anchor),
                             ratio, median(fresh), freshRatio))
            }
        }
        print("\nincremental cost: 64 KiB chunks, every partial image taken, CPU time / one whole decode (goal ≤ 1.5):")
        for name in ["l4000_progressive.jpg", "l4000_interlaced.png"] where chosen(name) {
            let path = sizes.appendingPathComponent(name).path
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            let bytes = Array(data)
            let format = name.hasSuffix(".jpg") ? ImageFormat.jpeg : .png
            func wholeCost() -> Double { cpuTime { _ = try? ImageDecoders.decode(bytes) } }
            var partials = 0
            // Each partial image is rendered by the decoder either way; "taking" it means reading it
            // where it lies (what the worker encodes from) or copying it into a new bitmap.
            func incrementalCost(copying: Bool) -> Double {
                cpuTime {
                    partials = 0
                    guard let decoder = try? ImageDecoders.makeIncremental(for: format) else { return }
                    var offset = 0
                    while offset < bytes.count {
                        let end = min(bytes.count, offset + 65536)
                        let progress = (try? decoder.feed(Array(bytes[offset..<end]), isLast: end == bytes.count)) ?? []
                        if progress.contains(.pixels) {
                            partials += 1
                            if copying {
                                _ = decoder.currentImage()
                            } else {
                                _ = decoder.withCurrentPixels { frame in frame.bytes[frame.bytes.count / 2] }
                            }
                        }
                        offset = end
                    }
                }
            }
            // Whole and incremental decodes take turns; the median of each turn's ratio.
            var turns: [(whole: Double, incremental: Double, copied: Double)] = []
            for _ in 0..<5 {
                turns.append((wholeCost(), incrementalCost(copying: false), incrementalCost(copying: true)))
            }
            let whole = median(turns.map(\.whole))
            let incremental = median(turns.map { $0.incremental / $0.whole })
            let copied = median(turns.map { $0.copied / $0.whole })
            let anchor = format == .jpeg
                ? anchorRatio(tools["jpeg_incr"]!, ["-chunk", "65536", "-r", "3", path])
                : anchorRatio(tools["png_incr"]!, ["-chunk", "65536", "-r", "3", path])
            print(String(format: "%-24@ ours %.2f× (%d partial images, whole decode %.3f s; %.2f× with a copy of each); one-pass C anchor %.2f×",
                         name as NSString, incremental, partials, whole, copied, anchor))
            if format == .jpeg {
                let prefix = anchorRatio(tools["tjdec"]!, ["-prefix", "65536", "-r", "3", path])
                print(String(format: "%-24@ re-decoding every received prefix instead (what the iOS libraries do): %.1f×", "" as NSString, prefix))
            }
        }
        // What delivering `format: png` costs: the worker encodes every PNG it writes fast (Up
        // filter, iw_deflate's Huffman coding with runs); libpng's defaults for comparison.
        print("\nPNG encoding (delivering format png), CPU time per image, median of 3:")
        for (name, maxPixelSize, layout) in [("l4000_baseline.jpg", nil, PixelLayout.rgba), ("m1024_baseline.jpg", nil, .rgb),
                                             ("m1024_baseline.jpg", 256, .rgb), ("m1024_rgba.png", nil, .rgba)] as [(String, Int?, PixelLayout)]
        where chosen(name) {
            guard let data = FileManager.default.contents(atPath: sizes.appendingPathComponent(name).path) else { continue }
            var options = DecodeOptions()
            options.layout = layout
            guard let image = try? ImageDecoders.decode(Array(data), options: options, maxPixelSize: maxPixelSize, maxPixelCount: nil) else { continue }
            let repeats = max(1, 3_000_000 / (image.width * image.height))
            // The PNG's colour type: an opaque image is written as RGB whatever its layout.
            let written = (try? ImageDecoders.encodePNG(image, fast: true))?[25] == 6 ? "RGBA" : image.layout == .gray ? "gray" : "RGB"
            var line = "\(name) \(image.width)×\(image.height) \(layout) → \(written)".padding(toLength: 44, withPad: " ", startingAt: 0)
            for fast in [true, false] {
                var size = 0
                let cost = median((0..<3).map { _ in
                    cpuTime { for _ in 0..<repeats { size = (try? ImageDecoders.encodePNG(image, fast: fast))?.count ?? 0 } } / Double(repeats)
                })
                line += String(format: "  %@ %.2f ms, %.1f KB", (fast ? "fast" : "| libpng defaults") as NSString, cost * 1e3, Double(size) / 1e3)
            }
            print(line)
        }
        print("\npeak memory of one 4000×3000 decode to RGBA (goal ≤ 1.3 × (bitmap + compressed bytes)):")
        for name in ["l4000_baseline.jpg", "l4000_progressive.jpg", "l4000_interlaced.png"] where chosen(name) {
            let path = sizes.appendingPathComponent(name).path
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { continue }
            let compressed = (attributes[.size] as? Int) ?? 0
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = ["decode-once", path]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let fields = text.split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            guard fields.count == 3 else { continue }
            let (grown, width, height) = (fields[0], fields[1], fields[2])
            let budget = width * height * 4 + Double(compressed)
            print(String(format: "%-24@ %.1f MB over the process baseline; bitmap + compressed %.1f MB; ratio %.2f",
                         name as NSString, grown / 1e6, budget / 1e6, grown / budget))
        }
    }

    /// `decode-once FILE`: read, decode to RGBA, print the peak RSS growth (bytes), width, height.
    static func decodeOnce(_ path: String) {
        let data = FileManager.default.contents(atPath: path).map(Array.init) ?? []
        let before = peakRSS()
        let image = try? ImageDecoders.decode(data)
        let after = peakRSS()
        print(after - before + Double(data.count), image?.width ?? 0, image?.height ?? 0)
    }

    static func peakRSS() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }

    /// Decodes per second over all threads, timed as the anchors time themselves: each thread warms
    /// up for `warmup` seconds (one decode at least), all start together, each loops until
    /// `seconds` have passed and finishes the decode under way; pixels decoded / (last thread's
    /// end - start).
    static func throughput(_ bytes: [UInt8], options: DecodeOptions, threads: Int, seconds: Double, warmup: Double, pixels: Int) -> Double {
        let counts = LockedCounter()
        let ends = LockedCounter()
        let warmed = DispatchGroup()
        let done = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        let start = LockedCounter()  // nanoseconds
        for _ in 0..<threads {
            warmed.enter()
            done.enter()
            Thread.detachNewThread {
                let warmEnd = monotonic() + warmup
                repeat { _ = try? ImageDecoders.decode(bytes, options: options) } while monotonic() < warmEnd
                warmed.leave()
                go.wait()
                let end = Double(start.maximum) / 1e9 + seconds
                var n = 0
                repeat {
                    _ = try? ImageDecoders.decode(bytes, options: options)
                    n += 1
                } while monotonic() < end
                counts.add(n)
                ends.record(Int(monotonic() * 1e9))
                done.leave()
            }
        }
        warmed.wait()
        start.record(Int(monotonic() * 1e9))
        for _ in 0..<threads { go.signal() }
        done.wait()
        let wall = Double(ends.maximum - start.maximum) / 1e9
        return Double(counts.value) * Double(pixels) / 1e6 / wall
    }

    static func monotonic() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    static func cpuTime(_ body: () -> Void) -> Double {
        var a = timespec()
        var b = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a)
        body()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b)
        return Double(b.tv_sec - a.tv_sec) + Double(b.tv_nsec - a.tv_nsec) / 1e9
    }

    static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    /// Compiles the C anchors of ../shared/bench into a temporary directory.
    static func buildAnchors(_ directory: String) throws -> [String: String] {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("image-worker-anchors")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        var tools: [String: String] = [:]
        for (name, libraries) in [("tjdec", ["-lturbojpeg", "-lpthread"]), ("pngdec", ["-lpng16", "-lpthread"]),
                                  ("jpeg_incr", ["-ljpeg"]), ("png_incr", ["-lpng16"])] {
            let binary = out.appendingPathComponent(name).path
            let cc = Process()
            cc.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            cc.arguments = ["cc", "-O2", "-o", binary, "\(directory)/\(name).c"] + libraries
            try cc.run()
            cc.waitUntilExit()
            guard cc.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
            tools[name] = binary
        }
        // The WebP anchor is this repository's (scripts/anchors/webpdec.c): dwebp's decode loop.
        let webpdec = out.appendingPathComponent("webpdec").path
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/anchors/webpdec.c").path
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        cc.arguments = ["cc", "-O2", "-o", webpdec, source, "-lwebp", "-lpthread"]
        try cc.run()
        cc.waitUntilExit()
        guard cc.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
        tools["webpdec"] = webpdec
        return tools
    }

    /// WebP files made from the corpus's PNGs with cwebp (Debian's webp): lossy at quality 80
    /// (cwebp's photo default is 75; 80 is Pillow's and the worker's), and lossless with alpha.
    /// Name → path; empty without cwebp.
    static func makeWebPFiles(from sizes: URL) throws -> [String: String] {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("image-worker-webp")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        var made: [String: String] = [:]
        for (name, png, arguments) in [
            ("m1024_lossy.webp", "m1024_rgb.png", ["-q", "80"]), ("l4000_lossy.webp", "l4000_rgb.png", ["-q", "80"]),
            ("m1024_lossless_rgba.webp", "m1024_rgba.png", ["-lossless"]),
        ] {
            let path = out.appendingPathComponent(name).path
            if !FileManager.default.fileExists(atPath: path) {
                let cwebp = Process()
                cwebp.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                cwebp.arguments = ["cwebp", "-quiet"] + arguments + [sizes.appendingPathComponent(png).path, "-o", path]
                cwebp.standardError = FileHandle.nullDevice
                guard (try? cwebp.run()) != nil else { return [:] }
                cwebp.waitUntilExit()
                guard cwebp.terminationStatus == 0 else { continue }
            }
            made[name] = path
        }
        return made
    }

    static func anchorJSON(_ tool: String, _ arguments: [String]) -> [String: Any] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return [:] }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    static func anchorFigure(_ tool: String, _ arguments: [String]) -> Double {
        (anchorJSON(tool, arguments)["mpix_s"] as? NSNumber)?.doubleValue ?? 0
    }

    static func anchorRatio(_ tool: String, _ arguments: [String]) -> Double {
        (anchorJSON(tool, arguments)["ratio"] as? NSNumber)?.doubleValue ?? 0
    }
}

final class LockedCounter: Sendable {
    private let total = NIOLockedValueBox(0)
    private let largest = NIOLockedValueBox(0)
    func add(_ n: Int) { total.withLockedValue { $0 += n } }
    func record(_ n: Int) { largest.withLockedValue { $0 = max($0, n) } }
    var value: Int { total.withLockedValue { $0 } }
    var maximum: Int { largest.withLockedValue { $0 } }
}
