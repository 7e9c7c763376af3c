import Foundation
import ImageWorkerProtocol

/// Validates JSON against the schemas in `protocol/schema/`, supporting the part of JSON Schema
/// 2020-12 they use: type, const, enum, properties, required, additionalProperties, items, oneOf,
/// anyOf, allOf, not, minimum, maximum, minLength, pattern, and `$ref` to `$defs` in the same or a
/// relative file. Anything else in a schema is reported as unsupported rather than ignored.
public final class JSONSchemaValidator: Sendable {
    public let directory: URL
    private let documents: [String: JSONValue]

    public init(directory: URL) throws {
        self.directory = directory
        var documents: [String: JSONValue] = [:]
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "json" else { continue }
            let relative = String(url.standardizedFileURL.path.dropFirst(directory.standardizedFileURL.path.count + 1))
            documents[relative] = try JSONParser.parse(Array(try Data(contentsOf: url)))
        }
        self.documents = documents
    }

    public var schemaNames: [String] { documents.keys.sorted() }

    /// The problems of `value` against the schema file `name` (empty when valid).
    public func validate(_ value: JSONValue, against name: String) -> [String] {
        guard let schema = documents[name] else { return ["no schema \(name)"] }
        var problems: [String] = []
        check(value, schema, document: name, path: "$", into: &problems)
        return problems
    }

    private func resolve(_ ref: String, from document: String) -> (JSONValue, String)? {
        let parts = ref.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        var target = document
        if !parts[0].isEmpty {
            var components = document.split(separator: "/").dropLast().map(String.init)
            for piece in parts[0].split(separator: "/") {
                if piece == ".." { _ = components.popLast() } else if piece != "." { components.append(String(piece)) }
            }
            target = components.joined(separator: "/")
        }
        guard var node = documents[target] else { return nil }
        if parts.count > 1 {
            for key in parts[1].split(separator: "/") {
                guard let next = node[String(key)] else { return nil }
                node = next
            }
        }
        return (node, target)
    }

    private static let supported: Set<String> = [
        "$schema", "$id", "$defs", "$ref", "title", "description", "type", "const", "enum", "properties", "required",
        "additionalProperties", "items", "oneOf", "anyOf", "allOf", "not", "minimum", "maximum", "minLength", "pattern", "default",
    ]

    private func check(_ value: JSONValue, _ schema: JSONValue, document: String, path: String, into problems: inout [String]) {
        guard case .object(let s) = schema else {
            if schema == .bool(false) { problems.append("\(path): not allowed") }
            return
        }
        // `x-` keywords are annotations for generators (JSON Schema ignores unknown keywords).
        for key in s.keys where !Self.supported.contains(key) && !key.hasPrefix("x-") { problems.append("\(path): unsupported schema keyword \(key)") }
        if case .string(let ref)? = s["$ref"] {
            guard let (target, targetDocument) = resolve(ref, from: document) else {
                problems.append("\(path): unresolvable $ref \(ref)")
                return
            }
            check(value, target, document: targetDocument, path: path, into: &problems)
        }
        if let type = s["type"] {
            let allowed = type.arrayValue?.compactMap(\.stringValue) ?? [type.stringValue ?? ""]
            if !allowed.contains(where: { Self.matches(value, type: $0) }) {
                problems.append("\(path): \(value.typeName) is not \(allowed.joined(separator: " or "))")
                return
            }
        }
        if let constant = s["const"], !Self.equal(constant, value) {
            problems.append("\(path): \(JSONWriter.encodeString(value)) is not \(JSONWriter.encodeString(constant))")
        }
        if let choices = s["enum"]?.arrayValue, !choices.contains(where: { Self.equal($0, value) }) {
            problems.append("\(path): \(JSONWriter.encodeString(value)) is not one of \(JSONWriter.encodeString(.array(choices)))")
        }
        if let minimum = s["minimum"]?.numberValue, let n = value.numberValue, n < minimum { problems.append("\(path): \(n) < \(minimum)") }
        if let maximum = s["maximum"]?.numberValue, let n = value.numberValue, n > maximum { problems.append("\(path): \(n) > \(maximum)") }
        if let minLength = s["minLength"]?.integerValue, let string = value.stringValue, string.count < minLength {
            problems.append("\(path): shorter than \(minLength)")
        }
        if let pattern = s["pattern"]?.stringValue, let string = value.stringValue {
            // ECMA-262 as the schema says; the schemas use only what ICU reads the same way.
            if let regex = try? NSRegularExpression(pattern: pattern) {
                let range = NSRange(string.startIndex..., in: string)
                if regex.firstMatch(in: string, range: range) == nil { problems.append("\(path): does not match \(pattern)") }
            } else {
                problems.append("\(path): unreadable pattern \(pattern)")
            }
        }
        if case .object(let object) = value {
            let properties = s["properties"]?.objectValue ?? JSONObject()
            for required in s["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where object[required] == nil {
                problems.append("\(path): missing \(required)")
            }
            for (key, child) in object {
                if let propertySchema = properties[key] {
                    check(child, propertySchema, document: document, path: "\(path).\(key)", into: &problems)
                } else if let additional = s["additionalProperties"] {
                    if additional == .bool(false) {
                        problems.append("\(path): unexpected field \(key)")
                    } else {
                        check(child, additional, document: document, path: "\(path).\(key)", into: &problems)
                    }
                }
            }
        }
        if case .array(let elements) = value, let items = s["items"] {
            for (i, element) in elements.enumerated() { check(element, items, document: document, path: "\(path)[\(i)]", into: &problems) }
        }
        if let all = s["allOf"]?.arrayValue {
            for sub in all { check(value, sub, document: document, path: path, into: &problems) }
        }
        if let any = s["anyOf"]?.arrayValue {
            let passing = any.filter { sub in var p: [String] = []; check(value, sub, document: document, path: path, into: &p); return p.isEmpty }
            if passing.isEmpty { problems.append("\(path): matches none of anyOf") }
        }
        if let one = s["oneOf"]?.arrayValue {
            var failures: [[String]] = []
            for sub in one {
                var p: [String] = []
                check(value, sub, document: document, path: path, into: &p)
                failures.append(p)
            }
            let passing = failures.filter(\.isEmpty).count
            if passing != 1 {
                problems.append("\(path): matches \(passing) of oneOf (exactly one needed): " + failures.map { $0.joined(separator: "; ") }.joined(separator: " | "))
            }
        }
        if let not = s["not"] {
            var p: [String] = []
            check(value, not, document: document, path: path, into: &p)
            if p.isEmpty { problems.append("\(path): matches a schema it must not") }
        }
    }

    static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object): return true
        case ("integer", .int): return true
        case ("integer", .double(let d)): return d.rounded() == d
        case ("integer", .rawNumber): return value.integerValue != nil
        case ("number", .int), ("number", .double), ("number", .rawNumber): return true
        default: return false
        }
    }

    static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        if let x = a.numberValue, let y = b.numberValue { return x == y }
        return a == b
    }

    /// Which schema a message the worker sent should satisfy: an event by its method, a result by
    /// the method of the request it answers, an error response by itself.
    public static func schemaName(forOutgoing message: JSONValue, requestMethod: String?) -> String? {
        if let method = message["method"]?.stringValue {
            return "events/" + method.replacingOccurrences(of: "/", with: "-") + ".schema.json"
        }
        if message["error"] != nil { return "error-response.schema.json" }
        if message["result"] != nil, let requestMethod { return "results/\(requestMethod).schema.json" }
        return nil
    }

    /// The schema a message a client sends should satisfy.
    public static func schemaName(forIncoming message: JSONValue) -> String? {
        guard let method = message["method"]?.stringValue else { return nil }
        return "requests/" + (method == "$/cancelRequest" ? "cancelRequest" : method) + ".schema.json"
    }
}
