/// The method names of the wire contract (protocol/SPEC.md).
public enum WorkerMethod {
    public static let initialize = "initialize"
    public static let download = "download"
    public static let cancel = "cancel"
    public static let setPriority = "setPriority"
    public static let configure = "configure"
    public static let status = "status"
    public static let cancelAll = "cancelAll"
    public static let shutdown = "shutdown"
    public static let exit = "exit"
    public static let cancelRequest = "$/cancelRequest"
}

/// The notifications the worker sends, every one carrying `token`.
public enum WorkerEvent {
    public static let started = "download/started"
    public static let response = "download/response"
    public static let progress = "download/progress"
    public static let partialImage = "download/partialImage"
    public static let completed = "download/completed"
}

/// The notifications the worker sends about itself, with no token.
public enum WorkerNotification {
    /// `{code, message, details?}`: once per code, something the user should know (protocol/SPEC.md).
    public static let warning = "worker/warning"
}

public enum WorkerProtocolVersion {
    /// Bumped when a message changes in a way an existing client would notice.
    public static let current = "1"
}
