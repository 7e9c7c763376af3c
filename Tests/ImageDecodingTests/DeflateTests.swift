import CImageCodecs
import CLibDeflate
import Testing
import TestSupport

/// `iw_deflate` (the fast PNG encoder's compression) against libdeflate's decompressor, which
/// checks every code, distance and the checksum.
@Suite struct DeflateTests {
    /// Compresses `data` in blocks of the given sizes (the last takes the rest) and inflates it back.
    private func roundTrip(_ data: [UInt8], blocks: [Int]) throws -> Int {
        var z = iw_deflate()
        #expect(iw_deflate_begin(&z, 3, data.count / 2) == 0)
        defer { iw_deflate_free(&z) }
        var offset = 0
        for (n, size) in blocks.enumerated() {
            let isLast = n == blocks.count - 1
            let length = isLast ? data.count - offset : min(size, data.count - offset)
            let status = data.withUnsafeBufferPointer { iw_deflate_block(&z, $0.baseAddress! + offset, length, isLast ? 1 : 0) }
            #expect(status == 0)
            offset += length
        }
        #expect(iw_deflate_end(&z) == 0)
        #expect(z.data[0] == 0 && z.data[1] == 0 && z.data[2] == 0, "the prefix is left for the caller")
        let decompressor = try #require(libdeflate_alloc_decompressor())
        defer { libdeflate_free_decompressor(decompressor) }
        var back = [UInt8](repeating: 0, count: data.count + 1)
        var actual = 0
        let result = back.withUnsafeMutableBytes { out in
            libdeflate_zlib_decompress(decompressor, z.data + 3, z.length - 3, out.baseAddress, data.count + 1, &actual)
        }
        #expect(result == LIBDEFLATE_SUCCESS)
        #expect(actual == data.count)
        #expect(Array(back.prefix(actual)) == data)
        return z.length - 3
    }

    @Test func emptyAndTinyInputs() throws {
        _ = try roundTrip([], blocks: [0])
        _ = try roundTrip([7], blocks: [1])
        _ = try roundTrip([7, 7, 7, 7], blocks: [4])
        _ = try roundTrip([0, 0, 0, 0, 0], blocks: [2, 3])
    }

    /// Runs of one byte: every run length up to past 258 (the longest match), alone and between
    /// literals, and runs that continue across block boundaries (distance 1 reaches into the
    /// previous block).
    @Test func runsOfEveryLength() throws {
        for length in 1...600 {
            let data = [UInt8](repeating: 9, count: length) + [1, 2] + [UInt8](repeating: 0, count: length)
            _ = try roundTrip(data, blocks: [length / 2 + 1, length, data.count])
        }
        let long = [UInt8](repeating: 200, count: 100_000)
        #expect(try roundTrip(long, blocks: [33_333, 33_333, 0]) < 1_000)
    }

    /// Noise does not shrink: it is written as stored blocks (split at 65,535 bytes) and costs
    /// only their headers.
    @Test func incompressibleDataIsStored() throws {
        var random = SplitMix(seed: 3)
        let noise = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let size = try roundTrip(noise, blocks: [70_000, 130_000])
        #expect(size <= noise.count + 6 * 5 + 2 + 4 + 8)
    }

    /// Random mixes of literals with a skewed distribution (codes up to 15 bits), runs and
    /// block sizes.
    @Test func randomMixes() throws {
        var random = SplitMix(seed: 5)
        for round in 0..<300 {
            let count = Int(random.next() % (round < 100 ? 600 : 150_000))
            var data = [UInt8]()
            data.reserveCapacity(count)
            while data.count < count {
                switch random.next() % 4 {
                case 0: data += [UInt8](repeating: UInt8(truncatingIfNeeded: random.next()), count: Int(random.next() % 700))
                case 1: data += (0..<Int(random.next() % 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                default:
                    // Geometric: byte k with probability about 2^-(k+1), so rare symbols get long codes.
                    data += (0..<Int(random.next() % 2000)).map { _ in UInt8(min(255, (random.next() | 1 << 40).trailingZeroBitCount)) }
                }
            }
            data = Array(data.prefix(count))
            let cut = count == 0 ? 0 : Int(random.next() % UInt64(count + 1))
            _ = try roundTrip(data, blocks: [cut, count])
        }
    }
}
