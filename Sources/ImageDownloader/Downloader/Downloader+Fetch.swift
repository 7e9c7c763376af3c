import Foundation

/// A fetch as the downloader holds it: its machine (which holds the body, the response and the
/// resume point), what makes it the same as another request's (`key`), what the loader is sent,
/// and the I/O it runs (tasks, metrics).
extension Downloader {
    /// The tasks one fetch runs, cancelled as its machine says.
    struct FetchTasks {
        var transfer: Task<Void, Never>?
        var retry: Task<Void, Never>?
    }

    /// A class: the actor's `fetches` holds a pointer per fetch, not a kilobyte of state inline
    /// in every slot of the dictionary (a queued download is kept small: 20,000 queued took
    /// 48 MB of dictionary storage as a struct).
    final class Fetch {
        let id: FetchID
        var machine: FetchOperation
        let key: FetchKey
        /// The URL (as parsed, kept as its text: a URL object costs a queued fetch ~270 bytes;
        /// one is made again when an attempt starts) and headers as the request gave them (the
        /// key holds them compared, not sent).
        let url: String
        let headers: [(String, String)]
        let isFile: Bool
        /// The request's own idle timeout (else the configuration's, read when it applies).
        let timeoutMs: Int64?
        /// What exists once the fetch runs, apart: a queued fetch holds none of it.
        private(set) var running: Running?

        final class Running {
            /// The loader's task and the retry timer (the machine says when each stops).
            var tasks = FetchTasks()
            /// What the attempts went through, for the tokens' metrics.
            var metrics = FetchMetrics()
            /// What follows the fetch for its tokens (`FetchFollower`): told the body's events,
            /// handed to each token's processor with the resource.
            var follower: (any FetchFollower)?
        }

        /// `running`, made when the first attempt launches.
        func runs() -> Running {
            if let running { return running }
            let made = Running()
            running = made
            return made
        }

        init(id: FetchID, machine: FetchOperation, key: FetchKey, url: URL, headers: [(String, String)], timeoutMs: Int64?) {
            self.id = id
            (self.machine, self.key, self.url, self.headers, self.isFile, self.timeoutMs) =
                (machine, key, url.absoluteString, headers, url.isFileURL, timeoutMs)
        }

        /// The URL object, made from its text (which came from one, so it parses to the same).
        var parsedURL: URL {
            guard let parsed = URL(string: url) else { preconditionFailure("a URL's text did not parse again (checked by start)") }
            return parsed
        }

        /// What the loader is asked, made when an attempt starts (a queued fetch holds no copy):
        /// timeouts, redirects, proxies and resume are the attempt's to set.
        var request: LoadRequest {
            var request = LoadRequest(
                url: parsedURL, headers: headers, credentials: key.credentials, allowInvalidCertificates: key.allowInvalidCertificates,
                handleCookies: key.handleCookies, maxRedirects: 0, timeoutMs: 0)
            request.cachePolicy = key.cachePolicy
            return request
        }
    }
}
