import ImageWorkerProtocol
import Testing

@testable import ImageWorkerServer

/// The rules between `download` options (`OptionTable.rules`, generated from the schema's
/// `x-rules`, as the clients check them): each refuses its case with invalid params through
/// `DownloadParams`, and lets the same options through when they agree.
struct OptionRuleTests {
    private func params(_ fields: JSONObject) -> RPCRequest {
        var all = fields
        all["url"] = "http://127.0.0.1/a.jpg"
        return RPCRequest(id: .int(1), method: WorkerMethod.download, params: .object(all))
    }

    private func refusal(_ fields: JSONObject) -> String? {
        do {
            _ = try DownloadParams(params(fields))
            return nil
        } catch {
            return error.code == -32602 ? error.message : "code \(error.code): \(error.message)"
        }
    }

    @Test func everyRuleRefusesItsCaseAndAllowsTheOthers() {
        let file: JSONObject = ["delivery": "file", "dir": "/tmp/x"]
        let cases: [(refused: JSONObject, allowed: JSONObject, says: String)] = [
            (["output": ["delivery": "file", "dir": "/tmp", "path": "/tmp/a"]], ["output": .object(file)], "output.dir and output.path exclude each other"),
            (["output": ["delivery": "file", "dir": "/tmp", "name": "a", "nameTemplate": "{name}"]],
             ["output": ["delivery": "file", "dir": "/tmp", "name": "a"]], "output.name and output.nameTemplate"),
            (["output": ["delivery": "file", "dir": "/tmp", "overwrite": true, "skipExisting": true]],
             ["output": ["delivery": "file", "dir": "/tmp", "overwrite": false, "skipExisting": true]], "exclude each other"),
            (["progressive": true, "quiet": true, "output": ["format": "png"]], ["progressive": true, "quiet": false, "output": ["format": "png"]],
             "progressive and quiet exclude each other: quiet sends only the terminal event"),
            (["output": ["format": "png", "quality": 80]], ["output": ["format": "webp", "quality": 80]], "output.quality goes with output.format \"jpeg\" or \"webp\""),
            (["output": ["format": "jpeg", "lossless": true]], ["output": ["format": "webp", "lossless": true]], "output.lossless goes with output.format \"webp\""),
            (["output": ["format": "webp", "chromaSubsampling": "4:4:4"]], ["output": ["format": "jpeg", "chromaSubsampling": "4:4:4"]],
             "output.chromaSubsampling goes with output.format \"jpeg\""),
            (["output": ["maxPixelSize": 64]], ["output": ["format": "rgba", "maxPixelSize": 64]], "output.maxPixelSize needs a decoded output.format"),
            (["output": ["maxPixelCount": 64]], ["output": ["format": "gray", "maxPixelCount": 64]], "output.maxPixelCount needs a decoded"),
            (["output": ["width": 64]], ["output": ["format": "png", "width": 64]], "output.width needs a decoded"),
            (["output": ["format": "original", "height": 64]], ["output": ["format": "rgb", "height": 64]], "output.height needs a decoded"),
            (["output": ["format": "png", "width": 64, "maxPixelSize": 64]], ["output": ["format": "png", "width": 64]],
             "output.width and output.maxPixelSize exclude each other"),
            (["output": ["format": "png", "height": 64, "maxPixelSize": 64]], ["output": ["format": "png", "maxPixelSize": 64]],
             "output.height and output.maxPixelSize exclude each other"),
            (["output": ["format": "png", "width": 64, "maxPixelCount": 64]], ["output": ["format": "png", "maxPixelCount": 64]],
             "output.width and output.maxPixelCount exclude each other"),
            (["output": ["format": "png", "height": 64, "maxPixelCount": 64]], ["output": ["format": "png", "height": 64]],
             "output.height and output.maxPixelCount exclude each other"),
            (["output": ["format": "png", "fit": "contain"]], ["output": ["format": "png", "height": 9, "fit": "contain"]],
             "output.fit goes with output.width or output.height"),
            (["output": ["format": "png", "position": "top"]], ["output": ["format": "png", "width": 9, "position": "top"]],
             "output.position goes with output.width or output.height"),
            (["output": ["background": "#ffffff"]], ["output": ["format": "jpeg", "background": "#ffffff"]],
             "output.background needs a decoded"),
            (["output": ["format": "png", "withoutEnlargement": true]], ["output": ["format": "png", "width": 9, "withoutEnlargement": true]],
             "output.withoutEnlargement goes with output.width or output.height"),
            (["output": ["applyOrientation": true]], ["output": ["applyOrientation": false]], "output.applyOrientation needs a decoded"),
            (["output": ["colorProfile": "keep"]], ["output": ["format": "rgb", "colorProfile": "keep"]], "output.colorProfile needs a decoded"),
            (["output": ["format": "png", "frames": "all"]], ["output": ["format": "png", "frames": "first"]],
             "output.frames \"all\" goes with output.format \"webp\" or \"gif\" or \"rgba\" or \"rgb\" or \"gray\""),
            (["output": ["format": "original", "partialMaxPixelSize": 8]], ["output": ["format": "png", "partialMaxPixelSize": 8]],
             "output.partialMaxPixelSize needs a decoded"),
            (["progressive": true], ["progressive": true, "output": ["format": "png"]], "progressive needs a decoded output.format (png, jpeg, webp, gif, rgba, rgb, gray)"),
            (["output": ["delivery": "file", "path": "/tmp/a", "name": "a"]], ["output": ["delivery": "file", "dir": "/tmp", "name": "a"]],
             "output.name goes with output.dir"),
            (["output": ["delivery": "file", "path": "/tmp/a", "nameTemplate": "{name}"]],
             ["output": ["delivery": "file", "dir": "/tmp", "nameTemplate": "{name}"]], "output.nameTemplate goes with output.dir"),
            (["output": ["delivery": "file", "dir": "/tmp", "index": 3]],
             ["output": ["delivery": "file", "dir": "/tmp", "nameTemplate": "{index}.png", "index": 3]], "output.index goes with output.nameTemplate"),
            (["output": ["skipExisting": true]], ["output": ["delivery": "file", "path": "/tmp/a", "skipExisting": true]],
             "output.skipExisting goes with output.dir or output.path"),
            (["output": ["delivery": "file"]], ["output": ["delivery": "file", "dir": "/tmp"]], "output.delivery \"file\" needs output.dir or output.path"),
            (["output": ["delivery": "inline", "path": "/tmp/a"]], ["output": ["delivery": "file", "path": "/tmp/a"]],
             "output.path goes with output.delivery \"file\""),
            (["output": ["dir": "/tmp"]], ["output": ["delivery": "file", "dir": "/tmp"]], "output.dir goes with output.delivery \"file\""),
            (["output": ["delivery": "shared", "format": "rgba", "overwrite": true]], ["output": ["delivery": "file", "dir": "/tmp", "overwrite": true]],
             "output.overwrite goes with output.delivery \"file\""),
        ]
        #expect(cases.count == OptionTable.rules.count, "a case per rule of the schema")
        for (refused, allowed, says) in cases {
            let message = refusal(refused)
            #expect(message?.contains(says) == true, "\(refused): \(message ?? "accepted")")
            #expect(refusal(allowed) == nil, "\(allowed): \(refusal(allowed) ?? "")")
        }
    }

    /// A boolean counts as set only when true; an absent or null option never does.
    @Test func anOptionIsSetWhenPresentAndNotFalse() {
        let params: JSONObject = ["quiet": false, "progressive": .null, "output": ["format": "png", "overwrite": true]]
        #expect(!OptionRule.isSet("quiet", in: params))
        #expect(!OptionRule.isSet("progressive", in: params))
        #expect(!OptionRule.isSet("retryFailed", in: params))
        #expect(OptionRule.isSet("output.overwrite", in: params))
        #expect(OptionRule.format(params) == "png")
        #expect(OptionRule.format(["output": "not an object"]) == "original")
    }
}
