import Foundation
import JSONRPC
import NIOCore
import RPCTransport
import ServiceLifecycle
import Synchronization
import TestSupport

/// The application behind the test server. Methods:
/// - `echo`: returns its params.
/// - `slow`: opens `slowStarted`, then waits for `release` before answering; if graceful
///   shutdown begins meanwhile it opens `shutdownSeen`, so a test can order "shutdown began"
///   before "let the request finish" without sleeping.
/// - `release`: opens the gate `slow` waits on.
/// - `push`: sends `count` notifications `pushed` with params `{"n": i}` to the caller, then answers.
/// - `whoami`: the peer credentials the server read from the kernel.
/// - `hold`: counts itself running (`running`, `mostRunning`, a `holdStarted` event each), then
///   waits for `holdReleased`.
/// - `hang`: opens `hangStarted`, then waits until its task is cancelled, and opens `hangCancelled`.
/// - `keepalive`: sets the connection's `keepAlive`.
/// - `ping`: answered at once, where the frame is read (`route`), like the daemon's `daemon.ping`.
/// - `big`: reserves `{"bytes": n}` of the connection's outbound budget for its reply (waiting
///   for room), counts itself built (`built`), then answers a string of n bytes.
/// - `flood`: pushes `pushed {"n": i}` notifications, tagged `i`, until the connection refuses one
///   (its budget is spent), then closes it withdrawing the queued ones, with one final `final`
///   notification naming the first `n` withdrawn (`firstWithdrawn`, the count pushed if none);
///   then opens `flooded`. No reply. With `{"withdraw": false}` nothing is withdrawn: `final`
///   follows everything queued (`firstWithdrawn` is the count pushed).
final class TestService: RPCService {
    let flooded = Gate()
    let slowStarted = Gate()
    let slowReleased = Gate()
    let shutdownSeen = Gate()
    let holdReleased = Gate()
    let hangStarted = Gate()
    let hangCancelled = Gate()
    let holdStarted: AsyncStream<Void>
    private let holdStartedSink: AsyncStream<Void>.Continuation
    private let counts = Mutex((opened: 0, closed: 0, running: 0, mostRunning: 0, built: 0))

    init() {
        (holdStarted, holdStartedSink) = AsyncStream.makeStream()
    }

    var openedConnections: Int { counts.withLock { $0.opened } }
    var closedConnections: Int { counts.withLock { $0.closed } }
    var mostRunning: Int { counts.withLock { $0.mostRunning } }
    var built: Int { counts.withLock { $0.built } }

    func route(_ request: Request, on connection: RPCConnection) -> RoutedCall {
        guard request.method == "ping" else { return .pending { await self.handle(request, on: connection) } }
        return .answered(request.id.map { Response(id: $0, result: "pong") })
    }

    func handle(_ request: Request, on connection: RPCConnection) async -> Response? {
        let result: JSONValue
        switch request.method {
        case "echo":
            result = request.params ?? .null
        case "slow":
            await withGracefulShutdownHandler {
                slowStarted.open()
                await slowReleased.wait()
            } onGracefulShutdown: { [shutdownSeen] in
                shutdownSeen.open()
            }
            result = "slow done"
        case "release":
            slowReleased.open()
            result = "released"
        case "push":
            let count = request.params?["count"]?.intValue ?? 1
            var accepted = true
            for n in 0..<count {
                accepted = accepted && connection.notify(Request(id: nil, method: "pushed", params: ["n": .int(n)]))
            }
            result = ["accepted": .bool(accepted)]
        case "flood":
            var n = 0
            while connection.notify(frame: Self.pushed(n), tag: n) { n += 1 }
            let pushed = n
            if request.params?["withdraw"] == false {
                // Everything queued goes out first, then the notice.
                let final = Request(id: nil, method: "final", params: ["firstWithdrawn": .int(Int64(pushed))])
                connection.close(after: final, grace: .seconds(30))
            } else {
                connection.close(
                    withdrawingNotifications: { withdrawn in
                        let first = withdrawn.compactMap { $0 as? Int }.min() ?? pushed
                        return [Request(id: nil, method: "final", params: ["firstWithdrawn": .int(Int64(first))])]
                    }, grace: .seconds(30))
            }
            flooded.open()
            return nil
        case "hold":
            counts.withLock { c in
                c.running += 1
                c.mostRunning = max(c.mostRunning, c.running)
            }
            holdStartedSink.yield()
            await holdReleased.wait()
            counts.withLock { $0.running -= 1 }
            result = "held"
        case "hang":
            hangStarted.open()
            let never = Gate()
            await withTaskCancellationHandler {
                await never.wait()
            } onCancel: { [hangCancelled] in
                hangCancelled.open()
            }
            result = "cancelled"
        case "big":
            let bytes = Int(request.params?["bytes"]?.intValue ?? 0)
            guard await connection.reserveReply(bytes: bytes) else { return nil }
            counts.withLock { $0.built += 1 }
            result = .string(String(repeating: "x", count: bytes))
        case "keepalive":
            connection.keepAlive = true
            result = true
        case "whoami":
            let peer = connection.peer
            result = ["pid": .int(Int64(peer.pid)), "uid": .int(Int64(peer.uid)), "gid": .int(Int64(peer.gid))]
        default:
            return request.id.map { Response(id: $0, error: .methodNotFound(request.method)) }
        }
        return request.id.map { Response(id: $0, result: result) }
    }

    static func pushed(_ n: Int) -> ByteBuffer {
        ByteBuffer(bytes: (try? requestLine("pushed", id: nil, params: ["n": .int(Int64(n))])) ?? [])
    }

    func connectionOpened(_ connection: RPCConnection) { counts.withLock { $0.opened += 1 } }
    func connectionClosed(_ connection: RPCConnection) { counts.withLock { $0.closed += 1 } }
}

/// A compact request line, as a client writes it.
func requestLine(_ method: String, id: RequestID?, params: JSONValue? = nil) throws -> [UInt8] {
    var line: [UInt8] = []
    Request(id: id, method: method, params: params).write(to: &line)
    return line + [UInt8(ascii: "\n")]
}

extension JSONValue {
    /// `error.code` of a reply, if it is an error.
    var errorCode: Int64? { self["error"]?["code"]?.intValue }
}
