import Crypto
import Foundation

/// The key that seals secrets at rest (`StateSealer`), kept out of the database:
/// 1. `$CREDENTIALS_DIRECTORY/state-key` when that file exists (systemd `LoadCredential=`, so
///    the key can live outside the state directory and its backups);
/// 2. else `state-key` beside the database, created at first start (0600, in the 0700 state
///    directory), and refused when it is not a regular file of the daemon's own user.
///
/// Either holds 32 random bytes, raw or as 64 hex digits (whitespace around them ignored).
/// A key file that group or others may read is made 0600 again with a warning, as the store
/// does with its database files.
public struct StateKey: Sendable {
    public enum Source: Sendable, Hashable, CustomStringConvertible {
        case credential(path: String)
        case file(path: String)
        /// Created at this start.
        case created(path: String)

        public var description: String {
            switch self {
            case .credential(let path): "systemd credential \(path)"
            case .file(let path): "key file \(path)"
            case .created(let path): "key file \(path), created now"
            }
        }
    }

    public let sealer: StateSealer
    public let source: Source
    /// Worth a warning in the log: a mode that was too wide, a new key beside an existing database.
    public var warnings: [String] = []

    public static let name = "state-key"
    static let maxFileBytes = 4096

    /// Loads (or creates) the key. `databaseExists` tells whether the database was there before
    /// this start: a key created then cannot open rows an earlier key sealed, which is worth a warning.
    public static func load(
        stateDirectory: String, credentialsDirectory: String?, databaseExists: Bool
    ) throws(StateKeyError) -> StateKey {
        let filePath = "\(stateDirectory)/\(name)"
        if let credentialsDirectory, !credentialsDirectory.isEmpty {
            let path = "\(credentialsDirectory)/\(name)"
            if FileManager.default.fileExists(atPath: path) {
                // systemd makes a credential readable by the service's user alone: no mode check.
                let key = try parse(try readFile(path, checkOwner: false).bytes, path: path)
                var loaded = StateKey(sealer: StateSealer(key: key), source: .credential(path: path))
                if let other = try? readFile(filePath, checkOwner: false).bytes,
                    (try? parse(other, path: filePath)) != key
                {
                    loaded.warnings.append(
                        "\(filePath) holds another state key than the credential \(path) and is not used: "
                            + "objects sealed with it cannot be read")
                }
                return loaded
            }
        }
        guard FileManager.default.fileExists(atPath: filePath) || isSymbolicLink(filePath) else {
            let key = try create(filePath)
            var created = StateKey(sealer: StateSealer(key: key), source: .created(path: filePath))
            if databaseExists {
                created.warnings.append(
                    "created a new state key in \(filePath) for an existing database: "
                        + "objects an earlier key sealed (if any) cannot be read")
            }
            return created
        }
        let (bytes, widened) = try readFile(filePath, checkOwner: true)
        var loaded = StateKey(sealer: StateSealer(key: try parse(bytes, path: filePath)), source: .file(path: filePath))
        if let widened {
            loaded.warnings.append("\(filePath) had mode 0\(String(widened, radix: 8)); it is 0600 again")
        }
        return loaded
    }

    /// Whether a key is there to load (the credential, or the file beside the database, even a
    /// broken one); `load` would create one otherwise.
    public static func exists(stateDirectory: String, credentialsDirectory: String?) -> Bool {
        let file = "\(stateDirectory)/\(name)"
        if let credentialsDirectory, !credentialsDirectory.isEmpty,
            FileManager.default.fileExists(atPath: "\(credentialsDirectory)/\(name)")
        {
            return true
        }
        return FileManager.default.fileExists(atPath: file) || isSymbolicLink(file)
    }

    /// A key kept elsewhere (an old key found again, for `SQLiteStateStore.recover(sealedWith:)`),
    /// read by the caller through a descriptor it checked; parsed as the key file is.
    public static func sealer(fromBytes bytes: [UInt8], path: String) throws(StateKeyError) -> StateSealer {
        guard bytes.count <= maxFileBytes else {
            throw StateKeyError(path: path, reason: "it is over \(maxFileBytes) bytes, too large for a key")
        }
        return StateSealer(key: try parse(bytes, path: path))
    }

    /// 32 raw bytes, or 64 hex digits with optional whitespace around them.
    static func parse(_ bytes: [UInt8], path: String) throws(StateKeyError) -> SymmetricKey {
        if bytes.count == 32 { return SymmetricKey(data: bytes) }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.count == 64, let data = hexBytes(text) else {
            throw StateKeyError(path: path, reason: "expected 32 bytes, raw or as 64 hex digits (\(bytes.count) bytes)")
        }
        return SymmetricKey(data: data)
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            out.append(byte)
        }
        return out
    }

    /// Reads a key file without following a symbolic link, refusing what is not a regular file (or,
    /// with `checkOwner`, a file of another user). Returns the former mode when it had to narrow it.
    static func readFile(_ path: String, checkOwner: Bool) throws(StateKeyError) -> (bytes: [UInt8], widened: mode_t?) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "it is a symbolic link, which a key file must not be" : errnoText()
            throw StateKeyError(path: path, reason: reason)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StateKeyError(path: path, reason: errnoText()) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            let what = info.st_mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file"
            throw StateKeyError(path: path, reason: "it is \(what)")
        }
        if checkOwner, info.st_uid != geteuid() {
            throw StateKeyError(
                path: path, reason: "it belongs to uid \(info.st_uid), not to stpd's uid \(geteuid())")
        }
        guard info.st_size <= maxFileBytes else {
            throw StateKeyError(path: path, reason: "it is \(info.st_size) bytes, too large for a key")
        }
        var widened: mode_t?
        if checkOwner, info.st_mode & 0o077 != 0 {
            guard fchmod(fd, 0o600) == 0 else {
                throw StateKeyError(path: path, reason: "its mode lets others read it and chmod failed: \(errnoText())")
            }
            widened = info.st_mode & 0o777
        }
        var bytes = [UInt8](repeating: 0, count: maxFileBytes + 1)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n == 0 { break }
            guard n > 0 else {
                if errno == EINTR { continue }
                throw StateKeyError(path: path, reason: errnoText())
            }
            count += n
        }
        return (Array(bytes.prefix(count)), widened)
    }

    /// A new random key, written as hex to a private temporary file and linked into place, so a
    /// reader never sees half a key and a key another process created meanwhile is never replaced.
    static func create(_ path: String) throws(StateKeyError) -> SymmetricKey {
        let key = SymmetricKey(size: .bits256)
        let text = key.withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() } + "\n"
        let temporary = "\(path).new-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StateKeyError(path: path, reason: "cannot create it: \(errnoText())") }
        defer { unlink(temporary) }
        let written = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == text.utf8.count, synced else {
            throw StateKeyError(path: path, reason: "cannot write it: \(errnoText())")
        }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST {
                // Another stpd created one first: that one is the key.
                let existing = try readFile(path, checkOwner: true).bytes
                return try parse(existing, path: path)
            }
            throw StateKeyError(path: path, reason: "cannot create it: \(errnoText())")
        }
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
        return key
    }

    static func isSymbolicLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}

/// The state key cannot be used; names the file and why, never its content.
public struct StateKeyError: Error, Hashable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String {
        "state key \(path): \(reason) (stpd seals secrets at rest with it; see docs/SECURITY.md)"
    }
}
