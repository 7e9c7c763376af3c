import ImageDownloader
import ImageWorkerProtocol

/// Downloader events as wire notifications (protocol/SPEC.md, "Events").
enum EventEncoder {
    /// The notification, and the key under which a newer one may replace it while unsent.
    static func encode(_ event: DownloadEvent<JSONObject, DeliveryFailure>) -> (message: JSONValue, replaceKey: String?) {
        switch event {
        case .started(let token, let url):
            return (RPCResponse.notification(method: WorkerEvent.started, params: ["token": token.json, "url": .string(url)]), nil)
        case .response(let token, let url, let info):
            return (
                RPCResponse.notification(
                    method: WorkerEvent.response,
                    params: [
                        "token": token.json, "status": JSONValue(info.status), "expectedBytes": info.expectedBytes.map { .int($0) } ?? .null,
                        "mimeType": JSONValue(info.mimeType), "url": .string(url), "finalUrl": .string(info.finalURL),
                        "httpVersion": JSONValue(info.httpVersion),
                    ]), nil
            )
        case .progress(let token, let received, let expected):
            return (
                RPCResponse.notification(
                    method: WorkerEvent.progress,
                    params: ["token": token.json, "receivedBytes": .int(received), "expectedBytes": expected.map { .int($0) } ?? .null]),
                replaceKey(token, "progress")
            )
        case .completed(let token, let url, let outcome, let metrics):
            // Every completed event names its URL (as given), failures and cancellations too, and
            // says where the time went.
            var params: JSONObject = ["token": token.json, "url": .string(url)]
            var timings = metricsObject(metrics)
            switch outcome {
            case .success(let payload):
                params["outcome"] = "success"
                for (key, value) in payload { params[key] = value }
                if case .object(let delivery)? = payload["metrics"] { for (key, value) in delivery { timings[key] = value } }
            case .failure(let failure):
                params["outcome"] = "error"
                params["error"] = errorObject(failure)
            case .processingFailed(let failure):
                params["outcome"] = "error"
                params["error"] = errorObject(failure)
            case .cancelled:
                params["outcome"] = "cancelled"
                params["error"] = RPCError(
                    code: WorkerErrorCode.cancelled.rawValue, message: "Cancelled",
                    data: ["name": .string(WorkerErrorCode.cancelled.name)]
                ).json
            }
            params["metrics"] = .object(timings)
            return (RPCResponse.notification(method: WorkerEvent.completed, params: .object(params)), nil)
        }
    }

    /// A `download/partialImage` notification: the image's own fields (size, format, layout),
    /// how much of it is decoded (`filledRows`, `passes`), and where it went (`delivery`:
    /// `FrameDelivery.deliver`'s fields). Only the newest of a token's partial images waits to
    /// be sent: it replaces an unsent one under its key.
    static func partialImage(
        _ token: DownloadToken, sequence: Int, image: Renderer.Rendered, filledRows: Int, passes: Int, delivery: JSONObject
    ) -> (message: JSONValue, replaceKey: String) {
        var params: JSONObject = ["token": token.json, "sequence": JSONValue(sequence)]
        // (A kept ICC profile is the completed event's, once: not every partial image's.)
        for (key, value) in image.fields where key != "iccProfile" { params[key] = value }
        params["filledRows"] = JSONValue(filledRows)
        params["passes"] = JSONValue(passes)
        params["byteLength"] = JSONValue(image.byteLength)
        for (key, value) in delivery { params[key] = value }
        return (RPCResponse.notification(method: WorkerEvent.partialImage, params: .object(params)), replaceKey(token, "partial"))
    }

    /// `TransferMetrics` on the wire: milliseconds rounded to 0.01, absent phases left out.
    static func metricsObject(_ m: TransferMetrics) -> JSONObject {
        var o: JSONObject = [
            "wireBytes": .int(m.wireBytes), "attempts": JSONValue(m.attempts), "redirects": JSONValue(m.redirects),
            "fromCache": .bool(m.fromCache),
        ]
        func ms(_ key: String, _ value: Double?) {
            if let value { o[key] = .double((value * 100).rounded() / 100) }
        }
        ms("queuedMs", m.queuedMs)
        ms("connectMs", m.connectMs)
        ms("ttfbMs", m.ttfbMs)
        ms("transferMs", m.transferMs)
        if let reused = m.reusedConnection { o["reusedConnection"] = .bool(reused) }
        if let version = m.httpVersion { o["httpVersion"] = .string(version) }
        if let address = m.remoteAddress { o["remoteAddress"] = .string(address) }
        if m.resumed > 0 { o["resumed"] = JSONValue(m.resumed) }
        if m.revalidated { o["revalidated"] = true }
        return o
    }

