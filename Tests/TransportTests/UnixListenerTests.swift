import Foundation
import RPCTransport
import Synchronization
import TestSupport
import Testing

// Binding the socket ourselves (without systemd): the mode is right from the first instant,
// a live daemon is never displaced, a stale file left by a crash is replaced, and nothing that
// is not a socket is ever deleted.

/// Binds in a fresh directory, hands the path and socket to `body`, then closes and cleans up.
private func withBoundSocket(
    mode: mode_t = 0o600, _ body: (String, ListeningSocket) throws -> Void
) throws {
    let directory = try TemporaryDirectory(prefix: "stpd-listen")
    defer { directory.remove() }
    let path = directory.appending("s.sock")
    let socket = try bindSerialized(path: path, mode: mode)
    defer { close(socket.fileDescriptor) }
    try body(path, socket)
}

private func permissions(_ path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o777
}

@Suite struct UnixListenerTests {
    @Test(arguments: [0o600, 0o640, 0o660] as [mode_t])
    func modeIsApplied(mode: mode_t) throws {
        try withBoundSocket(mode: mode) { path, socket in
            #expect(permissions(path) == mode)
            #expect(socket.path == path)
            #expect(socket.ownsPath)
            #expect(UnixListener.boundPath(of: socket.fileDescriptor) == path)
        }
    }

    @Test func liveDaemonIsDetected() throws {
        try withBoundSocket { path, _ in
            // Listening (even without accepting) is live: connections queue in the backlog.
            #expect(UnixListener.isServing(path))
            #expect(throws: UnixListenerError.alreadyServing(path: path)) {
                _ = try bindSerialized(path: path, mode: 0o600)
            }
            #expect(fileExists(path), "the live daemon's socket is left alone")
        }
    }

    @Test func staleSocketIsReplaced() throws {
        let directory = try TemporaryDirectory(prefix: "stpd-listen")
        defer { directory.remove() }
        let path = directory.appending("s.sock")
        // A daemon that died without cleaning up: the file stays, nobody listens.
        let crashed = try bindSerialized(path: path, mode: 0o600)
        close(crashed.fileDescriptor)
        #expect(fileExists(path))
        #expect(!UnixListener.isServing(path))

        let socket = try bindSerialized(path: path, mode: 0o640)
        defer { close(socket.fileDescriptor) }
        #expect(UnixListener.isServing(path))
        #expect(permissions(path) == 0o640)
    }

    @Test func nonSocketFileIsRefused() throws {
        let directory = try TemporaryDirectory(prefix: "stpd-listen")
        defer { directory.remove() }
        let path = directory.appending("s.sock")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("precious".utf8)))
        #expect(throws: UnixListenerError.notASocket(path: path)) {
            _ = try bindSerialized(path: path, mode: 0o600)
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")

        let folder = directory.appending("dir")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(throws: UnixListenerError.notASocket(path: folder)) {
            _ = try bindSerialized(path: folder, mode: 0o600)
        }
    }

    @Test func tooLongPathIsRefused() throws {
        let path = "/tmp/" + String(repeating: "a", count: 195)
        #expect(path.utf8.count == 200)
        #expect(throws: UnixListenerError.pathTooLong(path: path, limit: 107)) {
            _ = try bindSerialized(path: path, mode: 0o600)
        }
        #expect(!fileExists(path))
    }

    @Test func missingDirectoryIsASystemError() throws {
        let directory = try TemporaryDirectory(prefix: "stpd-listen")
        defer { directory.remove() }
        let path = directory.appending("missing/s.sock")
        #expect(throws: UnixListenerError.system(call: "bind", path: path, errno: ENOENT)) {
            _ = try bindSerialized(path: path, mode: 0o600)
        }
    }
}

@Suite struct UnixListenerConcurrencyTests {
    /// Several binds at once must each get the mode they asked for. `bind` narrows the
    /// process-wide umask around its bind(2), so concurrent binds (or files created by other
    /// threads meanwhile) can take each other's mode. A correct implementation passes every
    /// time; the current one fails most runs. The bind lock keeps this race away from the
    /// other tests' sockets.
    @Test func concurrentBindsEachGetTheirOwnMode() async throws {
        let directory = try TemporaryDirectory(prefix: "stpd-listen")
        defer { directory.remove() }
        let modes: [mode_t] = [0o600, 0o640, 0o660, 0o644]
        let wrong = Findings()
        let workers = 8
        let rounds = 200
        // Off the cooperative pool: the workers' joins block this thread for the whole test.
        try await blocking {
            withBindLock {
                // Plain threads rather than concurrentPerform (capped at the CPU count), so binds
                // interleave even on a two-core machine.
                let finished = DispatchSemaphore(value: 0)
                for worker in 0..<workers {
                    Thread {
                        defer { finished.signal() }
                        for round in 0..<rounds {
                            let mode = modes[(worker + round) % modes.count]
                            let path = directory.appending("w\(worker)-\(round).sock")
                            guard let socket = try? UnixListener.bind(path: path, mode: mode) else {
                                wrong.list.withLock { $0.append("bind \(path) failed") }
                                continue
                            }
                            close(socket.fileDescriptor)
                            if let got = permissions(path), got != mode {
                                wrong.list.withLock {
                                    $0.append("\(String(mode, radix: 8)) became \(String(got, radix: 8))")
                                }
                            }
                            unlink(path)
                        }
                    }.start()
                }
                for _ in 0..<workers { finished.wait() }
            }
        }
        let failures = wrong.list.withLock { $0 }
        #expect(
            failures.count == 0,
            "\(failures.count) of \(workers * rounds) sockets got another bind's mode, e.g. \(failures.prefix(3))")
    }
}

/// Collected from several threads.
private final class Findings: Sendable {
    let list = Mutex<[String]>([])
}
