import Foundation

/// Runs blocking work (a `read`, `recv` or `waitpid`) on a thread of its own, so it never
/// occupies one of the few threads of Swift's cooperative pool, which the server under test
/// and NIO's event loops need to make progress.
public func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

/// Why a test helper gave up.
public enum TestSupportError: Error, CustomStringConvertible {
    case system(String, errno: CInt)
    case timedOut(String)
    case unexpected(String)

    public var description: String {
        switch self {
        case .system(let call, let code): return "\(call): \(String(cString: strerror(code)))"
        case .timedOut(let what): return "timed out: \(what)"
        case .unexpected(let what): return what
        }
    }
}

/// A private directory under /tmp, short enough that socket paths in it fit `sun_path`
/// (108 bytes), which `FileManager.temporaryDirectory` under a long `$TMPDIR` might not.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "stpd-test") throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestSupportError.system("mkdtemp", errno: errno)
        }
        path = String(cString: made)
        // mkdtemp's 0700 is filtered by the umask, which `UnixListener.bind` narrows for a moment
        // while it binds; a test binding in parallel must not leave this directory unsearchable.
        chmod(path, 0o700)
    }

    public func appending(_ name: String) -> String { "\(path)/\(name)" }

    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Whether anything (of any type) exists at `path`, without following a symlink.
public func fileExists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}
