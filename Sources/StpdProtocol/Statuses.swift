import JSONRPC
// The states the domain stores and the contract shows (StpdValues) are part of the contract:
// every user of StpdProtocol sees them.
@_exported import StpdValues

extension JSONSchema {
    /// A string schema listing a status enum's cases.
    static func cases<T: CaseIterable & RawRepresentable<String>>(of _: T.Type, _ description: String) -> JSONSchema {
        .enumeration(T.allCases.map(\.rawValue), description)
    }
}

/// The app's completion of a pending action: a payment status for didCreatePaymentResult,
/// valid or invalid for didUpdateShippingAddress.
public enum PendingActionAnswer: String, Codable, Sendable, Hashable, CaseIterable {
    case success, error, userCancellation, valid, invalid

    /// The answers a pending action of `kind` takes.
    public static func allowed(for kind: PendingActionKind) -> [PendingActionAnswer] {
        kind == .didCreatePaymentResult ? [.success, .error, .userCancellation] : [.valid, .invalid]
    }
}
