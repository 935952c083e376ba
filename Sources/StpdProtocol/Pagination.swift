import JSONRPC

/// Lists page the Stripe way: `limit` (default 100, at most 1,000), `startingAfter` (the last id
/// of the previous page), and `hasMore` in the result; `status` narrows to one status.
public struct ListParams<Status: Codable & Sendable & Hashable & CaseIterable & RawRepresentable<String>>: Codable,
    Sendable, Hashable
{
    public var limit: Int?
    public var startingAfter: String?
    public var status: Status?

    public init(limit: Int? = nil, startingAfter: String? = nil, status: Status? = nil) {
        self.limit = limit
        self.startingAfter = startingAfter
        self.status = status
    }

    public static var defaultLimit: Int { 100 }
    public static var maximumLimit: Int { 1000 }

    /// The page size asked for, or the default.
    public var pageSize: Int { limit ?? Self.defaultLimit }

    static func schema(_ objects: String, statusDescription: String) -> JSONSchema {
        .object([
            "limit": .integer(
                "How many \(objects) to return (default \(defaultLimit))", minimum: 1, maximum: Int64(maximumLimit)),
            "startingAfter": .string("The last id of the previous page: this page starts after it"),
            "status": .enumeration(Status.allCases.map(\.rawValue), statusDescription),
        ])
    }
}

/// Stripe's statuses of a Source, for `source.list`.
public enum SourceStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case pending, chargeable, consumed, canceled, failed
}

extension JSONSchema {
    /// A page of `items` under `member`, with `hasMore`.
    static func page(_ member: String, of items: JSONSchema) -> JSONSchema {
        .object(
            [member: .array(of: items), "hasMore": .boolean("Whether more follow: ask again with startingAfter")],
            required: [member, "hasMore"])
    }
}

/// A page of a list method's result, whatever its member is called.
public protocol ListResult: Codable, Sendable {
    associatedtype Item: Codable & Sendable
    var items: [Item] { get }
    var hasMore: Bool { get }
    init(items: [Item], hasMore: Bool)
}

/// The id a page's item is continued after.
public protocol Identified { var id: String { get } }
extension CustomerSessionView: Identified {}
extension SourceView: Identified {}
extension RedirectSessionView: Identified {}
extension PaymentContextView: Identified {}
