@testable import ImageDownloader
import NIOCore
import Testing

/// How a fetch keeps its body: an image that comes in one read is kept in the read's own buffer,
/// uncopied; anything else gets a buffer of its own, and the network's buffers are never written.
@Suite struct FetchTransferBodyTests {
    /// A read's buffer: `bytes` at the start of a storage of `capacity` bytes, as NIO hands it up.
    static func chunk(_ bytes: [UInt8], capacity: Int) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: capacity)
        buffer.writeBytes(bytes)
        return buffer
    }

    static func address(_ buffer: ByteBuffer) -> UnsafeRawPointer? {
        buffer.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress) }
    }

    static func transfer(expecting expected: Int64?) -> FetchTransfer {
        var transfer = FetchTransfer(attempt: FetchAttempt(number: 1))
        transfer.restartBody(expectedBytes: expected)
        return transfer
    }

    let image = (0..<3000).map { UInt8($0 % 251) }

    @Test func aWholeBodyThatFillsItsReadIsKeptUncopied() {
        var transfer = Self.transfer(expecting: 3000)
        let read = Self.chunk(image, capacity: 4096)
        transfer.append(read)
        #expect(Array(transfer.body.readableBytesView) == image)
        #expect(Self.address(transfer.body) == Self.address(read))
    }

    @Test func aSmallBodyInALargeReadIsCopiedIntoItsOwnBuffer() {
        var transfer = Self.transfer(expecting: 3000)
        let read = Self.chunk(image, capacity: 64 << 10)
        transfer.append(read)
        #expect(Array(transfer.body.readableBytesView) == image)
        #expect(Self.address(transfer.body) != Self.address(read))
        #expect(transfer.body.storageCapacity < 8192, "about the body's size, not the read's")
    }

    @Test func aFirstChunkOfALongerBodyIsCopiedOnceIntoTheDeclaredLength() {
        var transfer = Self.transfer(expecting: 6000)
        let first = Self.chunk(image, capacity: 4096)
        transfer.append(first)
        #expect(Self.address(transfer.body) != Self.address(first))
        #expect(transfer.body.storageCapacity >= 6000)
        let before = Self.address(transfer.body)
        transfer.append(Self.chunk(image, capacity: 4096))
        #expect(Self.address(transfer.body) == before, "no second copy: the buffer was the declared length")
        #expect(Array(transfer.body.readableBytesView) == image + image)
    }

    /// Without a declared length, a first chunk is kept; a second one moves the body into a buffer
    /// of its own, and the first read's buffer is left as it was (the network reuses it).
    @Test func aSecondChunkNeverWritesIntoTheFirstRead() {
        var transfer = Self.transfer(expecting: nil)
        var first = Self.chunk(image, capacity: 4096)
        transfer.append(first)
        #expect(Self.address(transfer.body) == Self.address(first))
        transfer.append(Self.chunk(Array(image.prefix(1000)), capacity: 1024))
        #expect(Array(transfer.body.readableBytesView) == image + image.prefix(1000))
        #expect(Self.address(transfer.body) != Self.address(first))
        #expect(Array(first.readableBytesView) == image, "the read's buffer is unchanged")
        first.clear()  // (the network's reuse of its buffer leaves the body alone)
        first.writeBytes([UInt8](repeating: 0, count: 4096))
        #expect(Array(transfer.body.readableBytesView) == image + image.prefix(1000))
    }

    @Test func aKeptChunkIsTheBodyOnlyUntilTheNetworkReusesItsBuffer() {
        var transfer = Self.transfer(expecting: 3000)
        var read = Self.chunk(image, capacity: 4096)
        transfer.append(read)
        read.clear()
        read.writeBytes([UInt8](repeating: 7, count: 4000))
        #expect(Array(transfer.body.readableBytesView) == image, "a write to the read's buffer copies it first")
    }

    @Test func aRestartedBodyStartsEmpty() {
        var transfer = Self.transfer(expecting: 3000)
        transfer.append(Self.chunk(image, capacity: 4096))
        transfer.restartBody(expectedBytes: 10)
        #expect(transfer.body.readableBytes == 0)
        transfer.append(Self.chunk([1, 2, 3], capacity: 3))
        #expect(Array(transfer.body.readableBytesView) == [1, 2, 3])
    }
}
