import Foundation
import PostgresNIO
import StpdCore

// What the store's SQL is built from and its rows decode to.

/// SQL text with its parameters, built clause by clause.
struct SQL {
    var text: String
    var binds = PostgresBindings()

    init(_ text: String) { self.text = text }

    /// Adds a parameter; returns its placeholder.
    mutating func parameter<V: PostgresDynamicTypeEncodable>(_ value: V) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    mutating func bind<V: PostgresDynamicTypeEncodable>(_ value: V) { text += parameter(value) }

    mutating func append<V: PostgresDynamicTypeEncodable>(_ clause: String, _ value: V, _ close: String = "") {
        text += clause + parameter(value) + close
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: text, binds: binds) }
}

extension PostgresRowSequence {
    func rows() async throws -> [PostgresRow] { try await collect() }
    func count() async throws -> Int { try await collect().count }
    func single<T: PostgresDecodable>(_ type: T.Type) async throws -> T {
        guard let row = try await collect().first else { throw StoreUnavailable(reason: "no row") }
        return try row.decode(T.self)
    }
    func single<A: PostgresDecodable, B: PostgresDecodable>(_ type: (A, B).Type) async throws -> (A, B) {
        guard let row = try await collect().first else { throw StoreUnavailable(reason: "no row") }
        return try row.decode((A, B).self)
    }
    func events(_ store: PostgresStateStore) async throws -> [Event] { try await collect().events(store) }

    /// Decodes rows until `bytes` is full; the rows after that are neither decoded nor buffered.
    func events(filling bytes: inout PageBytes, _ store: PostgresStateStore) async throws -> [Event] {
        var events: [Event] = []
        for try await row in self {
            guard !bytes.isFull else { break }
            let event = try [row].events(store)[0]
            bytes.add(event.object)
            events.append(event)
        }
        return events
    }

    func objects(filling bytes: inout PageBytes, _ store: PostgresStateStore) async throws -> [StoredObject] {
        var objects: [StoredObject] = []
        for try await row in self {
            guard !bytes.isFull else { break }
            let object = try [row].objects(store)[0]
            bytes.add(object.state)
            objects.append(object)
        }
        return objects
    }
}

extension [PostgresRow] {
    func rows() -> [PostgresRow] { self }
    func single<T: PostgresDecodable>(_ type: T.Type) throws -> T {
        guard let row = first else { throw StoreUnavailable(reason: "no row") }
        return try row.decode(T.self)
    }

    func objects(_ store: PostgresStateStore) throws -> [StoredObject] {
        try map { row in
            let (id, kind, owner, state, created, updated, version, status, live, finished) = try row.decode(
                (String, String, Int64, String, Double, Double, Int64, String?, Bool, Bool).self)
            return StoredObject(
                id: id, kind: kind, ownerUID: UInt32(truncatingIfNeeded: owner),
                state: try store.opened(state, for: id), createdAt: Date(timeIntervalSinceReferenceDate: created),
                updatedAt: Date(timeIntervalSinceReferenceDate: updated), version: version, status: status, live: live,
                finished: finished)
        }
    }

    func events(_ store: PostgresStateStore) throws -> [Event] {
        try map { row in
            let (seq, time, type, objectID, objectKind, owner, object) = try row.decode(
                (Int64, Double, String, String, String, Int64, String).self)
            return Event(
                seq: seq, time: Date(timeIntervalSinceReferenceDate: time), type: type, objectId: objectID,
                objectKind: objectKind, ownerUID: UInt32(truncatingIfNeeded: owner),
                object: try store.opened(object, for: objectID))
        }
    }
}
