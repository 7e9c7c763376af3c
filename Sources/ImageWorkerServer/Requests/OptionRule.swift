import ImageWorkerProtocol

/// A rule between `download` options (`OptionTable.rules`, from the schema's `x-rules`: the
/// clients check the same ones before sending). An option is named by its wire path (`output.`
/// for the output object's); it is set when present, and a boolean when true.
public enum OptionRule: Sendable, Equatable {
    /// Not both set.
    case exclusive(String, String, why: String? = nil)
    /// Only with one of these output formats; with `equals`, only when the option has that value.
    case formats(String, equals: String? = nil, [String])
    /// Only with a decoded output format (not `original`).
    case decoded(String)
    /// Only when one of these is set; with `equals`, only when the option has that value.
    case with(String, equals: String? = nil, [String])
    /// Only when `other`'s value (`output.delivery`'s `none` when absent) is one of these.
    case when(String, String, in: [String])

    /// Throws invalid params for the first rule of `rules` that `params` breaks.
    static func check(_ params: JSONObject, _ rules: [OptionRule] = OptionTable.rules) throws(RPCError) {
        if let problem = firstProblem(params, rules) { throw .invalidParams(problem) }
    }

    /// What is wrong with `params` by the first rule of `rules` they break, naming each option by
    /// `name` of its wire path (`get` names its flags), or nil.
    public static func firstProblem(
        _ params: JSONObject, _ rules: [OptionRule] = OptionTable.rules, name: (String) -> String = { $0 }
    ) -> String? {
        for rule in rules {
            if let problem = rule.problem(params, name: name) { return problem }
        }
        return nil
    }

    /// What is wrong with `params` by this rule, or nil.
    func problem(_ params: JSONObject, name: (String) -> String = { $0 }) -> String? {
        switch self {
        case .exclusive(let a, let b, let why):
            guard Self.isSet(a, in: params), Self.isSet(b, in: params) else { return nil }
            return "\(name(a)) and \(name(b)) exclude each other" + (why.map { ": \($0)" } ?? "")
        case .formats(let option, let equals, let formats):
            guard Self.isSet(option, in: params), !formats.contains(Self.format(params)) else { return nil }
            if let equals {
                guard Self.value(option, in: params)?.stringValue == equals else { return nil }
                return "\(name(option)) \"\(equals)\" goes with \(name("output.format")) " + formats.map { "\"\($0)\"" }.joined(separator: " or ")
            }
            return "\(name(option)) goes with \(name("output.format")) " + formats.map { "\"\($0)\"" }.joined(separator: " or ")
        case .decoded(let option):
            guard Self.isSet(option, in: params), Self.format(params) == OutputSpec.Format.original.rawValue else { return nil }
            let decoded = OutputSpec.Format.allCases.filter(\.needsDecoding).map(\.rawValue)
            return "\(name(option)) needs a decoded \(name("output.format")) (\(decoded.joined(separator: ", ")))"
        case .with(let option, let equals, let others):
            guard Self.isSet(option, in: params), others.allSatisfy({ !Self.isSet($0, in: params) }) else { return nil }
            if let equals {
                guard Self.value(option, in: params)?.stringValue == equals else { return nil }
                return "\(name(option)) \"\(equals)\" needs " + others.map(name).joined(separator: " or ")
            }
            return "\(name(option)) goes with " + others.map(name).joined(separator: " or ")
        case .when(let option, let other, let values):
            guard Self.isSet(option, in: params), !values.contains(Self.text(other, in: params)) else { return nil }
            return "\(name(option)) goes with \(name(other)) " + values.map { "\"\($0)\"" }.joined(separator: " or ")
        }
    }

    static func value(_ path: String, in params: JSONObject) -> JSONValue? {
        guard path.hasPrefix("output.") else { return params[path] }
        return params["output"]?.objectValue?[String(path.dropFirst("output.".count))]
    }

    static func isSet(_ path: String, in params: JSONObject) -> Bool {
        switch value(path, in: params) {
        case nil, .null?, .bool(false)?: return false
        default: return true
        }
    }

    static func format(_ params: JSONObject) -> String { text("output.format", in: params) }

    /// A choice's value, or the schema's default when absent (`OptionTable.choiceDefaults`).
    static func text(_ path: String, in params: JSONObject) -> String {
        value(path, in: params)?.stringValue ?? OptionTable.choiceDefaults[path] ?? ""
    }
}
