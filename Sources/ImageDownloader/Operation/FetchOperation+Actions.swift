import NIOCore

/// What `FetchOperation`'s events ask the downloader to do: one narrow type per event (as
/// AsyncHTTPClient's `RequestBag.StateMachine` has), each holding only what that event can lead to.
extension FetchOperation {
    /// An event for one token, sent in the order given.
    public enum TokenEvent: Sendable, Equatable {
        case started(DownloadToken)
        case response(DownloadToken, ResponseInfo)
        case progress(DownloadToken, received: Int64, expected: Int64?)
    }

    /// Run an attempt (the loader's task) with this resume point.
    public struct Launch: Sendable, Equatable {
        public var attempt: Int
        /// Where the attempt resumes (`Range` + `If-Range`); nil: the whole body.
        public var resume: ResumePoint?
        /// The bytes received before were dropped (the attempt starts over): whoever was shown
        /// them (a streaming decode) must start over too.
        public var discardsBody: Bool
    }

    /// `start`: every token is told it started, and the first attempt runs.
    public struct Start: Sendable, Equatable {
        public var started: [DownloadToken]
        public var launch: Launch
    }

    /// `join`.
    public enum JoinAction: Sendable, Equatable {
        case none
        /// The queued fetch's priority changed.
        case setQueuePriority(DownloadPriority)
        /// The joiner is brought up to date: started, and the response and progress so far; the
        /// body so far (`body`) when it is the fetch's first token to stream it.
        case catchUp([TokenEvent], body: ByteBuffer? = nil)
    }

    /// `headReceived`.
    public enum HeadAction: Sendable, Equatable {
        /// Not the current attempt's, or the attempt was stopped: abandon the transfer.
        case stale
        /// The head is not an answer to take: the attempt fails with this (the loader is stopped,
        /// and `attemptEnded` decides what follows).
        case refuse(DownloadFailure)
        /// Taken. `discardsBody`: bytes received before were dropped (a whole body follows).
        case accept(events: [TokenEvent], discardsBody: Bool)
    }

    /// `bodyReceived`. The chunk went into the body at `offset` in both `accept` and `refuse`
    /// (a streaming decode sees what the body holds).
    public enum BodyAction: Sendable, Equatable {
        case stale
        case accept(offset: Int64, events: [TokenEvent])
        /// Past the limit or the declared length: the attempt fails with this.
        case refuse(offset: Int64, DownloadFailure)
    }

    /// `attemptEnded`.
    public enum EndAction: Sendable, Equatable {
        /// Not the current attempt: nothing to do.
        case stale
        /// The attempt failed (`cause`) and another follows after `delayMs`; the tokens out of
        /// retries fail now with `failure` (the attempts so far).
        case retry(cause: DownloadFailure, failing: [DownloadToken], failure: DownloadFailure, attempt: Int, delayMs: Int64)
        /// The fetch failed: it leaves the queue, every token fails with `failure`, the URL is put
        /// on the failed list when `blocksURL`, and the fetch is finished.
        case fail(cause: DownloadFailure, tokens: [DownloadToken], failure: DownloadFailure, blocksURL: Bool)
        /// The body is in: the last progress is sent, the URL comes off the failed list, the fetch
        /// enters the delivery stage (its queue slot given back) and each token's processing runs.
        case deliver(Delivery)
    }

    /// What a complete fetch hands on.
    public struct Delivery: Sendable, Equatable {
        public var progress: [TokenEvent]
        public var response: ResponseInfo
        public var body: ByteBuffer
        public var tokens: [DownloadToken]
    }

    /// `cancel` and `deadlineReached`: the token ends (`failure` nil: cancelled), then what its
    /// leaving means for the fetch.
    public struct Removal: Sendable, Equatable {
        public var token: DownloadToken
        public var failure: DownloadFailure?
        public var then: AfterRemoval
    }

    public enum AfterRemoval: Sendable, Equatable {
        case none
        case setQueuePriority(DownloadPriority)
        /// The last token of a queued fetch: it leaves the queue and is finished.
        case dropQueued
        /// The last token of a running fetch: its transfer stops, it leaves the queue, finished.
        case stopTransfer
        /// The last token of a fetch waiting to retry: its timer stops, it leaves the queue, finished.
        case stopRetryTimer
        /// The last token being processed: the fetch is finished.
        case endDelivery
    }

    /// `tokenProcessed`.
    public enum ProcessedAction: Sendable, Equatable {
        /// The token had ended meanwhile (cancelled): its result is dropped.
        case dropResult
        /// The token ends with its result; `fetchFinished`: it was the fetch's last.
        case endToken(fetchFinished: Bool)
    }
}
