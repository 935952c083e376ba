/// Leases on background work among the daemons sharing a store (a fleet): a piece of work runs
/// only where its lease is held. A lease expires unless its holder renews it, so the work of a
/// daemon that died (`kill -9`) is taken over by another once the lease runs out. Background
/// work plugs into `LeasedWork`, never into leases directly; the app-request broker's askers hold
/// one while they wait (a call's task, not background work), so other daemons can tell they live.
public protocol WorkLeases: Sendable {
    /// Takes the lease `name` unless another daemon holds it unexpired; true when this daemon
    /// holds it now. `lost` runs if it is lost later (not renewed in time, say while the database
    /// was unreachable, or revoked): the work must stop, since another daemon may take it over.
    func acquire(_ name: String, lost: @escaping @Sendable () -> Void) async -> Bool
    /// Gives the lease back (the work ended), so nobody waits for it to expire.
    func release(_ name: String) async
    /// Ends the lease whoever holds it: its holder loses it at its next renewal (the work was
    /// stopped or cancelled on this daemon and must stop wherever it runs).
    func revoke(_ name: String) async
    /// Those of `names` no other daemon holds unexpired (one question for many leases).
    func free(among names: [String]) async -> [String]
    /// The leases this daemon holds, by name.
    var held: [String] { get }
}

/// One daemon alone on its store (SQLite): every lease is granted, none is ever lost.
public struct LocalLeases: WorkLeases {
    public init() {}
    public func acquire(_ name: String, lost: @escaping @Sendable () -> Void) async -> Bool { true }
    public func release(_ name: String) async {}
    public func revoke(_ name: String) async {}
    public func free(among names: [String]) async -> [String] { names }
    public var held: [String] { [] }
}
