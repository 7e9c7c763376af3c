import ImageDownloader
import Logging
import Synchronization
import Testing

struct RedactingLogHandlerTests {
    @Test func headerDumpsLoseCredentialValuesAndURLsTheirUserInformation() {
        let head = "HTTPResponseHead { version: HTTP/1.1, status: 302 Found, headers: Location: http://alice:pw@h:1/x; "
            + "Set-Cookie: session=abc; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT; X-Set-Cookie-Count: 1; content-length: 0 }"
        #expect(RedactingLogHandler.redacted(head) == "HTTPResponseHead { version: HTTP/1.1, status: 302 Found, headers: Location: http://h:1/x; "
            + "Set-Cookie: <redacted>; X-Set-Cookie-Count: 1; content-length: 0 }")
        let pairs = #"[("Authorization", "Bearer t0ken"), ("Cookie", "a=1; b=2"), ("Accept", "*/*")]"#
        #expect(RedactingLogHandler.redacted(pairs) == #"[("Authorization", "<redacted>"), ("Cookie", "<redacted>"), ("Accept", "*/*")]"#)
        #expect(RedactingLogHandler.redacted("plain words") == "plain words")
    }

    @Test func messagesAndMetadataAreRedactedBeforeTheWrappedHandler() {
        final class Sink: Sendable {
            let lines = Mutex<[String]>([])
        }
        struct Recording: LogHandler {
            let sink: Sink
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            var metadataProvider: Logger.MetadataProvider?
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                sink.lines.withLock { $0.append("\(event.message) \(event.metadata.map { "\($0.sorted { $0.key < $1.key })" } ?? "")") }
            }
        }
        let sink = Sink()
        let logger = Logger(label: "t") { _ in RedactingLogHandler(Recording(sink: sink)) }
        logger.trace("to http://u:secret@h/", metadata: ["head": "Cookie: s=1", "list": ["https://v:secret@k/"]])
        let lines = sink.lines.withLock { $0 }
        #expect(lines.count == 1)
        #expect(!lines[0].contains("secret"), "\(lines)")
        #expect(!lines[0].contains("s=1"), "\(lines)")
    }
}
