import Foundation
import JSONRPC
import Logging
import ServiceLifecycle
import StpdProtocol
import StripeAPI
import StripeHTTP

/// The daemon's Stripe API client, built from the configuration, and the HTTP client under it.
///
/// Wiring (Daemon.run): make one with `StripeSetup(configuration:logger:)` after the logger exists
/// (it logs the key's source and the configuration's warnings), hand `client`/`client(requiring:)`
/// to the handlers, and add it to the ServiceGroup *before* the RPC server:
/// `services.insert(.init(service: stripe), at: 0)`. Shutdown runs in reverse order, so the HTTP
/// client closes only after the server has drained in-flight requests. When the group never runs,
/// call `shutdown()` instead (AsyncHTTPClient traps in debug builds on a client dropped unclosed).
public struct StripeSetup: Service {
    /// The API version stpd speaks (the SDK's since v20.1.0); the models are written for its shapes.
    public static let apiVersion = StripeConfiguration.sdkAPIVersion

    /// Nil when no key is configured; then every Stripe call answers StripeNotConfigured.
    public let client: StripeClient?
    public var key: StripeKey? { client?.configuration.key }
    /// HTTP for Stripe and for merchant backends (which need no Stripe key); made on first use.
    public let transport: LazyHTTPTransport

    public init(
        configuration: DaemonConfiguration, logger: Logger, retryPolicy: RetryPolicy = .init(),
        osVersion: String? = ProcessInfo.processInfo.operatingSystemVersionString, metrics: StpdMetrics? = nil
    ) {
        transport = LazyHTTPTransport(requestTimeout: configuration.stripeTimeout)
        for warning in configuration.warnings { logger.warning("\(warning)") }
        guard let stripe = Self.stripeConfiguration(configuration, osVersion: osVersion) else {
            logger.notice("no Stripe key configured: Stripe methods answer StripeNotConfigured (3009)")
            client = nil
            return
        }
        var client = StripeClient(configuration: stripe, transport: transport, retryPolicy: retryPolicy)
        client.observer = StripeCallLog.observer(logger: logger, metrics: metrics)
        self.client = client
        var metadata: Logger.Metadata = [
            "key": "\(stripe.key)", "api_base": "\(stripe.baseURL)", "api_version": "\(stripe.apiVersion)",
        ]
        if let source = configuration.stripeKeySource { metadata["key_source"] = "\(source)" }
        if let account = stripe.stripeAccount { metadata["stripe_account"] = "\(account)" }
        logger.info("Stripe API client ready", metadata: metadata)
    }

    /// What every request shares, from the configuration; nil without a key.
    public static func stripeConfiguration(
        _ configuration: DaemonConfiguration, osVersion: String? = nil
    ) -> StripeConfiguration? {
        guard let key = configuration.stripeKey else { return nil }
        return StripeConfiguration(
            key: key, baseURL: configuration.stripeAPIBase, stripeAccount: configuration.stripeAccount,
            apiVersion: apiVersion,
            userAgent: StripeUserAgent(bindingsVersion: StpdAPI.version, osVersion: osVersion),
            timeout: configuration.stripeTimeout)
    }

    /// The client, when the daemon's key is one of `kinds`; else StripeNotConfigured (3009) saying
    /// which kinds would do. Calls made with an ephemeral key pass `[.publishable, .secret, .restricted]`.
    public func client(requiring kinds: Set<StripeKey.Kind>) throws(RPCError) -> StripeClient {
        let required = StripeKey.Kind.allCases.filter(kinds.contains)
        guard let client else { throw StpdErrors.notConfigured(keyKind: nil, required: required) }
        guard kinds.contains(client.configuration.key.kind) else {
            throw StpdErrors.notConfigured(keyKind: client.configuration.key.kind, required: required)
        }
        return client
    }

    /// Waits for graceful shutdown (or cancellation), then closes the HTTP client.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes the HTTP client; idempotent, and a no-op if nothing was sent.
    public func shutdown() async throws {
        try await transport.shutdown()
    }
}
