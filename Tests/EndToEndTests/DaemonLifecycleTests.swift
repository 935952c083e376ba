import Foundation
import JSONRPC
import RPCTransport
import StpdProtocol
import TestSupport
import Testing

// The real `stpd` binary, started as systemd would start a Type=notify service (readiness via
// NOTIFY_SOCKET) and spoken to over its socket. Every result is held to its declared schema,
// so the contract cannot promise what the daemon does not deliver.

private let validator = SchemaValidator(definitions: StpdAPI.schemas.mapValues(\.json))

/// The result of `response`, after checking it against `method`'s result schema.
private func validatedResult(
    _ response: Response, of method: any RPCMethod.Type, sourceLocation: SourceLocation = #_sourceLocation
) throws -> JSONValue {
    switch response.outcome {
    case .failure(let error):
        Issue.record("\(method.name) failed: \(error)", sourceLocation: sourceLocation)
        throw error
    case .success(let result):
        do throws(SchemaValidator.Failure) {
            try validator.validate(result, against: method.resultSchema)
        } catch {
            Issue.record(
                "\(method.name)'s result breaks its schema: \(error)\n\(result)", sourceLocation: sourceLocation)
        }
        return result
    }
}

@Suite(.timeLimit(.minutes(2)))
struct DaemonLifecycleTests {
    @Test func answersPingStatusAndDiscover() async throws {
        try await withStpd { stpd in
            try await RPCClient.withConnection(to: stpd.socketPath) { client in
                let ping = try validatedResult(try await client.call(Ping.name), of: Ping.self)
                #expect(ping == ["pong": true, "version": .string(StpdAPI.version)])

                let status = try validatedResult(
                    try await client.call(DaemonStatusMethod.name), of: DaemonStatusMethod.self)
                #expect(status["activation"] == "bound")
                #expect(status["pid"]?.intValue == Int64(stpd.process.pid))
                #expect((status["connections"]?.intValue ?? 0) >= 1, "this connection counts")
                #expect(status["socketPath"] == .string(stpd.socketPath))
                #expect(status["stateDirectory"] == .string(stpd.stateDirectory))
                #expect(status["version"] == .string(StpdAPI.version))
                let startedAt = try #require(status["startedAt"]?.stringValue)
                #expect((try? Date(startedAt, strategy: .iso8601)) != nil, "startedAt is RFC 3339: \(startedAt)")

                let discovered = try validatedResult(try await client.call(Discover.name), of: Discover.self)
                // Compared after the same JSON round trip the wire applies (0.0 arrives as 0).
                let contract = try JSONCoding.value(of: Contract.document)
                #expect(discovered == contract)

                // The typed API decodes into the declared result types.
                let typed = try await client.call(DaemonStatusMethod.self, NoParams())
                #expect(typed.pid == stpd.process.pid)
                #expect(typed.activation == .bound)
            }
        }
    }

    @Test func reportsProtocolErrorsWithTheSpecCodes() async throws {
        try await withStpd { stpd in
            try await RPCClient.withConnection(to: stpd.socketPath) { client in
                let unknown = try await client.call("daemon.nope")
                #expect(errorCode(unknown) == -32601)
                let badParams = try await client.call(Ping.name, params: ["verbose": true])
                #expect(errorCode(badParams) == -32602)
                if case .failure(let error) = badParams.outcome { #expect(error.data?["parameter"] == "verbose") }
            }
            let socket = try RawSocket(connectingTo: stpd.socketPath)
            try await socket.send("{not json\n")
            #expect(try await socket.readJSONLine()["error"]?["code"] == -32700)
        }
    }

    /// SIGTERM: systemd hears STOPPING=1, the process exits 0 and removes its socket.
    @Test func stopsCleanlyOnSIGTERM() async throws {
        try await withStpd { stpd in
            #expect(fileExists(stpd.socketPath))
            let exit = await stpd.terminate()
            #expect(exit == .exited(0), "stpd \(exit); output:\n\(stpd.process.output)")
            try await stpd.notify.waitFor("STOPPING=1")
            #expect(!fileExists(stpd.socketPath), "the socket file is removed on exit")
            #expect(stpd.notify.messages.contains { $0.split(separator: "\n").contains("READY=1") })
        }
    }

    /// A second daemon on the same path must not take the socket from a running one.
    @Test func refusesToDisplaceARunningDaemon() async throws {
        try await withStpd { stpd in
            let second = try ChildProcess(
                executable: try builtExecutable("stpd"),
                arguments: ["--socket", stpd.socketPath, "--state-dir", stpd.directory.appending("state2")],
                environment: ["PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": stpd.directory.appending("config")],
                outputPath: stpd.directory.appending("second.log"))
            let exit = await second.waitForExit()
            #expect(exit != .exited(0), "the second daemon must fail: \(second.output)")
            #expect(second.output.contains("already serving"), "\(second.output)")
            // The first one is untouched.
            try await RPCClient.withConnection(to: stpd.socketPath) { client in
                _ = try validatedResult(try await client.call(Ping.name), of: Ping.self)
            }
        }
    }
}

private func errorCode(_ response: Response) -> Int? {
    if case .failure(let error) = response.outcome { return error.code }
    return nil
}
