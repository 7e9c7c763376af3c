import ImageWorkerProtocol

extension JSONValue {
    /// The elements of an array value, else nil: what the tests read messages and schemas by (the
    /// worker reads arrays through `ParamReader`, which says what is wrong with them).
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
}
