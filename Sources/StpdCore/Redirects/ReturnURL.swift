import Foundation

/// A redirect return URL as the Stripe SDK compares it (spec §2.2, `stp_matchesURLComponents`):
/// scheme and host case-insensitive, path exact (percent-decoded, so `/a%2Fb` equals `/a/b`),
/// query items by name and value. Fragment, port, user and password are ignored.
public struct ReturnURL: Sendable, Hashable {
    /// One query item as parsed; `value` is nil for a bare `?flag` (but "" for `?flag=`).
    public struct QueryItem: Sendable, Hashable {
        public let name: String
        public let value: String?
        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    public let scheme: String?
    public let host: String?
    public let path: String
    /// The items as parsed, in order. As a *registered* URL, every one of them must hold.
    public let queryItems: [QueryItem]
    /// The items folded as the SDK folds an *incoming* URL: a later duplicate wins, and a
    /// valueless item erases its name (the SDK assigns nil into a `[String: String]`), so a
    /// bare `?flag` and an absent `flag` are the same thing here.
    public let queryValues: [String: String]
    /// Lowercased once, since every comparison and every index bucket needs them.
    let schemeKey: String?
    let hostKey: String?

    /// nil when URLComponents cannot parse `text` (the SDK then registers/handles nothing).
    public init?(_ text: String) {
        guard let components = URLComponents(string: text) else { return nil }
        scheme = components.scheme
        host = components.host
        path = components.path
        queryItems = (components.queryItems ?? []).map { QueryItem(name: $0.name, value: $0.value) }
        var folded: [String: String] = [:]
        for item in queryItems { folded[item.name] = item.value }
        queryValues = folded
        schemeKey = scheme?.lowercased()
        hostKey = host?.lowercased()
    }

    /// The SDK's rule with `self` the registered URL and `incoming` the received one.
    /// Swift semantics: nil == nil is equal, so two URLs without scheme/host match, and a
    /// registered `?flag` (value nil) is satisfied when `incoming` has no value for `flag` —
    /// a bare `flag` or no `flag` at all — but not by `flag=` or `flag=1`.
    public func matches(_ incoming: ReturnURL) -> Bool {
        schemeKey == incoming.schemeKey && hostKey == incoming.hostKey && path == incoming.path
            && queryItems.allSatisfy { incoming.queryValues[$0.name] == $0.value }
    }
}

/// Where a registered return URL is filed in the store, so matching an incoming URL reads only
/// the sessions that could match. A URL must share scheme, host and path (its bucket) with a
/// session's to match, and every valued query item of the session's must be in it; so a session
/// is filed under its bucket and one of its valued items (or the bucket alone when it has none),
/// and an incoming URL looks under its bucket alone and under each of its items.
extension ReturnURL {
    /// The keys a session with this URL may be filed under: one per valued item, or the bucket's.
    public var filingKeys: [String] {
        let valued = queryItems.compactMap { item in item.value.map { (item.name, $0) } }
        return valued.isEmpty ? [bucketKey] : valued.map { itemKey($0.0, $0.1) }
    }

    /// Every key a session matching this incoming URL can be filed under.
    public var candidateKeys: [String] { [bucketKey] + queryValues.map { itemKey($0.key, $0.value) } }

    private var bucketKey: String { LookupKey.make("rurl", Self.part(schemeKey), Self.part(hostKey), path) }

    private func itemKey(_ name: String, _ value: String) -> String {
        LookupKey.make("rurl", Self.part(schemeKey), Self.part(hostKey), path, name, value)
    }

    /// Absent and empty differ (as nil and "" do in the SDK's comparison).
    private static func part(_ value: String?) -> String { value.map { "=" + $0 } ?? "" }
}
