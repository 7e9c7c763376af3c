import Foundation
import ImageDecoding
import TestSupport
import ImageDownloader
import ImageWorkerProtocol
import Testing

@testable import ImageWorkerServer

/// `output.name`, `output.nameTemplate`, `skipExisting`, `verify` and `sha256`: the names a bulk
/// job can rely on, checked in process with scripted fetches and real files in a temporary folder.
@Suite struct FileNamingTests {
    static let png = DeliveryRulesTests.png

    private func temporaryDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "naming-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    private func files(_ dir: String) -> [String] {
        (FileManager.default.enumerator(atPath: dir)?.allObjects as? [String] ?? [])
            .filter { !$0.hasSuffix("/") && !isDirectory(dir + "/" + $0) }.sorted()
    }

    private func isDirectory(_ path: String) -> Bool {
        var flag: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &flag) && flag.boolValue
    }

    private func template(_ text: String) throws(RPCError) -> FileNameTemplate { try FileNameTemplate(parsing: text) }

    private func rejected(_ text: String) -> String? {
        do {
            _ = try template(text)
            return nil
        } catch { return error.message }
    }

    // MARK: The template language

    @Test func templatesParseTheirPlaceholdersAndBraces() throws {
        let values = FileNameTemplate.Values(token: "t7", name: "photo", ext: "jpg", host: "example.org", sha256: String(repeating: "ab", count: 32))
        #expect(try template("{token}-{name}.{ext}").render(values) == "t7-photo.jpg")
        #expect(try template("{host}/{sha256:8}.{ext}").render(values) == "example.org/abababab.jpg")
        #expect(try template("{sha256}").render(values) == String(repeating: "ab", count: 32))
        #expect(try template("{{literal}}-{name}").render(values) == "{literal}-photo")
        #expect(try template("{name}").needsDigest == false)
        #expect(try template("a{sha256:1}").needsDigest)
        #expect(try FileNameTemplate.fixed("{not a placeholder}.png").render(values) == "{not a placeholder}.png")
    }

    /// `{index}` and `{index:N}` take `output.index`, the entry's position in a list, zero-padded
    /// to N digits (never cut); escaped braces stay braces.
    @Test func indexPlaceholdersTakeTheEntrysPosition() throws {
        let values = FileNameTemplate.Values(token: "t", name: "photo", ext: "jpg", host: "h", sha256: nil)
        #expect(try FileNameTemplate(parsing: "p{index}.{ext}", index: 7).render(values) == "p7.jpg")
        #expect(try FileNameTemplate(parsing: "p{index:3}-{index:1}", index: 42).render(values) == "p042-42")
        #expect(try FileNameTemplate(parsing: "{index:2}", index: 12345).render(values) == "12345")
        #expect(try FileNameTemplate(parsing: "{{index}}{index}", index: 1).render(values) == "{index}1")
        #expect(try FileNameTemplate(parsing: "{index:9}/{name}.{ext}", index: 0).render(values) == "000000000/photo.jpg")
    }

    @Test func malformedTemplatesAreRefusedWithTheReason() {
        #expect(rejected("{nope}.png")?.contains("unknown placeholder {nope}") == true)
        #expect(rejected("{index}.png")?.contains("needs output.index") == true, "{index} without the entry's position")
        #expect(rejected("{index:5}.png")?.contains("needs output.index") == true)
        #expect(rejected("{index:0}.png")?.contains("width from 1 to 20") == true)
        #expect(rejected("{index:21}.png")?.contains("width from 1 to 20") == true)
        #expect(rejected("{index:x}.png")?.contains("width from 1 to 20") == true)
        #expect(rejected("{sha256:0}")?.contains("1 to 64") == true)
        #expect(rejected("{sha256:65}")?.contains("1 to 64") == true)
        #expect(rejected("{name") != nil)
        #expect(rejected("name}") != nil)
        #expect(rejected("") != nil)
        #expect(rejected("/etc/{name}")?.contains("relative") == true)
        #expect(rejected("../{name}")?.contains("\"..\"") == true)
        #expect(rejected("a//{name}") != nil)
        #expect(rejected("a/./{name}") != nil)
        #expect(rejected(String(repeating: "x", count: 256)) != nil)
    }

    /// Values come from URLs and tokens nobody checked: none leads outside the directory.
    @Test func hostileURLsAndTokensMakeSafeNames() {
        let cases: [(String, DownloadToken)] = [
            ("http://h.test/../../etc/passwd", .string("../../x")),
            ("http://h.test/%2e%2e%2f%2e%2e%2fboot", .string("/abs")),
            ("http://h.test/", .string("..")),
            ("http://h.test/..", .int(-3)),
            ("http://h.test/.hidden", .string("ok")),
            ("http://h.test/caf%C3%A9%20noir.jpg", .string("é")),
        ]
        for (url, token) in cases {
            let v = FileNameTemplate.values(url: url, token: token, source: .jpeg, forcedExtension: nil, sha256: nil)
            for value in [v.name, v.ext, v.token, v.host] {
                #expect(!value.isEmpty && !value.hasPrefix(".") && !value.contains("/"), "\(url) \(token): \(value)")
                #expect(value.unicodeScalars.allSatisfy(FileNameTemplate.isKept), "\(value)")
            }
        }
        let named = FileNameTemplate.values(url: "http://h.test/a/photo.JPEG?x=1", token: .int(1), source: .jpeg, forcedExtension: nil, sha256: nil)
        #expect((named.name, named.ext, named.host) == ("photo", "JPEG", "h.test"), "a JPEG's own extension is kept")
        let lying = FileNameTemplate.values(url: "http://h.test/photo.exe", token: .int(1), source: .png, forcedExtension: nil, sha256: nil)
        #expect((lying.name, lying.ext) == ("photo", "png"), "the bytes choose the extension")
        let unknown = FileNameTemplate.values(url: "http://h.test/notes.txt", token: .int(1), source: nil, forcedExtension: nil, sha256: nil)
        #expect(unknown.ext == "bin")
    }

    /// Names in other scripts stay readable: letters and digits of any script are kept (in NFC),
    /// while spaces, punctuation, symbols and invisible format characters become `_`, and a long
    /// name is cut to its byte budget between characters, its end kept.
    @Test func namesKeepLettersOfEveryScript() {
        func name(_ path: String, token: DownloadToken = .int(1)) -> (String, String, String) {
            let v = FileNameTemplate.values(url: "http://h.test" + path, token: token, source: .jpeg, forcedExtension: nil, sha256: nil)
            return (v.name, v.ext, v.token)
        }
        #expect(name("/caf%C3%A9%20noir.jpg", token: .string("é")) == ("café_noir", "jpg", "é"))
        #expect(name("/cafe%CC%81.jpg").0.unicodeScalars.map(\.value) == Array("caf".unicodeScalars.map(\.value)) + [0xE9],
                "a decomposed é is written as the one precomposed letter")
        #expect(name("/%E7%8C%AB.jpg").0 == "猫")
        #expect(name("/%D1%84%D0%BE%D1%82%D0%BE-%D9%A1%D9%A2.jpeg") == ("фото-١٢", "jpeg", "1"))
        #expect(name("/evil%E2%80%AEgpj.exe") == ("evil_gpj", "jpg", "1"), "a right-to-left override is not kept")
        #expect(name("/a%E2%80%8Db%F0%9F%98%80c.jpg").0 == "a_b_c", "a zero-width joiner and an emoji are not kept")
        #expect(name("/a%EF%BC%8Fb%E2%88%95c.jpg").0 == "a_b_c", "slash look-alikes are not kept")
        #expect(name("/a%EF%B8%8Fb%CD%8Fc.jpg").0 == "a_b_c", "invisible marks (a variation selector, the grapheme joiner) are not kept")
        #expect(name("/%E3%80%80.jpg").0 == "_", "an ideographic space is a space")
        let long = name("/" + String(repeating: "%E7%8C%AB", count: 99) + "%E7%8A%AC.jpg").0
        #expect(long.utf8.count <= 116 && long.utf8.count > 110 && long.hasSuffix("犬"), "\(long.utf8.count) bytes")
        #expect(long.unicodeScalars.allSatisfy { $0 == "猫" || $0 == "犬" }, "cut between characters")
        let cut = FileNameTemplate.safe(String(repeating: "e\u{301}", count: 100), limit: 9) ?? ""
        #expect(cut.unicodeScalars.count == 4 && cut.utf8.count == 8, "precomposed (2 bytes a letter), then cut: \(cut.unicodeScalars.map(\.value))")
    }

    // MARK: Delivery

    /// Names follow the template whatever order the fetches finish in: the second URL (its
    /// bytes first) does not take the first one's name.
    @Test func namesDoNotDependOnCompletionOrder() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = ServerHarness(["/same.png": .gated(Self.png, gate: "first"), "/x/same.png": .body(Self.png)])
        let output: JSONObject = ["delivery": "file", "dir": .string(dir), "nameTemplate": "{token}-{name}.{ext}"]
        h.download("p000", "/same.png", output: output)
        h.download("p001", "/x/same.png", output: output)
        #expect(try await h.completed("p001")["path"]?.stringValue == dir + "/p001-same.png")
        h.loader.open("first")
        #expect(try await h.completed("p000")["path"]?.stringValue == dir + "/p000-same.png")
        let fixed = try await { () async throws -> JSONValue in
            h.download("fixed", "/same.png", output: ["delivery": "file", "dir": .string(dir), "name": "sub/dir/chosen.png"])
            return try await h.completed("fixed")
        }()
        #expect(fixed["path"]?.stringValue == dir + "/sub/dir/chosen.png", "\(fixed)")
        #expect(files(dir) == ["p000-same.png", "p001-same.png", "sub/dir/chosen.png"])
        h.endInput()
        #expect(try await h.exitStatus() == 0)
    }

    /// `sha256` reports the digest of what was written, and `{sha256:N}` names the file by it.
    @Test func theDigestNamesAndDescribesTheWrittenBytes() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = ServerHarness(["/a.png": .body(Self.png)])
        h.download("orig", "/a.png", output: ["delivery": "file", "dir": .string(dir), "nameTemplate": "{sha256:12}.{ext}"])
        h.download("inline", "/a.png", output: ["delivery": "inline", "sha256": true])
        let orig = try await h.completed("orig")
        let digest = SHA256.hex(Self.png)
        #expect(orig["sha256"]?.stringValue == digest)
        #expect(orig["path"]?.stringValue == dir + "/" + digest.prefix(12) + ".png")
        #expect(try await h.completed("inline")["sha256"]?.stringValue == digest)
        h.endInput()
        #expect(try await h.exitStatus() == 0)
    }

    /// A second run of the same job with `skipExisting` fetches nothing and reports each kept
    /// file (size, header, digest), even when the name's extension comes from the bytes.
    @Test func skipExistingKeepsFilesWithoutFetching() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let output: JSONObject = ["delivery": "file", "dir": .string(dir), "skipExisting": true, "sha256": true, "verify": true]
        for run in 1...2 {
            let h = ServerHarness(["/picture": .body(Self.png), "/thumb.png": .body(Self.png)])
            h.download("orig", "/picture", output: output)
            h.download("thumb", "/thumb.png", output: ["delivery": "file", "dir": .string(dir), "format": "png", "maxPixelSize": 20, "skipExisting": true])
            let orig = try await h.completed("orig")
            let thumb = try await h.completed("thumb")
            #expect(orig["outcome"]?.stringValue == "success" && thumb["outcome"]?.stringValue == "success", "\(orig) \(thumb)")
            #expect(orig["path"]?.stringValue == dir + "/picture.png")
            #expect(orig["sha256"]?.stringValue == SHA256.hex(Self.png))
            #expect(orig["width"]?.integerValue == 40 && orig["height"]?.integerValue == 30)
            #expect(orig["byteLength"]?.integerValue == Int64(Self.png.count))
            #expect(thumb["path"]?.stringValue == dir + "/thumb.png")
            #expect(thumb["width"]?.integerValue == 20)
            if run == 1 {
                #expect(orig["skipped"] == nil && thumb["skipped"] == nil)
                #expect(h.loader.loadCount("/picture") == 1)
            } else {
                #expect(orig["skipped"]?.boolValue == true && thumb["skipped"]?.boolValue == true, "\(orig) \(thumb)")
                #expect(h.loader.loadCount("/picture") == 0 && h.loader.loadCount("/thumb.png") == 0, "the second run makes no request")
                #expect(!h.events("orig").contains(WorkerEvent.started), "a kept file has no fetch to start")
            }
            h.endInput()
            #expect(try await h.exitStatus() == 0)
        }
        #expect(files(dir) == ["picture.png", "thumb.png"], "nothing written twice")
    }

    /// `verify` refuses what is not an image (the file is not written) and reads the size of
    /// every format the worker knows from its header alone.
    @Test func verifyRefusesWhatIsNotAnImage() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let html = Array("<!DOCTYPE html><html><body>Not found</body></html>".utf8)
        let random = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        let h = ServerHarness([
            "/page.jpg": .body(html), "/noise.jpg": .body(random), "/fake.png": .body(DeliveryRulesTests.broken),
            "/good.png": .body(Self.png), "/metadata.jpg": .body(try Self.jpegWithLargeMetadata()),
        ])
        let output: JSONObject = ["delivery": "file", "dir": .string(dir), "verify": true]
        for token in ["page", "noise", "fake", "good"] {
            h.download(token, "/\(token == "good" || token == "fake" ? token + ".png" : token + ".jpg")", output: output)
        }
        h.download("metadata", "/metadata.jpg", output: output)
        let page = try await h.completed("page")
        #expect(page["error"]?["data"]?["name"]?.stringValue == "UnsupportedFormat", "\(page)")
        #expect(page["error"]?["message"]?.stringValue?.contains("<!DOCTYPE html>") == true)
        #expect(page["url"]?.stringValue == "http://scripted.test/page.jpg", "failures name their URL")
        #expect(try await h.completed("noise")["error"]?["data"]?["name"]?.stringValue == "UnsupportedFormat")
        #expect(try await h.completed("fake")["error"]?["data"]?["name"]?.stringValue == "BadImageData")
        let good = try await h.completed("good")
        #expect(good["width"]?.integerValue == 40 && good["sourceFormat"]?.stringValue == "png")
        let metadata = try await h.completed("metadata")
        #expect(metadata["width"]?.integerValue == 24 && metadata["height"]?.integerValue == 16, "a frame header after 130 kB of metadata")
        #expect(files(dir) == ["good.png", "metadata.jpg"], "nothing written for the refused bodies")
        h.endInput()
        #expect(try await h.exitStatus() == 0)
    }

    /// A 24×16 JPEG whose frame header follows two 65 kB application segments.
    static func jpegWithLargeMetadata() throws -> [UInt8] {
        let image = DecodedImage(width: 24, height: 16, layout: .rgb, pixels: Array(repeating: 200, count: 24 * 16 * 3), format: .jpeg)
        let jpeg = try ImageEncoders.encode(image, as: .jpeg(quality: 80, subsampling: .s420))
        let length = 65_000
        let segment: [UInt8] = [0xFF, 0xEF, UInt8(length >> 8), UInt8(length & 0xFF)] + Array(repeating: 0x41, count: length - 2)
        return Array(jpeg[0..<2]) + segment + segment + Array(jpeg[2...])
    }

    @Test func conflictingNameOptionsAreRefused() async throws {
        let h = ServerHarness([:])
        let refusals: [JSONObject] = [
            ["delivery": "file", "dir": "/tmp", "overwrite": true, "skipExisting": true],
            ["delivery": "file", "dir": "/tmp", "name": "a.png", "nameTemplate": "{name}"],
            ["delivery": "file", "path": "/tmp/a.png", "name": "b.png"],
            ["delivery": "file", "dir": "/tmp", "nameTemplate": "{sha256:8}", "skipExisting": true],
            ["delivery": "inline", "name": "a.png"],
            ["delivery": "file", "dir": "/tmp", "name": "../a.png"],
        ]
        for output in refusals {
            let id = h.send(WorkerMethod.download, ["url": "http://scripted.test/a.png", "output": .object(output)])
            #expect(try await h.reply(id)["error"]?["code"]?.integerValue == -32602, "\(output)")
        }
        let progressive = h.send(
            WorkerMethod.download,
            ["url": "http://scripted.test/a.png", "progressive": true, "output": ["format": "png", "delivery": "file", "dir": "/tmp", "nameTemplate": "{sha256}.png"]])
        #expect(try await h.reply(progressive)["error"]?["message"]?.stringValue?.contains("sha256") == true)
        h.endInput()
        #expect(try await h.exitStatus() == 0)
    }

    // MARK: The pieces

    @Test func sha256MatchesTheStandardsVectors() {
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // Fed in uneven pieces: the same digest.
        var pieces = SHA256()
        var offset = 0
        for size in [1, 63, 64, 65, 0, 127, 999_680] {
            million[offset..<(offset + size)].withUnsafeBytes { pieces.update($0) }
            offset += size
        }
        #expect(pieces.finalizeHex() == SHA256.hex(million))
    }

    // MARK: Free names

    @Test func freeNamesAreMadeOnlyOnACollision() {
        let names = FreeNames("/d/photo.jpg")
        #expect(names.name(0) == "/d/photo.jpg")
        #expect(names.name(1) == "/d/photo-1.jpg")
        #expect(FreeNames("/d/archive.tar.gz").name(2) == "/d/archive.tar-2.gz")
        #expect(FreeNames("/d/noext").name(3) == "/d/noext-3")
        #expect(FreeNames("/d.x/noext").name(3) == "/d.x/noext-3", "a dot in the folder is not an extension")
        var iterator = names.makeIterator()
        #expect(iterator.next()?.path == "/d/photo.jpg")
        #expect(iterator.next()?.path == "/d/photo-1.jpg")
        #expect(Array(FreeNames("/d/fixed.png", alternatives: false)).map(\.path) == ["/d/fixed.png"])
        // The first name, the next 32 suffixes, then gallops to 2^50: each name once, in order.
        let suffixes = Array(names).map(\.suffix)
        #expect(suffixes.count == 1 + FreeNames.linearTries + 45)
        #expect(Array(suffixes.prefix(35)) == Array(0...32) + [64, 128])
        #expect(suffixes.last == 1 << 50)
        #expect(Set(Array(names).map(\.path)).count == suffixes.count, "every name once")
    }

    /// However many files of one name a folder already holds (written by an earlier run, so no
    /// hint), the next file finds a free name in a bounded number of tries, and replaces none.
    @Test func aFolderFullOfOneNameStillTakesAFreeOneInFewTries() throws {
        let taken = Set(0...1_000_000)
        var tries = 0
        for candidate in FreeNames("/d/\(UUID().uuidString).jpg") {
            tries += 1
            if !taken.contains(candidate.suffix) { break }
        }
        #expect(tries <= 1 + FreeNames.linearTries + 16, "\(tries) tries")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = dir + "/image.jpg"
        for n in 0...3_000 { #expect(FileManager.default.createFile(atPath: FreeNames(first).name(n), contents: Data("old \(n)".utf8))) }
        let written = try AtomicFile.create(Payload(Array("new".utf8)), at: FreeNames(first), keepExisting: false)
        #expect(written.path == FreeNames(first).name(4_096), "1…32 taken, then 64, 128… 2048 taken, 4096 free")
        #expect(files(dir).count == 3_002)
        #expect(try String(contentsOfFile: FreeNames(first).name(3_000), encoding: .utf8) == "old 3000", "no file was replaced")
        let next = try AtomicFile.create(Payload(Array("next".utf8)), at: FreeNames(first), keepExisting: false)
        #expect(next.path == FreeNames(first).name(4_097), "the search goes on from the name just taken")
    }

    /// Many files of one name: each write tries a bounded number of names (the search starts after
    /// the suffix last taken), and none replaces another.
    @Test func manyFilesOfOneNameEachTakeTheNextFreeName() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = dir + "/image.jpg"
        for n in 0..<300 {
            await yieldThePool(n, every: 20)
            let written = try AtomicFile.create(Payload(Array("file \(n)".utf8)), at: FreeNames(first), keepExisting: false)
            #expect(written.path == FreeNames(first).name(n))
            // The next search tries `first`, then the name after the one just written.
            var next = FreeNames(first).makeIterator()
            _ = next.next()
            #expect(next.next()?.suffix == n + 1)
        }
        #expect(files(dir).count == 300)
        #expect(try String(contentsOfFile: dir + "/image-299.jpg", encoding: .utf8) == "file 299")
        // The search starts after the hint: a name freed below it is not taken again.
        try FileManager.default.removeItem(atPath: dir + "/image-7.jpg")
        let next = try AtomicFile.create(Payload(Array("next".utf8)), at: FreeNames(first), keepExisting: false)
        #expect(next.path == dir + "/image-300.jpg")
        // A fixed path that exists: nothing replaces it.
        #expect(throws: DeliveryFailure.self) {
            try AtomicFile.create(Payload(Array("none".utf8)), at: FreeNames(first, alternatives: false), keepExisting: false)
        }
        #expect(try String(contentsOfFile: first, encoding: .utf8) == "file 0", "no file was replaced")
    }

    /// Both ways of writing a new file (a file without a name, linked once complete; a hidden
    /// temporary, linked then removed) make the folder, give the file its bytes and the usual
    /// mode, keep an existing file when asked, and leave nothing else behind.
    @Test(arguments: [true, false]) func newFilesAreWholeAndLeaveNothingElse(unnamed: Bool) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = dir + "/made/on/the/way/photo.jpg"
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let written = try AtomicFile.create(Payload(bytes), at: FreeNames(first), keepExisting: false, unnamed: unnamed)
        #expect(written.path == first && !written.skipped)
        #expect(FileManager.default.contents(atPath: first) == Data(bytes))
        var info = stat()
        #expect(stat(first, &info) == 0)
        let mask = umask(0o022)
        umask(mask)
        #expect(info.st_mode & 0o777 == 0o644 & ~mask, "the mode a new file usually gets")
        let kept = try AtomicFile.create(Payload(Array("other".utf8)), at: FreeNames(first), keepExisting: true, unnamed: unnamed)
        #expect(kept.path == first && kept.skipped)
        #expect(FileManager.default.contents(atPath: first) == Data(bytes), "a kept file is not replaced")
        let second = try AtomicFile.create(Payload(Array("other".utf8)), at: FreeNames(first), keepExisting: false, unnamed: unnamed)
        #expect(second.path == dir + "/made/on/the/way/photo-1.jpg")
        let entries = try FileManager.default.contentsOfDirectory(atPath: dir + "/made/on/the/way").sorted()
        #expect(entries == ["photo-1.jpg", "photo.jpg"], "no temporary file is left, hidden or not")
    }
}
