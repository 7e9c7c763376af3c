import Foundation

/// PNG's chunk checksum (ISO 3309 CRC-32), for tests that write PNG chunks of their own.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    public static func of(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}

/// SHA-256 as coreutils' `sha256sum` computes it: a reference the worker's own code is not.
public enum SHA256Hex {
    public static func of(_ bytes: [UInt8]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sha256sum"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        guard (try? process.run()) != nil else { return "sha256sum did not run" }
        input.fileHandleForWriting.write(Data(bytes))
        try? input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return String(text.prefix { $0 != " " })
    }
}
