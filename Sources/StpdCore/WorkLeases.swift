/// Background work that must run exactly once among the daemons sharing a store (a fleet) runs
/// only where its lease is held. A lease expires unless its holder renews it, so the work of a
/// daemon that died (`kill -9`) is taken over by another once the lease runs out.
public protocol WorkLeases: Sendable {
    /// Takes the lease `name` unless another daemon holds it unexpired; true when this daemon
    /// holds it now. `lost` runs if it is lost later (not renewed in time, say while the database
    /// was unreachable): the work must stop, since another daemon may take it over.
    func acquire(_ name: String, lost: @escaping @Sendable () -> Void) async -> Bool
    /// Gives the lease back (the work ended), so nobody waits for it to expire.
    func release(_ name: String) async
    /// The leases this daemon holds, by name.
    var held: [String] { get }
}

/// One daemon alone on its store (SQLite): every lease is granted, none is ever lost.
public struct LocalLeases: WorkLeases {
    public init() {}
    public func acquire(_ name: String, lost: @escaping @Sendable () -> Void) async -> Bool { true }
    public func release(_ name: String) async {}
    public var held: [String] { [] }
}
