import ImageDecoding

/// Why a token's delivery failed after its fetch succeeded: the image could not be decoded as
/// asked, or the result could not be written. The token's own failure (the fetch's other tokens
/// go on); `EventEncoder.errorObject` maps it to the wire's error codes beside the downloader's
/// `DownloadFailure`.
public enum DeliveryFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not a decodable image (corrupt, truncated, or the decoder ran out of memory).
    case badData(String)
    /// The image format is not one the worker decodes.
    case unsupportedFormat(String)
    /// The image's header announces more pixels than allowed.
    case imageTooLarge(width: Int, height: Int, maxPixels: UInt64)
    /// Every frame of an animation together (`output.frames` `all`) holds more pixels than allowed:
    /// the decoder's words (how many frames, of what size).
    case animationTooLarge(String, width: Int, height: Int, maxPixels: UInt64)
    /// The progressive JPEG has more scans than allowed.
    case tooManyScans(limit: Int)
    /// The animation has more frames than allowed.
    case tooManyFrames(limit: Int)
    /// Writing the result where the caller asked failed.
    case output(String, path: String?)
    /// The image's size fails one of the token's filters (`SizeFilter`): `filter` names it.
    case filtered(String, filter: String, width: Int, height: Int)

    /// The failure for a decoder's error, with the limits that applied.
    init(_ error: DecodeError, settings: DecodeSettings) {
        switch error {
        case .corrupt(let message): self = .badData("Image data cannot be decoded: \(message)")
        case .truncated(let message): self = .badData("Image data is truncated: \(message)")
        case .unsupported(let message): self = .unsupportedFormat(message)
        case .limit(let message, let width, let height):
            if message.contains("scans") {
                self = .tooManyScans(limit: settings.maxProgressiveScans)
            } else if message.contains(" frames of ") {
                // (Frames x pixels: "animation of 14 frames of 116x100 pixels (…) exceeds the limit of N pixels".)
                self = .animationTooLarge(message.prefix(1).uppercased() + message.dropFirst(), width: width, height: height, maxPixels: settings.maxPixels)
            } else if message.contains("frames") {
                self = .tooManyFrames(limit: settings.maxFrames)
            } else {
                self = .imageTooLarge(width: width, height: height, maxPixels: settings.maxPixels)
            }
        case .outOfMemory(let message): self = .badData("Image could not be decoded: \(message)")
        }
    }

    public var description: String {
        switch self {
        case .badData(let message): return message
        case .unsupportedFormat(let message): return "Unsupported image format: \(message)"
        case .imageTooLarge(let width, let height, let maxPixels):
            return "Image of \(width)x\(height) pixels exceeds the limit of \(maxPixels) pixels"
        case .animationTooLarge(let message, _, _, _): return message
        case .tooManyScans(let limit): return "Image exceeds the limit of \(limit) progressive scans"
        case .tooManyFrames(let limit): return "Animation exceeds the limit of \(limit) frames"
        case .output(let message, _): return message
        case .filtered(let message, _, _, _): return message
        }
    }
}
