/// Runs `operation`, giving up waiting for it after `limit`.
func withTimeLimit(_ limit: Duration, _ operation: @escaping @Sendable () async -> Void) async {
    await withTaskGroup(of: Void.self) { group in
        group.addTask { await operation() }
        group.addTask { try? await Task.sleep(for: limit) }
        await group.next()
        group.cancelAll()
    }
}
