/// Sites' opt-outs in a response's `X-Robots-Tag` headers, read as img2dataset reads them (and as
/// Google documents the header): each header a comma-separated list of directives, for every
/// crawler or for one named before a colon (`otherbot: noindex, nofollow`). A fetch is refused
/// before its body when a directive on `disallowed` applies to this worker: one for every
/// crawler, or for one of `agents` (the User-Agent's product name, and the configured token).
public struct RobotsTagPolicy: Sendable, Equatable {
    /// The directives that refuse a fetch, lowercased; empty: none does (the default).
    public var disallowed: Set<String>
    /// The user agents this worker answers to, lowercased.
    public var agents: Set<String>

    /// img2dataset's list (and `none`, which means `noindex, nofollow`): what the dataset tools
    /// refuse unless told otherwise.
    public static let datasetDirectives = ["noai", "noimageai", "noindex", "noimageindex", "none"]

    public init(disallowed: some Sequence<String> = [], agents: some Sequence<String> = []) {
        self.disallowed = Set(disallowed.map { $0.lowercased() })
        self.agents = Set(agents.map { $0.lowercased() })
    }

    /// What refused a fetch: the directives found on the list, and the header that said them.
    public struct Refusal: Sendable, Equatable {
        public var directives: [String]
        public var header: String
    }

    /// Directives that take a value after a colon: their name is not a user agent's.
    private static let valued: Set<String> = ["unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"]

    /// The refusal for a response with these `X-Robots-Tag` values (each header as sent), or nil.
    public func refusal(_ values: [String]) -> Refusal? {
        guard !disallowed.isEmpty else { return nil }
        var found: [String] = []
        var header: String?
        for value in values {
            var rest = Substring(value)
            // `agent: directives`, unless what comes before the colon is a directive (or a list).
            if let colon = value.firstIndex(of: ":") {
                let name = value[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
                if !name.isEmpty, !name.contains(","), !name.contains(" "), !Self.valued.contains(name) {
                    guard agents.contains(name) else { continue }
                    rest = value[value.index(after: colon)...]
                }
            }
            for item in rest.split(separator: ",") {
                // (A valued directive, `max-snippet: 20`: its name.)
                let directive = item.split(separator: ":", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
                if disallowed.contains(directive), !found.contains(directive) {
                    found.append(directive)
                    header = header ?? value
                }
            }
        }
        guard let header else { return nil }
        return Refusal(directives: found, header: header)
    }

    /// A User-Agent's product name (`image-worker` of `image-worker/0.1.0`), lowercased.
    public static func product(of userAgent: String) -> String {
        String(userAgent.prefix { $0 != "/" && $0 != " " }).lowercased()
    }
}
