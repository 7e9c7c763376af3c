import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol

/// `download` params, checked.
struct DownloadParams {
    static let fields = [
        "url", "token", "priority", "headers", "timeoutMs", "deadlineMs", "maxRetries", "retryDelayMs", "credentials",
        "allowInvalidCertificates", "handleCookies", "retryFailed", "cachePolicy", "progressive", "quiet", "output",
    ]

    var request: DownloadRequest
    var output: OutputSpec
    var progressive: Bool
    /// Whether the client chose the token.
    var tokenGiven: Bool

    init(_ rpc: RPCRequest) throws(RPCError) {
        let p = try ParamReader(rpc, allowed: DownloadParams.fields)
        let url = try p.requiredString("url")
        let given = try p.token()
        let token = given ?? DownloadToken.random()
        tokenGiven = given != nil
        var priority = DownloadPriority.normal
        if let name = try p.oneOf("priority", DownloadPriority.allCases.map(\.name)) {
            priority = DownloadPriority(name: name)!
        }
        let headers = try p.object("headers").map { o throws(RPCError) in try HeaderValidation.headers(o, field: "headers") } ?? []
        let timeout = try p.integer("timeoutMs", in: OptionTable.Download.timeoutMs)
        var credentials: Credentials?
        if let c = try p.object("credentials") {
            guard case .string(let user)? = c["user"], case .string(let password)? = c["password"], c.count == 2 else {
                throw .invalidParams("\"credentials\" must be {\"user\": string, \"password\": string}")
            }
            credentials = Credentials(user: user, password: password)
        }
        request = DownloadRequest(
            token: token, url: url, priority: priority, headers: headers, timeoutMs: timeout,
            credentials: credentials, allowInvalidCertificates: try p.bool("allowInvalidCertificates") ?? false,
            handleCookies: try p.bool("handleCookies") ?? false, retryFailed: try p.bool("retryFailed") ?? false)
        request.deadlineMs = try p.integer("deadlineMs", in: OptionTable.Download.deadlineMs)
        if let v = try p.oneOf("cachePolicy", CachePolicy.allCases.map(\.rawValue)) { request.cachePolicy = CachePolicy(rawValue: v)! }
        request.maxRetries = try p.integer("maxRetries", in: OptionTable.Download.maxRetries).map { Int($0) }
        request.retryDelayMs = try p.integer("retryDelayMs", in: OptionTable.Download.retryDelayMs)
        progressive = try p.bool("progressive") ?? false
        request.quiet = try p.bool("quiet") ?? false
        output = try DownloadParams.output(try p.object("output"))
        // Every field has its type now: the rules between them (the schema's, as the clients check them).
        if case .object(let params)? = rpc.params { try OptionRule.check(params) }
        if progressive && output.fileName?.needsDigest == true {
            throw .invalidParams("progressive partial images are written before the final bytes exist: a {sha256} name cannot be used")
        }
        request.streamsBody = progressive
    }

