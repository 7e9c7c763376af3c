import AsyncHTTPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// One request and its response as `HTTPLoader` reads them: the response's head, then the body's
/// chunks one at a time, with backpressure. Cancelling the reading task, or dropping the exchange
/// before the body's end, cancels the request.
///
/// AsyncHTTPClient has two ways to send a request; `Route` says which one the worker takes.
public struct HTTPExchange {
    public enum Route: Sendable, Equatable {
        /// The delegate API (`execute(request:delegate:eventLoop:deadline:)`) with no deadline (the
        /// downloader's idle watchdog cancels a stalled attempt), the head, the chunks and the end
        /// queued in one sequence (`Parts`): a small response that comes in one read wakes the
        /// reading task once. The async API instead schedules a deadline on an event loop and
        /// cancels it from the task's thread for every request (each wakes the loop), starts a
        /// `Task` to register its cancel handler, and hands the head and the body over apart: on
        /// one network thread, the delegate API costs less CPU.
        case delegate
        /// The async API (`execute(_:deadline:)`) with no deadline either (a distant one: the idle
        /// watchdog bounds the wait for the head on both routes). Its request runs on its connection's event loop, where a delegate's runs on a loop chosen
        /// before the connection is: with several network threads most responses would hop
        /// between two loops.
        case async

        /// The route for a client whose event loop group has `loops` loops.
        public static func forNetwork(loops: Int) -> Route { loops <= 1 ? .delegate : .async }
    }

    public let head: HTTPResponseHead
    private var body: Body

    private enum Body {
        case parts(Parts.AsyncIterator)
        case client(HTTPClientResponse.Body.AsyncIterator)
    }

    /// Sends `request` on `client` by `route` and waits for the response's head, for as long as
    /// the calling task lets it (the downloader's idle watchdog cancels a silent attempt).
    static func send(_ request: HTTPClientRequest, on client: HTTPClient, route: Route, logger: Logger) async throws -> HTTPExchange {
        switch route {
        case .async:
            let response = try await client.execute(request, deadline: .distantFuture, logger: logger)
            return HTTPExchange(
                head: HTTPResponseHead(version: response.version, status: response.status, headers: response.headers),
                body: .client(response.body.makeAsyncIterator()))
        case .delegate:
            let sent = try HTTPClient.Request(
                url: request.url, method: request.method, headers: request.headers, tlsConfiguration: request.tlsConfiguration)
            let parts = start(sent, on: client, logger: logger).makeAsyncIterator()
            // (The sequence always starts with the head: it ends early only by an error, which is thrown.)
            guard case .head(let head)? = try await parts.next() else { throw HTTPClientError.remoteConnectionClosed }
            return HTTPExchange(head: head, body: .parts(parts))
        }
    }

    private init(head: HTTPResponseHead, body: Body) {
        self.head = head
        self.body = body
    }

    /// The body's next chunk; nil at its end.
    mutating func nextChunk() async throws -> ByteBuffer? {
        switch body {
        case .parts(let parts):
            while let part = try await parts.next() {
                if case .body(let chunk) = part { return chunk }
            }
            return nil
        case .client(var iterator):
            defer { body = .client(iterator) }
            return try await iterator.next()
        }
    }

    // MARK: The delegate route

    enum Part: Sendable {
        case head(HTTPResponseHead)
        case body(ByteBuffer)
    }

    typealias Parts = NIOThrowingAsyncSequenceProducer<
        Part, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, Demand
    >

    /// Up to `highWatermark` parts wait for the reader; then the delegate's future for the next
    /// part stays pending, and AsyncHTTPClient stops reading the connection, until the reader has
    /// taken the queue down to `lowWatermark`.
    static let lowWatermark = 2
    static let highWatermark = 4

    /// Sends `request` on `client` through the delegate API and returns its parts.
    static func start(_ request: HTTPClient.Request, on client: HTTPClient, logger: Logger) -> Parts {
        let demand = Demand()
        // Ended by the receiver's `didFinishRequest`, or by the task's failure, which is every
        // failure: it follows the delegate's `didReceiveError` and also comes without it (a
        // client shutting down, `didFinishRequest` throwing). As that callback holds the source
        // until the task ends, a deinit never ends a body without its error. (`finishOnDeinit:
        // false` would make a missed end a crash of the process.)
        let made = Parts.makeSequence(
            elementType: Part.self, backPressureStrategy: .init(lowWatermark: lowWatermark, highWatermark: highWatermark),
            finishOnDeinit: true, delegate: demand)
        let task = client.execute(
            request: request, delegate: Receiver(made.source, demand), eventLoop: .indifferent, deadline: nil, logger: logger)
        task.futureResult.whenFailure { [source = made.source] error in
            source.finish(error)
            demand.release()
        }
        demand.attach(task)
        return made.sequence
    }

    /// The reader's side: asks for more parts, or ends the request.
    final class Demand: NIOAsyncSequenceProducerDelegate, Sendable {
        private struct State {
            /// The future AsyncHTTPClient waits on before it hands over the next part.
            var waiting: EventLoopPromise<Void>? = nil
            /// The reader asked for more before the receiver parked a promise.
            var asked = false
            var task: HTTPClient.Task<Void>? = nil
            var terminated = false
        }

        private let state = NIOLockedValueBox(State())

        func attach(_ task: HTTPClient.Task<Void>) {
            let terminated = state.withLockedValue { s -> Bool in
                s.task = task
                return s.terminated
            }
            if terminated { task.cancel() }
        }

        /// A future that completes when the reader asks for more (at once if it has already, or
        /// is gone).
        func next(on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
            let promise = state.withLockedValue { s -> EventLoopPromise<Void>? in
                if s.asked || s.terminated {
                    s.asked = false
                    return nil
                }
                let promise = eventLoop.makePromise(of: Void.self)
                s.waiting = promise
                return promise
            }
            return promise?.futureResult ?? eventLoop.makeSucceededVoidFuture()
        }

        /// Completes a parked future: the request has failed, nothing more will come.
        func release() {
            state.withLockedValue { s -> EventLoopPromise<Void>? in
                defer { s.waiting = nil }
                return s.waiting
            }?.succeed()
        }

        func produceMore() {
            let waiting = state.withLockedValue { s -> EventLoopPromise<Void>? in
                if s.waiting == nil { s.asked = true }
                defer { s.waiting = nil }
                return s.waiting
            }
            waiting?.succeed()
        }

        /// The reader is gone (cancelled, or done with the sequence): the request is cancelled (a
        /// finished one is not affected).
        func didTerminate() {
            let (task, waiting) = state.withLockedValue { s -> (HTTPClient.Task<Void>?, EventLoopPromise<Void>?) in
                s.terminated = true
                defer { s.waiting = nil }
                return (s.task, s.waiting)
            }
            task?.cancel()
            waiting?.succeed()
        }
    }

    /// AsyncHTTPClient's side, on the request's event loop: each part into the sequence.
    final class Receiver: HTTPClientResponseDelegate {
        typealias Response = Void

        private let source: Parts.Source
        private let demand: Demand

        init(_ source: Parts.Source, _ demand: Demand) {
            self.source = source
            self.demand = demand
        }

        private func enqueue(_ part: Part, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
            switch source.yield(part) {
            case .produceMore, .dropped: return eventLoop.makeSucceededVoidFuture()
            case .stopProducing: return demand.next(on: eventLoop)
            }
        }

        func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
            enqueue(.head(head), on: task.eventLoop)
        }

        func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            enqueue(.body(buffer), on: task.eventLoop)
        }

        func didFinishRequest(task: HTTPClient.Task<Void>) throws {
            source.finish()
        }
    }
}
