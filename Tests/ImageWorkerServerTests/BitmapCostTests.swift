import Foundation
import ImageDecoding
import NIOCore
import Testing
import TestSupport

@testable import ImageWorkerServer

/// `OutputDelivery.bitmapCost`: what the decode stage charges a body against its memory budget,
/// read from the header (looked for in the first 4 KiB, then the first 64 KiB), else guessed from
/// the body's length.
@Suite struct BitmapCostTests {
    static func sample(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: WorkerProcess.repositoryRoot.appendingPathComponent("samples").appendingPathComponent(name)))
    }

    /// `jpeg` with an APP15 segment of `bytes` bytes put before everything after its SOI.
    static func padded(_ jpeg: [UInt8], by bytes: Int) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        var left = bytes
        while left > 0 {
            let payload = min(left, 65_533)
            out += [0xFF, 0xEF, UInt8((payload + 2) >> 8), UInt8((payload + 2) & 0xFF)] + [UInt8](repeating: 0x20, count: payload)
            left -= payload
        }
        return out + jpeg.dropFirst(2)
    }

    static func cost(_ bytes: [UInt8]) -> Int {
        OutputDelivery.bitmapCost(ByteBuffer(bytes: bytes), source: ImageFormat.detect(bytes))
    }

    @Test func theHeadersSizeWhereverItIsInTheFirst64KiB() throws {
        let jpeg = try Self.sample("testorig.jpg")
        let header = try ImageHeader.read(jpeg).get()
        #expect(Self.cost(jpeg) == header.width * header.height * 4)
        #expect(Self.cost(try Self.sample("basn2c08.png")) == 32 * 32 * 4)
        // Metadata before the frame header: found in the second, longer look.
        #expect(Self.cost(Self.padded(jpeg, by: 20_000)) == header.width * header.height * 4)
        // Past 64 KiB: a guess from the body's length.
        let far = Self.padded(jpeg, by: 70_000)
        #expect(Self.cost(far) == far.count * 16)
        // No image: nothing to charge.
        #expect(OutputDelivery.bitmapCost(ByteBuffer(bytes: [1, 2, 3]), source: nil) == 0)
    }
}
