import JSONRPC

/// Where each of the daemon's objects stands. The views carry these, the contract's schemas list
/// their cases, and the domain switches on them: a misspelled status does not compile.
public enum CustomerSessionStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case open, closed
}

public enum PaymentContextStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case open, closed
}

/// The SDK's redirect context states.
public enum RedirectStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case notStarted, inProgress, completed, cancelled
}

/// A Source poll: `paused` while the app is in the background, `finished` reported once,
/// `stopped` never reports.
public enum PollStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case polling, paused, finished, stopped
}

extension JSONSchema {
    /// A string schema listing a status enum's cases.
    static func cases<T: CaseIterable & RawRepresentable<String>>(of _: T.Type, _ description: String) -> JSONSchema {
        .enumeration(T.allCases.map(\.rawValue), description)
    }
}
