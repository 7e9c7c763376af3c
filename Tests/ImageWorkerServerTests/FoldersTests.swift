import Foundation
import Testing

@testable import ImageWorkerServer

/// `Folders.make` makes a folder as `mkdir -p` does, or names the part of the path in the way.
struct FoldersTests {
    @Test func makesMissingParentsAndNamesWhatIsInTheWay() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("iw-folders-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(Folders.make(root + "/a/b/c") == nil)
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: root + "/a/b/c", isDirectory: &isFolder) && isFolder.boolValue)
        #expect(Folders.make(root + "/a/b/c/") == nil, "there already, a trailing slash")
        #expect(FileManager.default.createFile(atPath: root + "/a/file", contents: Data("x".utf8)))
        #expect(Folders.make(root + "/a/file") == "\(root)/a/file is a file, not a folder")
        #expect(Folders.make(root + "/a/file/d/e") == "\(root)/a/file is a file, not a folder")
        #expect(!FileManager.default.fileExists(atPath: root + "/a/file/d"))
        // Relative to the working directory, as `get -o images` gives it.
        let up = FileManager.default.currentDirectoryPath.split(separator: "/").map { _ in ".." }.joined(separator: "/")
        let relative = (up.isEmpty ? "." : up) + root + "/rel"
        #expect(Folders.make(relative) == nil && FileManager.default.fileExists(atPath: root + "/rel"))
    }
}
