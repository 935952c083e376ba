import Foundation
import JSONRPC
import Logging
import ServiceLifecycle
import StpdProtocol
import StripeAPI
import TestSupport
import Testing

@testable import StpdDaemon

/// The client built from the configuration: what it sends, what it answers without a key, and that
/// its HTTP client shuts down.
@Suite struct StripeSetupTests {
    let logger = Logger(label: "test")
    let key = StripeKey("sk_test_51HbQxLKj2s9dFh3kPzR7yT0vWq")!

    func configuration(base: String = "https://api.stripe.com", key: StripeKey? = nil) -> DaemonConfiguration {
        var c = DaemonConfiguration(stateDirectory: "/nonexistent")
        c.stripeAPIBase = base
        c.stripeKey = key
        c.stripeAccount = "acct_1032D82eZvKYlo2C"
        c.stripeTimeout = .seconds(7)
        return c
    }

    @Test func stripeConfigurationFollowsTheSettings() throws {
        let stripe = try #require(StripeSetup.stripeConfiguration(configuration(key: key), osVersion: "Linux test"))
        #expect(stripe.baseURL == "https://api.stripe.com")
        #expect(stripe.key == key)
        #expect(stripe.stripeAccount == "acct_1032D82eZvKYlo2C")
        #expect(stripe.apiVersion == "2020-08-27")
        #expect(stripe.timeout == .seconds(7))
        #expect(stripe.userAgent.bindingsVersion == StpdAPI.version)
        #expect(stripe.userAgent.headerValue.contains(#""publisher":"stpd""#))
        #expect(stripe.userAgent.osVersion == "Linux test")
        #expect(StripeSetup.stripeConfiguration(configuration()) == nil, "no key, no configuration")
    }

    @Test func withoutAKeyEveryCallAnswersNotConfigured() async throws {
        let setup = StripeSetup(configuration: configuration(), logger: logger)
        #expect(setup.client == nil)
        #expect(setup.key == nil)
        do {
            _ = try setup.client(requiring: [.publishable, .secret, .restricted])
            Issue.record("expected StripeNotConfigured")
        } catch {
            #expect(error.code == 3009)
            #expect(error.data?["key_kind"] == .null)
        }
        try await setup.shutdown()  // a no-op without a client
    }

    @Test func aKeyOfTheWrongKindAnswersNotConfigured() async throws {
        let publishable = StripeKey("pk_test_51HbQxLKj2s9dFh3kPzR7yT0vWq")!
        let setup = StripeSetup(configuration: configuration(key: publishable), logger: logger)
        #expect(setup.key == publishable)
        #expect(try setup.client(requiring: [.publishable]).configuration.key == publishable)
        do {
            _ = try setup.client(requiring: [.secret, .restricted])
            Issue.record("expected StripeNotConfigured")
        } catch {
            #expect(error.code == 3009)
            #expect(error.data?["key_kind"] == "publishable")
            #expect(error.data?["required"] == ["secret", "restricted"])
        }
        try await setup.shutdown()
        try await setup.shutdown()  // idempotent
    }

    @Test func runClosesTheHTTPClientOnGracefulShutdown() async throws {
        var policy = RetryPolicy()
        policy.maxTransientRetries = 0
        let setup = StripeSetup(configuration: configuration(key: key), logger: logger, retryPolicy: policy)
        let group = ServiceGroup(configuration: .init(services: [.init(service: setup)], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await Task.sleep(for: .milliseconds(50))
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        // After shutdown the transport refuses work instead of sending it.
        await #expect(throws: (any Error).self) {
            _ = try await setup.client!.send(StripeRequest(.get, "/v1/customers"))
        }
    }

    @Test func sendsTheConfiguredHeadersAndMapsStripesErrorToItsCode() async throws {
        let server = try OneShotHTTPServer(
            status: "402 Payment Required",
            body:
                #"{"error":{"type":"card_error","code":"card_declined","decline_code":"do_not_honor","message":"Your card was declined.","param":""}}"#,
            headers: ["Request-Id: req_abc"])
        let setup = StripeSetup(
            configuration: configuration(base: "http://127.0.0.1:\(server.port)", key: key), logger: logger)
        do {
            _ = try await setup.client!.send(StripeRequest(.get, "/v1/customers/cus_1"))
            Issue.record("expected a card error")
        } catch let error as StripeError {
            #expect(error.kind == .card)
            let rpc = error.rpcError
            #expect(rpc.code == 3001)
            #expect(rpc.data?["decline_code"] == "do_not_honor")
            #expect(rpc.data?["request_id"] == "req_abc")
            #expect(rpc.data?["http_status"] == .int(402))
        }
        try await setup.shutdown()
        let request = try #require(await server.request())
        let lines = request.components(separatedBy: "\r\n")
        #expect(lines.first == "GET /v1/customers/cus_1 HTTP/1.1")
        func header(_ name: String) -> String? {
            lines.first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
                .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
        }
        #expect(header("Authorization") == "Bearer \(key.secret)")
        #expect(header("Stripe-Account") == "acct_1032D82eZvKYlo2C")
        #expect(header("Stripe-Version") == "2020-08-27")
        #expect(header("X-Stripe-User-Agent")?.contains(#""bindings_version":"\#(StpdAPI.version)""#) == true)
    }

    @Test func noResponseIsStripeConnection() async throws {
        let port = try OneShotHTTPServer.closedPort()
        var policy = RetryPolicy()
        policy.maxTransientRetries = 0
        let setup = StripeSetup(
            configuration: configuration(base: "http://127.0.0.1:\(port)", key: key), logger: logger,
            retryPolicy: policy)
        do {
            _ = try await setup.client!.send(StripeRequest(.get, "/v1/customers"))
            Issue.record("expected a connection error")
        } catch let error as StripeError {
            #expect(error.kind == .connection)
            #expect(error.rpcError.code == 3006)
            #expect(!error.rpcError.message.contains(key.secret))
        }
        try await setup.shutdown()
    }
}

/// Accepts one connection on 127.0.0.1, records the request head, answers with a canned response.
final class OneShotHTTPServer: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let done = DispatchSemaphore(value: 0)
    private var received: String?

    init(status: String, body: String, headers: [String] = []) throws {
        (fd, port) = try Self.listen()
        let response =
            ([
                "HTTP/1.1 \(status)", "Content-Type: application/json", "Content-Length: \(body.utf8.count)",
                "Connection: close",
            ]
            + headers).joined(separator: "\r\n") + "\r\n\r\n" + body
        let fd = fd
        Thread.detachNewThread { [self] in
            defer {
                close(fd)
                done.signal()
            }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            var head = Data()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !head.contains("\r\n\r\n".data(using: .utf8)!) {
                let n = read(client, &buffer, buffer.count)
                if n <= 0 { break }
                head.append(contentsOf: buffer[0..<n])
            }
            received = String(decoding: head, as: UTF8.self)
            _ = response.utf8CString.withUnsafeBufferPointer { write(client, $0.baseAddress, $0.count - 1) }
        }
    }

    /// The request head, once the exchange is over.
    func request() async throws -> String? {
        try await blocking { [self] in
            done.wait()
            return received
        }
    }

    /// A port nothing listens on: bound, then closed.
    static func closedPort() throws -> Int {
        let (fd, port) = try listen()
        close(fd)
        return port
    }

    private static func listen() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 1) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
