import Crypto
import Foundation

extension StateKey {
    /// The name of a previous key, kept while a rotation re-seals what it sealed.
    public static let previousName = "state-key.previous"

    /// A fleet's state keys. Every instance must hold the same ones, so none is ever created:
    /// - the current key (it seals): the credential `state-key`, else `state-key` in the state
    ///   directory;
    /// - a previous key (it only opens what it sealed, until `stpd --rotate-state-key` re-sealed
    ///   it all): `state-key.previous`, looked for in the same two places.
    /// Both are read as `load` reads its key: 32 bytes, raw or as 64 hex digits.
    public static func loadShared(stateDirectory: String, credentialsDirectory: String?) throws(StateKeyError)
        -> StateKey
    {
        guard let (key, source) = try find(name, stateDirectory, credentialsDirectory) else {
            throw StateKeyError(
                path: "\(stateDirectory)/\(name)",
                reason:
                    "a fleet needs the same state key on every instance: give it as the systemd credential "
                    + "\(name) or in this file (64 hex digits, e.g. `openssl rand -hex 32`)")
        }
        let previous = try find(previousName, stateDirectory, credentialsDirectory).map { [$0.key] } ?? []
        return StateKey(sealer: StateSealer(key: key, previous: previous), source: source)
    }

    private static func find(_ name: String, _ stateDirectory: String, _ credentialsDirectory: String?)
        throws(StateKeyError) -> (key: SymmetricKey, source: Source)?
    {
        if let credentialsDirectory, !credentialsDirectory.isEmpty {
            let path = "\(credentialsDirectory)/\(name)"
            if FileManager.default.fileExists(atPath: path) {
                return (try parse(try readFile(path, checkOwner: false).bytes, path: path), .credential(path: path))
            }
        }
        let path = "\(stateDirectory)/\(name)"
        guard FileManager.default.fileExists(atPath: path) || isSymbolicLink(path) else { return nil }
        return (try parse(try readFile(path, checkOwner: true).bytes, path: path), .file(path: path))
    }
}
