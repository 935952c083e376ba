import ArgumentParser
import Foundation
import Logging
import StripeTestServer

/// `stripe-test-server --port N`: prints `listening on http://127.0.0.1:PORT` on stdout when ready.
@main
struct StripeTestServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stripe-test-server",
        abstract:
            "An in-memory Stripe API test server (keys, customers, payment methods, sources, payment/setup intents, faults)."
    )

    @Option(help: "Port on 127.0.0.1 (0 = ephemeral).") var port: Int = 0
    @Option(help: "Address to bind.") var host: String = "127.0.0.1"
    @Option(name: .customLong("secret-key"), help: "The secret key (sk_test_...).") var secretKey: String?
    @Option(name: .customLong("publishable-key"), help: "The publishable key (pk_test_...).") var publishableKey:
        String?
    @Option(name: .customLong("ephemeral-key-lifetime"), help: "Seconds an ephemeral key lives.")
    var ephemeralKeyLifetime: Int = 3600

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var configuration = StripeTestServerConfiguration(
            host: host, port: port, ephemeralKeyLifetime: ephemeralKeyLifetime)
        if let secretKey { configuration.secretKey = secretKey }
        if let publishableKey { configuration.publishableKey = publishableKey }
        let server = StripeTestServer(configuration: configuration)
        let host = self.host
        try await server.run(signals: true) { port in
            FileHandle.standardOutput.write(Data("listening on http://\(host):\(port)\n".utf8))
        }
    }
}
