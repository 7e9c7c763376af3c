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

    public var name: String {
        switch self {
        case .invalidURL: return "InvalidURL"
        case .badImageData: return "BadImageData"
        case .cacheNotModified: return "CacheNotModified"
        case .invalidDownloadOperation: return "InvalidDownloadOperation"
        case .invalidDownloadStatusCode: return "InvalidDownloadStatusCode"
        case .networkError: return "NetworkError"
        case .limitExceeded: return "LimitExceeded"
        case .unsupportedFormat: return "UnsupportedFormat"
        case .blockedURL: return "BlockedURL"
        case .outputFailed: return "OutputFailed"
        case .filtered: return "Filtered"
        case .optedOut: return "OptedOut"
        case .cancelled: return "Cancelled"
        }
    }
}