    static func replaceKey(_ token: DownloadToken, _ kind: String) -> String {
        switch token {
        case .string(let s): return "s\(s.utf8.count):\(s)|\(kind)"
        case .int(let i): return "i:\(i)|\(kind)"
        }
    }

    // The wire's error codes for every failure, in one place: the fetch's (`DownloadFailure`)
    // and the delivery's (`DeliveryFailure`).

    /// `{code, message, data: {name, …}}` for a failed fetch; after several attempts (or at a
    /// deadline) also `attempts` and `earlierAttempts`, each attempt's own error object.
    static func errorObject(_ failure: DownloadFailure) -> JSONValue {
        var (code, data) = parts(failure.last)
        if case .afterAttempts(_, let attempts, let earlier) = failure {
            data["attempts"] = JSONValue(attempts)
            data["earlierAttempts"] = .array(earlier.map { errorObject($0) })
        }
        return errorObject(code, message: failure.description, data: data)
    }

    /// The code and data of a failure of one attempt (or of the fetch before any).
    private static func parts(_ failure: DownloadFailure) -> (WorkerErrorCode, JSONObject) {
        var data: JSONObject = [:]
        let code: WorkerErrorCode
        switch failure {
        case .invalidURL: code = .invalidURL
        case .invalidOperation: code = .invalidDownloadOperation
        case .statusCode(let status, let retryAfter):
            code = .invalidDownloadStatusCode
            data["statusCode"] = JSONValue(status)
            if let retryAfter { data["retryAfterSeconds"] = .double(retryAfter) }
        case .notModified:
            code = .cacheNotModified
            data["statusCode"] = 304
        case .network(let reason, _):
            code = .networkError
            data["reason"] = .string(reason.rawValue)
        case .limitExceeded(let kind, let limit, let actual):
            code = .limitExceeded
            data["limit"] = .string(kind.rawValue)
            data["maximum"] = .int(limit)
            if let actual { data["actual"] = .int(actual) }
        case .blocked: code = .blockedURL
        case .badData: code = .badImageData
        case .optedOut(let directives, _):
            code = .optedOut
            data["directives"] = .array(directives.map { .string($0) })
        case .afterAttempts(let last, _, _): return parts(last)
        }
        return (code, data)
    }

    /// `{code, message, data: {name, …}}` for a failed delivery (decode or output).
    static func errorObject(_ failure: DeliveryFailure) -> JSONValue {
        var data: JSONObject = [:]
        let code: WorkerErrorCode
        switch failure {
        case .badData: code = .badImageData
        case .unsupportedFormat: code = .unsupportedFormat
        case .imageTooLarge(let width, let height, let maxPixels), .animationTooLarge(_, let width, let height, let maxPixels):
            code = .limitExceeded
            data["limit"] = "pixels"
            data["maximum"] = .int(Int64(clamping: maxPixels))
            data["width"] = JSONValue(width)
            data["height"] = JSONValue(height)
        case .tooManyScans(let limit):
            code = .limitExceeded
            data["limit"] = "scans"
            data["maximum"] = JSONValue(limit)
        case .tooManyFrames(let limit):
            code = .limitExceeded
            data["limit"] = "frames"
            data["maximum"] = JSONValue(limit)
        case .output(_, let path):
            code = .outputFailed
            if let path { data["path"] = .string(path) }
        case .filtered(_, let filter, let width, let height):
            code = .filtered
            data["filter"] = .string(filter)
            data["width"] = JSONValue(width)
            data["height"] = JSONValue(height)
        }
        return errorObject(code, message: failure.description, data: data)
    }

    private static func errorObject(_ code: WorkerErrorCode, message: String, data: JSONObject) -> JSONValue {
        var full: JSONObject = ["name": .string(code.name)]
        for (key, value) in data { full[key] = value }
        return RPCError(code: code.rawValue, message: message, data: .object(full)).json
    }
}
