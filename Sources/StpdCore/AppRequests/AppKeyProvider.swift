import JSONRPC

/// The ephemeral key provider whose kind is "the app itself": asks the app (operation
/// `createEphemeralKey`, params `{apiVersion}`) and returns what it answers, which should be the
/// JSON of the key its backend created with that API version, unmodified. Whether it is a usable
/// key is `EphemeralKeyManager`'s to judge.
public struct AppKeyProvider: EphemeralKeyProvider {
    public static let operation = "createEphemeralKey"

    private let broker: AppRequestBroker
    public let ownerUID: UInt32
    public let session: String
    public let timeout: Duration

    public init(
        broker: AppRequestBroker, ownerUID: UInt32, session: String,
        timeout: Duration = AppCustomerBackend.defaultTimeout
    ) {
        self.broker = broker
        self.ownerUID = ownerUID
        self.session = session
        self.timeout = timeout
    }

    public func createCustomerKey(apiVersion: String) async throws -> JSONValue {
        try await broker.ask(
            owner: ownerUID, session: session, operation: Self.operation, params: ["apiVersion": .string(apiVersion)],
            timeout: timeout)
    }
}
