import Dispatch
import Foundation
import StpctlKit
import Synchronization

/// stdout of a long-running stream (`watch`): each line is written whole with write(2), so a
/// pipe reader sees it at once (nothing sits in a buffer), under a lock that the interrupt
/// handlers take before exiting, so an interrupt never cuts a line in half.
enum EventStream {
    private static let lock = Mutex<Void>(())
    nonisolated(unsafe) private static var signalSources: [any DispatchSourceSignal] = []

    /// Writes `line` and a newline. If the reader has gone (`| head -1`), the stream is done:
    /// exits 0. Any other write error is reported and exits 6.
    static func emit(_ line: String) {
        lock.withLock { _ in
            let bytes = Array((line + "\n").utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes {
                    write(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset)
                }
                if written >= 0 {
                    offset += written
                    continue
                }
                switch errno {
                case EINTR:
                    continue
                case EAGAIN:  // a non-blocking stdout someone handed us: wait until it drains
                    var descriptor = pollfd(fd: STDOUT_FILENO, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&descriptor, 1, -1)
                case EPIPE:
                    exit(ExitStatus.success.rawValue)
                default:
                    let reason = String(cString: strerror(errno))
                    Output.diagnostic("cannot write to standard output: \(reason)")
                    exit(ExitStatus.connectionBroken.rawValue)
                }
            }
        }
    }

    /// From now on SIGINT and SIGTERM end the process with status 0 once the line being written
    /// is out, and so does the reader of stdout going away (a closed pipe, a hung-up terminal)
    /// even while no event arrives: `stpctl watch | head -1` ends as soon as head does.
    static func exitOnInterruptOrClosedOutput() {
        // A write to a closed pipe then fails with EPIPE (see `emit`) instead of killing the process.
        signal(SIGPIPE, SIG_IGN)
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { finish() }
            source.resume()
            signalSources.append(source)
        }
        Thread.detachNewThread {
            // Asking for no event at all still reports POLLERR (a pipe without readers) and
            // POLLHUP; a regular file or /dev/null reports neither, and this waits forever.
            var descriptor = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
            while true {
                let ready = poll(&descriptor, 1, -1)
                if ready < 0, errno == EINTR { continue }
                guard ready > 0, descriptor.revents & Int16(POLLERR | POLLHUP) != 0 else { return }
                finish()
            }
        }
    }

    static func finish() -> Never {
        lock.withLock { _ in exit(ExitStatus.success.rawValue) }
    }
}
