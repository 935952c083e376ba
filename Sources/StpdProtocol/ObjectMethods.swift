import JSONRPC

/// A kind of object the daemon keeps for its callers, as its `get` and `list` methods show it. One
/// declaration of each method serves every kind: `ObjectGet<SourceListing>` is `source.get`,
/// `ObjectList<PaymentIntentNaming>` is `paymentIntent.list`.
public protocol ListedKind: Sendable {
    /// The params of `get`, one id member (shared with the kind's other methods on one object).
    associatedtype IDParams: ObjectIDParams
    associatedtype View: Codable & Sendable & Identified
    associatedtype Status: Codable & Sendable & Hashable & CaseIterable & RawRepresentable<String>
    /// The prefix of its methods (`source`).
    static var prefix: String { get }
    /// The schema of the id in `get`'s params.
    static var idSchema: JSONSchema { get }
    /// The contract's component of a view (`Source`).
    static var component: String { get }
    /// What a page calls its objects, and the member it lists them under (`sources`).
    static var plural: String { get }
    static var getSummary: String { get }
    static var listSummary: String { get }
    /// What `list`'s `status` narrows to.
    static var statusDescription: String { get }
}

/// Params naming one object by its id, under the member the kind calls it (`id`, `session`, `context`).
public protocol ObjectIDParams: Codable, Sendable {
    static var idMember: String { get }
    var objectID: String { get }
    init(objectID: String)
}

/// `<kind>.get`: one object of the caller's (another uid's answers NotFound).
public enum ObjectGet<K: ListedKind>: RPCMethod {
    public typealias Params = K.IDParams
    public typealias Result = K.View
    public static var name: String { "\(K.prefix).get" }
    public static var summary: String { K.getSummary }
    public static var paramsSchema: JSONSchema {
        .object([K.IDParams.idMember: K.idSchema], required: [K.IDParams.idMember])
    }
    public static var resultSchema: JSONSchema { .ref(K.component) }
    public static var errors: [ErrorDeclaration] { [StpdErrors.notFound] }
}

/// `<kind>.list`: a page of the caller's objects of the kind (root: everyone's), oldest first.
public enum ObjectList<K: ListedKind>: RPCMethod {
    public typealias Params = ListParams<K.Status>
    /// The page, its objects under `K.plural` (`{"sources": [...], "hasMore": false}`).
    public struct Result: ListResult {
        public var items: [K.View]
        public var hasMore: Bool
        public init(items: [K.View], hasMore: Bool) {
            self.items = items
            self.hasMore = hasMore
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: MemberKey.self)
            items = try container.decode([K.View].self, forKey: MemberKey(K.plural))
            hasMore = try container.decode(Bool.self, forKey: MemberKey("hasMore"))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: MemberKey.self)
            try container.encode(items, forKey: MemberKey(K.plural))
            try container.encode(hasMore, forKey: MemberKey("hasMore"))
        }
    }
    public static var name: String { "\(K.prefix).list" }
    public static var summary: String { K.listSummary }
    public static var paramsSchema: JSONSchema { Params.schema(K.plural, statusDescription: K.statusDescription) }
    public static var resultSchema: JSONSchema { .page(K.plural, of: .ref(K.component)) }
    public static var errors: [ErrorDeclaration] { [StpdErrors.notFound] }
}

extension SourceIDParams: ObjectIDParams {
    public static var idMember: String { "id" }
    public var objectID: String { id }
    public init(objectID: String) { self.init(id: objectID) }
}

extension IntentIDParams: ObjectIDParams {
    public static var idMember: String { "id" }
    public var objectID: String { id }
    public init(objectID: String) { self.init(id: objectID) }
}

extension RedirectSessionParams: ObjectIDParams {
    public static var idMember: String { "session" }
    public var objectID: String { session }
    public init(objectID: String) { self.init(session: objectID) }
}

extension SessionParams: ObjectIDParams {
    public static var idMember: String { "session" }
    public var objectID: String { session }
    public init(objectID: String) { self.init(session: objectID) }
}

extension PaymentContextParams: ObjectIDParams {
    public static var idMember: String { "context" }
    public var objectID: String { context }
    public init(objectID: String) { self.init(context: objectID) }
}
