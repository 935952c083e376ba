import JSONRPC
import StpdCore
import StpdProtocol

extension MethodRouter where Context == CallContext {
    /// `<kind>.get` and `<kind>.list` of a kind (`ObjectGet<K>`, `ObjectList<K>`), from its
    /// service's two reads: one object of the caller's, and a page of them (its bytes reserved in
    /// the connection's outbox before it is read).
    mutating func registerReads<K: ListedKind>(
        _ kind: K.Type, get: @escaping @Sendable (_ id: String, _ caller: Caller) async throws -> K.View,
        list:
            @escaping @Sendable (_ caller: Caller, _ status: K.Status?, _ startingAfter: String?, _ limit: Int)
            async throws -> ([K.View], Bool)
    ) {
        register(ObjectGet<K>.self) { params, context in try await get(params.objectID, context.caller) }
        register(ObjectList<K>.self) { params, context in
            try await context.holdPage()
            let (items, hasMore) = try await list(
                context.caller, params.status, params.startingAfter, params.pageSize)
            return .init(items: items, hasMore: hasMore)
        }
    }
}
