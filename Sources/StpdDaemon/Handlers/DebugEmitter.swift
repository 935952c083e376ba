import Foundation
import JSONRPC
import StpdCore
import StpdProtocol
import Synchronization

/// `debug.emit`'s writes. It only ever writes `dbg_` objects (the schema holds `objectId` to that
/// prefix) of kind `debug` owned by the caller: an id that names any other object, or another
/// uid's debug object (root's included), is refused before anything is written. Calls run one at
/// a time, so no other `debug.emit` can create the object between the check and the write.
///
/// Anyone but root names its objects `dbg_<uid>_…` with its own uid, a prefix no one else can
/// create objects under: whether an id is refused depends on the caller's uid alone, never on
/// whether another uid's object by that name exists, which would tell that it does. One call
/// writes at most `DebugEmit.maxTotalBytes`: `count` times the payload's size.
final class DebugEmitter: Sendable {
    static let kind = ObjectKind.debug.rawValue

    private let log: EventLog
    private let tail = Mutex<Task<Void, Never>?>(nil)

    init(log: EventLog) { self.log = log }

    func emit(objectId: String?, count: Int, payload: JSONValue?, uid: UInt32) async throws -> [Event] {
        if let objectId, uid != Caller.rootUID, !objectId.hasPrefix("dbg_\(uid)_") {
            throw RPCError.invalidParams(
                "must start with dbg_\(uid)_ (your uid): only root names debug objects freely", parameter: "objectId")
        }
        let bytes = payload.map(JSONText.size) ?? 0
        if count * bytes > DebugEmit.maxTotalBytes {
            throw RPCError.invalidParams(
                "\(count) events of a \(bytes)-byte payload exceed \(DebugEmit.maxTotalBytes) bytes in one call",
                parameter: "payload")
        }
        let run = tail.withLock { tail in
            let previous = tail
            let next = Task { [log] () -> Result<[Event], any Error> in
                await previous?.value
                do {
                    return .success(try await Self.write(log, objectId, count, payload, uid))
                } catch { return .failure(error) }
            }
            tail = Task { _ = await next.value }
            return next
        }
        return try await run.value.get()
    }

    private static func write(
        _ log: EventLog, _ objectId: String?, _ count: Int, _ payload: JSONValue?, _ uid: UInt32
    ) async throws -> [Event] {
        let id = objectId ?? "dbg_\(uid)_" + UUID().uuidString.lowercased().prefix(12)
        if let existing = try await log.store.object(id: id), existing.kind != kind || existing.ownerUID != uid {
            throw StpdErrors.permissionDenied(
                "\(id) is not a debug object of uid \(uid): debug.emit writes only the caller's own",
                data: ["objectId": .string(id)])
        }
        let now = Date()
        let changes = (1...count).map { n in
            var state: [String: JSONValue] = ["id": .string(id), "object": "debug", "n": .int(Int64(n))]
            if let payload { state["payload"] = payload }
            return StateChange(
                object: StoredObject(
                    id: id, kind: kind, ownerUID: uid, state: .object(state), createdAt: now, updatedAt: now),
                eventType: DebugEvent.test.type)
        }
        return try await log.apply(changes)
    }
}
