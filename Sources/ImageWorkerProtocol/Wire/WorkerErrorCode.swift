/// Application error codes carried by a failed `download/completed` event, each with the stable
/// name that goes into `error.data.name`. The names are SDWebImage's (REFERENCE.md) where it has
/// one. Codes stay outside JSON-RPC's reserved ranges; cancellation uses LSP's -32800.
public enum WorkerErrorCode: Int, Sendable, CaseIterable {
    case invalidURL = 1001
    case badImageData = 1002
    case cacheNotModified = 1003
    case invalidDownloadOperation = 1004
    case invalidDownloadStatusCode = 1005
    case networkError = 1006
    case limitExceeded = 1007
    case unsupportedFormat = 1008
    case blockedURL = 1009
    case outputFailed = 1010
    case filtered = 1011
    case optedOut = 1012
    case cancelled = -32800

    /// The stable name that goes into `error.data.name`: the case's own, capitalized
    /// (`invalidURL` is `InvalidURL`).
    public var name: String {
        let caseName = String(describing: self)
        return caseName.prefix(1).uppercased() + caseName.dropFirst()
    }
}
