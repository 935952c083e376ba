import Foundation
import JSONRPC
import RPCTransport
import StpctlKit
import StpdProtocol
import Synchronization

/// `source wait`, `source poll --wait` and `redirect wait`: follows one object through its events
/// until its state says it ended, with a progress line while stdout is a terminal.
struct ObjectWait: Sendable {
    /// What to wait for.
    struct Target: Sendable {
        var id: String
        var filter: EventFilterParams
        /// Reads the state once subscribed, so no change can fall between the read and the events.
        var fetch: @Sendable (RPCClient) async throws -> JSONValue
        /// Nil while the state is not final.
        var end: @Sendable (JSONValue) -> WaitEnd?
        /// The progress line for a state, after waiting so many seconds.
        var progress: @Sendable (JSONValue, Double) -> String
    }

    let socketPath: String
    /// Bounds each call while setting up (connect, subscribe, first read): the global --timeout.
    let callTimeout: Double
    /// Bounds the whole wait: --timeout when given on the command line, else nothing (0).
    let waitTimeout: Double
    let showProgress: Bool

    init(_ global: GlobalOptions) throws {
        socketPath = try global.connection().socketPath
        callTimeout = global.callTimeout
        waitTimeout = global.timeout ?? 0
        showProgress = isatty(STDOUT_FILENO) == 1
    }

    /// The final state and how it ended. Throws StpctlFailure.waitTimedOut at --timeout.
    func run(_ target: Target) async throws -> (JSONValue, WaitEnd) {
        let latest = Mutex<JSONValue?>(nil)
        let started = ContinuousClock.now
        let waited: @Sendable () -> Double = {
            let (seconds, attoseconds) = (ContinuousClock.now - started).components
            return Double(seconds) + Double(attoseconds) / 1e18
        }
        let line = showProgress ? ProgressLine { latest.withLock { $0 }.map { target.progress($0, waited()) } } : nil
        // Redrawn every second as well as on each event, so the time shown keeps moving.
        let ticker = line.map { line in
            Task { while (try? await Task.sleep(for: .seconds(1))) != nil { line.draw() } }
        }
        defer {
            ticker?.cancel()
            line?.finish()
        }
        let seconds = waitTimeout
        let (path, callTimeout) = (socketPath, callTimeout)
        return try await withTimeout(
            seconds: seconds,
            onTimeout: {
                let last = latest.withLock { $0 }.map { target.progress($0, waited()) } ?? target.id
                return StpctlFailure.waitTimedOut(
                    "gave up waiting after \(Render.seconds(seconds)) (--timeout); last seen: \(last)")
            }
        ) {
            try await RPCClient.withConnection(to: path) { client in
                func bounded<R: Sendable>(_ call: @escaping @Sendable () async throws -> R) async throws -> R {
                    try await withTimeout(
                        seconds: callTimeout, onTimeout: { StpctlFailure.timeout(seconds: callTimeout, socket: path) },
                        call)
                }
                let subscription = try await bounded {
                    try await client.call(EventsSubscribe.self, .init(filter: target.filter))
                }.subscription
                var state = try await bounded { try await target.fetch(client) }
                var notifications = client.notifications.makeAsyncIterator()
                while true {
                    latest.withLock { $0 = state }
                    line?.draw()
                    if let end = target.end(state) { return (state, end) }
                    guard let next = await Self.nextObject(&notifications, subscription: subscription) else {
                        throw StpctlFailure.connectionEnded(
                            "stpd ended the connection while waiting for \(target.id); run the command again to resume")
                    }
                    state = next
                }
            }
        }
    }

    /// The object of the subscription's next event; nil when the connection ends or the daemon
    /// drops the subscription (events.dropped).
    static func nextObject(_ notifications: inout AsyncStream<Request>.Iterator, subscription: String) async
        -> JSONValue?
    {
        while let notification = await notifications.next() {
            guard let params = notification.params, params["subscription"]?.stringValue == subscription else {
                continue
            }
            switch notification.method {
            case Notifications.event.method:
                if let object = params["object"], object.objectValue != nil { return object }
            case Notifications.dropped.method:
                return nil
            default:
                continue
            }
        }
        return nil
    }
}

/// One line on a terminal, redrawn in place with `\r` and erased when the wait ends, so the
/// result prints on a clean line. Only used when stdout is a terminal.
final class ProgressLine: Sendable {
    private struct State {
        var shown = false
        var finished = false
    }

    private let state = Mutex(State())
    private let render: @Sendable () -> String?

    init(_ render: @escaping @Sendable () -> String?) { self.render = render }

    func draw() {
        state.withLock { state in
            guard !state.finished, let text = render() else { return }
            Self.write("\r\u{1B}[K" + Waiting.fit(text, columns: Self.columns()))
            state.shown = true
        }
    }

    func finish() {
        state.withLock { state in
            if state.shown, !state.finished { Self.write("\r\u{1B}[K") }
            state.finished = true
        }
    }

    static func write(_ text: String) {
        try? FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
    }

    static func columns() -> Int {
        var size = winsize()
        return ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
    }
}