    static func output(_ object: JSONObject?) throws(RPCError) -> OutputSpec {
        var spec = OutputSpec()
        guard let object else { return spec }
        let p = try ParamReader(
            RPCRequest(id: nil, method: "output", params: .object(object)),
            allowed: [
                "delivery", "format", "path", "dir", "name", "nameTemplate", "index", "overwrite", "skipExisting", "verify", "sha256",
                "minImageSize", "maxImageArea", "maxAspectRatio", "maxPixelSize", "maxPixelCount", "width", "height", "fit", "position", "background", "withoutEnlargement",
                "applyOrientation", "colorProfile", "frames", "partialIntervalMs", "partialMaxPixelSize", "quality", "lossless", "chromaSubsampling",
            ])
        if let d = try p.oneOf("delivery", OutputSpec.Delivery.allCases.map(\.rawValue)) {
            spec.delivery = OutputSpec.Delivery(rawValue: d)!
        }
        if let f = try p.string("format") {
            guard let format = OutputSpec.Format(rawValue: f) else {
                throw .invalidParams(
                    "output.format \"\(f)\" is not available; this worker delivers: "
                        + OutputSpec.Format.allCases.map(\.rawValue).joined(separator: ", "))
            }
            spec.format = format
        }
        let path = try p.string("path")
        let dir = try p.string("dir")
        let name = try p.string("name")
        let nameTemplate = try p.string("nameTemplate")
        let index = try p.integer("index", in: OptionTable.Output.index)
        spec.overwrite = try p.bool("overwrite") ?? false
        spec.skipExisting = try p.bool("skipExisting") ?? false
        // true or "header": the header; "full": every pixel too; false: nothing.
        switch try p.boolOrOneOf("verify", ["header", "full"]) {
        case .string("full")?: (spec.verify, spec.verifyPixels) = (true, true)
        case .string?, .bool(true)?: spec.verify = true
        default: spec.verify = false
        }
        spec.sha256 = try p.bool("sha256") ?? false
        spec.sizeFilter.minImageSize = try p.integer("minImageSize", in: OptionTable.Output.minImageSize).map { Int($0) }
        spec.sizeFilter.maxImageArea = try p.integer("maxImageArea", in: OptionTable.Output.maxImageArea)
        spec.sizeFilter.maxAspectRatio = try p.number("maxAspectRatio", in: OptionTable.Output.maxAspectRatio)
        // Both a name and a template, or both a path and a dir, are refused by `OptionRule` (in `init`).
        if let name {
            spec.fileName = try FileNameTemplate.fixed(name)
        } else if let nameTemplate {
            spec.fileName = try FileNameTemplate(parsing: nameTemplate, index: index)
        }
        spec.maxPixelSize = try p.integer("maxPixelSize", in: OptionTable.Output.maxPixelSize).map { Int($0) }
        spec.maxPixelCount = try p.integer("maxPixelCount", in: OptionTable.Output.maxPixelCount).map { Int($0) }
        spec.applyOrientation = try p.bool("applyOrientation") ?? false
        if let handling = try p.oneOf("colorProfile", ColorHandling.allCases.map(\.rawValue)) { spec.colorProfile = ColorHandling(rawValue: handling)! }
        if let frames = try p.oneOf("frames", FrameSelection.allCases.map(\.rawValue)) { spec.frames = FrameSelection(rawValue: frames)! }
        let width = try p.integer("width", in: OptionTable.Output.width).map { Int($0) }
        let height = try p.integer("height", in: OptionTable.Output.height).map { Int($0) }
        // Without width and height, fit, position and withoutEnlargement are refused by
        // `OptionRule` (in `init`).
        if width != nil || height != nil {
            var box = OutputGeometry.Box(width: width, height: height)
            if let fit = try p.oneOf("fit", FitPlan.Fit.allCases.map(\.rawValue)) { box.fit = FitPlan.Fit(rawValue: fit)! }
            if let position = try p.oneOf("position", FitPlan.Position.allCases.map(\.rawValue)) {
                box.position = FitPlan.Position(rawValue: position)!
            }
            box.withoutEnlargement = try p.bool("withoutEnlargement") ?? false
            spec.geometry.box = box
        }
        // The contain canvas' colour, and what a format without alpha flattens transparency onto.
        if let text = try p.string("background") {
            guard let color = BackgroundColor(hex: text) else {
                throw .invalidParams("output.background must be #rrggbb or #rrggbbaa (hex), not \"\(text)\"")
            }
            spec.geometry.background = color
        }
        spec.partialIntervalMs = try p.integer("partialIntervalMs", in: OptionTable.Output.partialIntervalMs) ?? spec.partialIntervalMs
        spec.partialMaxPixelSize = try p.integer("partialMaxPixelSize", in: OptionTable.Output.partialMaxPixelSize).map { Int($0) }
        spec.quality = try p.integer("quality", in: OptionTable.Output.quality).map { Int($0) }
        spec.lossless = try p.bool("lossless") ?? false
        if let s = try p.oneOf("chromaSubsampling", ChromaSubsampling.allCases.map(\.rawValue)) {
            spec.chromaSubsampling = ChromaSubsampling(rawValue: s)
        }
        // Which of path, dir, name, nameTemplate, overwrite and skipExisting go together, and with
        // which delivery, is `OptionRule`'s (checked in `init`).
        if let path {
            guard !path.isEmpty, !path.hasSuffix("/") else { throw .invalidParams("output.path must name a file") }
            spec.target = .path(path)
        } else if let dir {
            guard !dir.isEmpty else { throw .invalidParams("output.dir must not be empty") }
            spec.target = .directory(dir)
        }
        if spec.skipExisting, spec.fileName?.needsDigest == true {
            throw .invalidParams("output.skipExisting needs a name known before the download: {sha256} depends on the bytes")
        }
        return spec
    }
}

extension DownloadToken {
    var json: JSONValue {
        switch self {
        case .string(let s): return .string(s)
        case .int(let i): return .int(i)
        }
    }

    init?(json: JSONValue) {
        switch json {
        case .string(let s) where !s.isEmpty: self = .string(s)
        case .int(let i): self = .int(i)
        default: return nil
        }
    }
}
