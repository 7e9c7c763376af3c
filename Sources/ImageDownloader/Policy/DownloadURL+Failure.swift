import InputValidation

extension DownloadURL {
    /// `parse`, its refusal as the downloader reports it (`InvalidURL`).
    static func checked(_ string: String, fileURLsEnabled: Bool) throws(DownloadFailure) -> DownloadURL {
        do {
            return try parse(string, fileURLsEnabled: fileURLsEnabled)
        } catch {
            throw .invalidURL(error.reason)
        }
    }
}
