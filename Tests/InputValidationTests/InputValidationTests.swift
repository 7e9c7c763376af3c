import Foundation
import InputValidation
import Testing

@Suite struct DownloadURLTests {
    @Test(arguments: [
        "http://127.0.0.1:70000/x.jpg", "http://[::1]:70000/x.jpg", "https://h:65536/", "http://h:0/",
        "http://h:99999999999999999999/", "http://h:-1/", "http://h:8o/", "http:///x.jpg", "http://", "ftp://h/x",
        "", "   ", "not a url", "javascript:alert(1)", "http://u:p@h:99999999999999999999/x", "http://[::1]:99999999999999999999/x",
        "http://h:99999999999999999999?q=1",
    ])
    func refusesWhatCannotBeFetched(_ text: String) {
        #expect(throws: DownloadURL.Invalid.self) { try DownloadURL.parse(text, fileURLsEnabled: true) }
    }

    @Test(arguments: ["http://h/x", "https://h:1/x", "http://h:65535/x", "http://[::1]:8080/x", "http://h:/x", "HTTP://H/x", "file:///tmp/x",
                     "http://[::1]/x", "http://h/x?a=b:99999999999999999999", "http://h#x:99999999999999999999"])
    func acceptsWhatCanBe(_ text: String) throws {
        #expect(try DownloadURL.parse(text, fileURLsEnabled: true).userInfo == nil)
    }

    @Test func userInformationBecomesCredentialsAndLeavesTheURL() throws {
        let parsed = try DownloadURL.parse("http://us%40er:p%3Ass@example.org:8080/a/b.jpg?q=1#f", fileURLsEnabled: false)
        #expect(parsed.userInfo == DownloadURL.UserInfo(user: "us@er", password: "p:ss"))
        #expect(parsed.url.absoluteString == "http://example.org:8080/a/b.jpg?q=1#f")
        #expect(try DownloadURL.parse("http://onlyuser@h/x", fileURLsEnabled: false).userInfo == .init(user: "onlyuser", password: ""))
    }

    @Test func aRefusalNeverQuotesThePassword() {
        #expect {
            try DownloadURL.parse("http://u:secret@127.0.0.1:70000/x", fileURLsEnabled: false)
        } throws: { error in
            !String(describing: error).contains("secret") && String(describing: error).contains("70000")
        }
    }

    @Test func theUnsupportedSchemeMessageListsOnlyWhatIsEnabled() {
        #expect(throws: DownloadURL.Invalid(reason: "unsupported scheme \"ftp\" (http and https are supported)")) {
            try DownloadURL.parse("ftp://h/x", fileURLsEnabled: false)
        }
        #expect(throws: DownloadURL.Invalid(reason: "unsupported scheme \"ftp\" (http, https and file are supported)")) {
            try DownloadURL.parse("ftp://h/x", fileURLsEnabled: true)
        }
    }

    @Test func backslashesAreSlashesInHTTPURLsAsInTheURLStandard() throws {
        let parsed = try DownloadURL.parse("http://a:b@127.0.0.1:81\\@evil/x", fileURLsEnabled: false)
        #expect(parsed.url.host == "127.0.0.1")
        #expect(parsed.url.port == 81)
        #expect(parsed.url.path == "/@evil/x")
        #expect(parsed.userInfo == DownloadURL.UserInfo(user: "a", password: "b"))
        let slashes = try DownloadURL.parse("https:\\\\h\\a\\b?q=\\#\\", fileURLsEnabled: false).url
        #expect(slashes.host == "h")
        #expect(slashes.path == "/a/b")
        #expect(DownloadURL.redacted("http://u:p@h\\@evil/") == "http://h\\@evil/")
        #expect(try DownloadURL.parse("http://h/a\tb\nc", fileURLsEnabled: false).url.absoluteString == "http://h/abc")
        #expect(DownloadURL.whatwgSeparators("\\\\h\\x", base: "http") == "//h/x")
        #expect(DownloadURL.whatwgSeparators("x\\y", base: "ftp") == "x\\y")
        #expect(DownloadURL.whatwgSeparators("file:///a\\b") == "file:///a\\b")
    }

    @Test func redactionInFreeTextRemovesEveryURLsUserInformation() {
        let line = #"head: [("Location", "http://alice:pw,x@h:1/p?u=a@b"), ("X", "https://bob@k")] ftp://c:d@e"#
        #expect(DownloadURL.redactedText(line) == #"head: [("Location", "http://h:1/p?u=a@b"), ("X", "https://k")] ftp://e"#)
        #expect(DownloadURL.redactedText("no url @ here") == "no url @ here")
    }

    @Test func redactionRemovesUserInformationAndNothingElse() {
        #expect(DownloadURL.redacted("http://u:p@h/x@y?z=@") == "http://h/x@y?z=@")
        #expect(DownloadURL.redacted("https://a@b@h:1/") == "https://h:1/")
        #expect(DownloadURL.redacted("http://h/p") == "http://h/p")
        #expect(DownloadURL.redacted("not a url @ all") == "not a url @ all")
        #expect(DownloadURL.redacted("http://h%20x/é") == "http://h%20x/é")
    }
}

@Suite struct HTTPHeaderFieldTests {
    @Test func namesAreTokensAndValuesHaveNoLineBreaks() {
        #expect(HTTPHeaderField.isValidName("X-Trace_1.a!#$%&'*+^`|~"))
        for bad in ["", "A B", "A:B", "Ä", "a\r\nb", "(x)"] { #expect(!HTTPHeaderField.isValidName(bad), "\(bad)") }
        #expect(HTTPHeaderField.isValidValue("any text, even é and \t tabs"))
        for bad in ["a\rb", "a\nb", "a\u{0}b"] { #expect(!HTTPHeaderField.isValidValue(bad)) }
    }
}
