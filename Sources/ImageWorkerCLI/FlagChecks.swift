import ArgumentParser

/// The checks the generated flags' `validate()` (`GetProtocolFlags`, `ServeProtocolFlags`) make
/// of each flag's value.
extension ParsableArguments {
    static func check<Value: BinaryInteger>(_ flag: String, _ value: Value?, _ range: ClosedRange<Int64>) throws {
        guard let value else { return }
        guard range.contains(Int64(clamping: value)) else {
            throw ValidationError("\(flag) must be between \(range.lowerBound) and \(range.upperBound)")
        }
    }

    static func check(_ flag: String, _ value: Double?, _ range: ClosedRange<Double>) throws {
        guard let value else { return }
        guard value.isFinite, range.contains(value) else {
            throw ValidationError("\(flag) must be between \(range.lowerBound.formatted()) and \(range.upperBound.formatted())")
        }
    }

    static func check(_ flag: String, _ value: String?, oneOf choices: [String]) throws {
        guard let value, !choices.contains(value) else { return }
        throw ValidationError("\(flag) must be one of \(choices.joined(separator: ", ")), not \(value)")
    }
}

extension Double {
    /// `1000000`, `0.5`: as a flag's value is written.
    fileprivate func formatted() -> String { self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self) }
}
