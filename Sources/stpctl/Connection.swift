import JSONRPC
import RPCTransport
import StpctlKit

/// One connection to the daemon for the length of a command, bounded by `--timeout`.
struct Connection: Sendable {
    let socketPath: String
    let timeoutSeconds: Double

    /// Connects, runs `body`, disconnects. Typed calls (`client.call(Ping.self, NoParams())`)
    /// throw the daemon's error replies as `RPCError`, which `main` reports with status 1.
    func run<R: Sendable>(_ body: @escaping @Sendable (RPCClient) async throws -> R) async throws -> R {
        let path = socketPath
        let seconds = timeoutSeconds
        return try await withTimeout(
            seconds: seconds, onTimeout: { StpctlFailure.timeout(seconds: seconds, socket: path) }
        ) {
            try await RPCClient.withConnection(to: path) { client in try await body(client) }
        }
    }

    /// Calls a method by name; an error reply is thrown like a typed call's.
    func call(_ method: String, params: JSONValue?) async throws -> JSONValue {
        let response = try await run { client in try await client.call(method, params: params) }
        return try response.outcome.get()
    }
}
