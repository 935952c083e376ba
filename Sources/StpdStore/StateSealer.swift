import Crypto
import Foundation

/// Seals the JSON text stpd keeps at rest (object state, event objects) with AES-256-GCM under a
/// key that is not in the database (`StateKey`), so a copied `stpd.sqlite` leaks no bearer token
/// or client secret.
///
/// Invariants:
/// - A sealed text is `sealed:v1:<key id>:<base64 of nonce, ciphertext and tag>`. No JSON text
///   starts with `s`, so a row written in the clear (before sealing existed, or by `.plain`)
///   is told apart by its first byte and still reads.
/// - The additional data binds a sealed text to its object id: a row copied onto another id
///   does not open.
/// - `open` never returns text that failed authentication; it throws a `StateSealerError` that
///   names the object and, when the key is the wrong one, both key ids.
/// - It seals with its key and opens with it or any `previous` key (a rotation: rows are re-sealed
///   with the current key while both open them).
public struct StateSealer: Sendable {
    /// SymmetricKey is an immutable value whose storage nothing mutates after it is made, but
    /// swift-crypto 3 does not mark it Sendable.
    private struct Key: @unchecked Sendable {
        let value: SymmetricKey
    }

    private let boxed: Key?
    private var key: SymmetricKey? { boxed?.value }
    /// Keys that still open what they sealed, by id.
    private let previous: [String: Key]
    /// Eight hex digits naming the key in errors and logs (a hash of it, which tells nothing of it).
    public let keyID: String?

    /// Writes in the clear and opens only plain rows: for tests of the store, never the daemon.
    public static let plain = StateSealer(key: nil)

    public init(key: SymmetricKey, previous: [SymmetricKey] = []) {
        self.init(key: Optional(key), previous: previous)
    }

    private init(key: SymmetricKey?, previous: [SymmetricKey] = []) {
        boxed = key.map(Key.init)
        keyID = key.map(Self.identify)
        self.previous = Dictionary(
            previous.map { (Self.identify($0), Key(value: $0)) }, uniquingKeysWith: { a, _ in a })
    }

    /// The ids of the previous keys it opens with.
    public var previousKeyIDs: [String] { previous.keys.sorted() }

    public static let prefix = "sealed:v1:"

    public static func isSealed(_ stored: String) -> Bool { stored.hasPrefix("sealed:") }

    public func seal(_ text: String, for id: String) throws -> String {
        guard let key, let keyID else { return text }
        let box = try AES.GCM.seal(Data(text.utf8), using: key, authenticating: Self.context(id))
        // `combined` is only nil for a nonce of another size than the default 12 bytes.
        return "\(Self.prefix)\(keyID):\(box.combined!.base64EncodedString())"
    }

    public func open(_ stored: String, for id: String) throws(StateSealerError) -> String {
        guard Self.isSealed(stored) else { return stored }
        guard stored.hasPrefix(Self.prefix) else {
            throw .unknownFormat(id: id, prefix: String(stored.prefix(while: { $0 != ":" }).prefix(16)))
        }
        let fields = stored.dropFirst(Self.prefix.count).split(separator: ":", maxSplits: 1)
        guard fields.count == 2, let combined = Data(base64Encoded: String(fields[1])) else {
            throw .damaged(id: id)
        }
        let sealedWith = String(fields[0])
        guard let current = key, let keyID else { throw .noKey(id: id, sealedWith: sealedWith) }
        guard let key = sealedWith == keyID ? current : previous[sealedWith]?.value else {
            throw .otherKey(id: id, sealedWith: sealedWith, current: keyID)
        }
        do {
            let box = try AES.GCM.SealedBox(combined: combined)
            let plain = try AES.GCM.open(box, using: key, authenticating: Self.context(id))
            guard let text = String(data: plain, encoding: .utf8) else { throw StateSealerError.damaged(id: id) }
            return text
        } catch {
            throw .damaged(id: id)
        }
    }

    private static func context(_ id: String) -> Data { Data("stpd state v1 \(id)".utf8) }

    private static func identify(_ key: SymmetricKey) -> String {
        var hash = SHA256()
        hash.update(data: Data("stpd state key id".utf8))
        key.withUnsafeBytes { hash.update(bufferPointer: $0) }
        return hash.finalize().prefix(4).map { String(format: "%02x", $0) }.joined()
    }
}

/// Why a stored text could not be opened. Each names the object; none quotes the stored text.
public enum StateSealerError: Error, Hashable, CustomStringConvertible {
    /// Sealed, but this store has no key (a store opened `.plain`).
    case noKey(id: String, sealedWith: String)
    /// Sealed with another key than the daemon's: the key file was replaced or the credential changed.
    case otherKey(id: String, sealedWith: String, current: String)
    /// The text fails authentication or does not parse: changed after it was written.
    case damaged(id: String)
    /// Written by a later stpd with a format this one does not know.
    case unknownFormat(id: String, prefix: String)

    public var id: String {
        switch self {
        case .noKey(let id, _), .otherKey(let id, _, _), .damaged(let id), .unknownFormat(let id, _): id
        }
    }

    public var description: String {
        switch self {
        case .noKey(let id, let sealedWith):
            "\(id): its state is sealed with state key \(sealedWith), and this store has no key"
        case .otherKey(let id, let sealedWith, let current):
            "\(id): its state is sealed with state key \(sealedWith), but the daemon's state key is \(current) "
                + "(was the state-key file replaced, or the state-key credential changed?)"
        case .damaged(let id):
            "\(id): its sealed state fails authentication (changed or damaged after it was written)"
        case .unknownFormat(let id, let prefix):
            "\(id): its state is sealed in a format this stpd does not know (\(prefix)): written by a later version?"
        }
    }
}
