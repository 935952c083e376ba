import Foundation
import Logging
import PostgresNIO
import StpdCore
import Synchronization

/// Leases in the fleet's database (`lease`: name, holder, its instance, expiry). Expiry is the
/// database server's clock (`now()`), so the hosts' clocks never have to agree.
///
/// - The holder renews the leases it holds every third of `duration`. One it could not renew
///   for two thirds of `duration` (the database was unreachable) counts as lost: its work is
///   stopped before the lease can expire and another daemon take it. A lease renewal finds
///   gone (revoked by another daemon: the work was stopped or cancelled there) is lost too.
/// - A daemon's name is a lease too (`instance:<name>`), taken at start: a second live daemon
///   claiming it is refused (`InstanceNameInUse`), while one restarted after a crash waits at
///   most one lease for its predecessor's claim to expire.
/// - On shutdown the holder gives every lease back at once, so the others take the work over
///   without waiting for the leases to expire.
public final class PostgresLeases: WorkLeases {
    let store: PostgresStateStore
    public let instance: String
    /// This process: the instance name and a token, so a restarted daemon does not mistake the
    /// leases of its previous life (whose work is gone) for live ones of its own.
    public let holder: String
    public let duration: Duration
    private let logger: Logger
    private let leases = Mutex<[String: @Sendable () -> Void]>([:])
    /// Whether the name was claimed, and whether another daemon taking it meanwhile was reported.
    private let naming = Mutex((claimed: false, takenReported: false))

    public init(
        store: PostgresStateStore, instance: String, duration: Duration, logger: Logger = Logger(label: "stpd.leases")
    ) {
        self.store = store
        self.instance = instance
        holder = "\(instance)/\(UUID().uuidString.prefix(8).lowercased())"
        self.duration = duration
        self.logger = logger
    }

    private var seconds: Double { duration.seconds }
    private var claim: String { "instance:\(instance)" }

    public func acquire(_ name: String, lost: @escaping @Sendable () -> Void) async -> Bool {
        guard (try? await take(name)) == true else { return false }
        leases.withLock { $0[name] = lost }
        return true
    }

    /// Takes the lease unless another holder's is unexpired; throws when the database fails.
    /// `gated`: false for the name's claim, made before the store opens.
    private func take(_ name: String, gated: Bool = true) async throws -> Bool {
        try await store.query(
            """
            INSERT INTO lease (name, holder, instance, expires_at)
            VALUES (\(name), \(holder), \(instance), now() + make_interval(secs => \(seconds)))
            ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, instance = excluded.instance,
            expires_at = excluded.expires_at WHERE lease.expires_at < now() OR lease.holder = excluded.holder
            RETURNING 1
            """, "taking a lease", gated: gated
        ).count == 1
    }

    public func release(_ name: String) async {
        leases.withLock { $0[name] = nil }
        await bestEffort("giving a lease back", "DELETE FROM lease WHERE name = \(name) AND holder = \(holder)")
    }

    public func revoke(_ name: String) async {
        await bestEffort("revoking a lease", "DELETE FROM lease WHERE name = \(name)")
    }

    /// Giving back and revoking are worth a try, never a wait: with the database known down they
    /// are skipped (the lease expires by itself), and they get a second at most, so a daemon
    /// stopping on a dead database is not held up by them.
    private func bestEffort(_ operation: String, _ query: PostgresQuery) async {
        guard store.health.snapshot.up != false else { return }
        _ = try? await store.query(query, operation, bound: .seconds(1))
    }

    public func free(among names: [String]) async -> [String] {
        guard !names.isEmpty else { return [] }
        let rows = try? await store.query(
            """
            SELECT n FROM unnest(\(names)::text[]) AS n WHERE NOT EXISTS (
            SELECT 1 FROM lease WHERE name = n AND holder <> \(holder) AND expires_at >= now())
            """, "looking for free leases")
        return (try? rows?.map { try $0.decode(String.self) }) ?? []
    }

    public var held: [String] { leases.withLock { $0.keys.filter { $0 != claim }.sorted() } }

    /// Live instances of the fleet (those whose name claim is unexpired, and any holding work)
    /// with how many leases of work each holds.
    public func census() async throws -> [String: Int] {
        try await store.query(
            """
            SELECT instance, count(*) FILTER (WHERE name NOT LIKE 'instance:%') FROM lease
            WHERE expires_at >= now() GROUP BY instance
            """, "counting leases"
        ).reduce(into: [:]) { counts, row in
            let (instance, count) = try row.decode((String, Int).self)
            counts[instance] = count
        }
    }

    /// Claims this daemon's name (see the type's comment). Throws `InstanceNameInUse` when
    /// another live daemon holds it, StoreUnavailable when the database cannot be reached.
    public func claimInstance() async throws {
        let deadline = ContinuousClock.now + duration
        while try await !take(claim, gated: false) {
            guard ContinuousClock.now < deadline else {
                let other = try await store.query(
                    "SELECT holder FROM lease WHERE name = \(claim)", "claiming the name", gated: false
                ).first.map { try $0.decode(String.self) }
                throw InstanceNameInUse(instance: instance, holder: other ?? "?")
            }
            try await Task.sleep(for: duration / 4)
        }
        leases.withLock { $0[claim] = {} }
        naming.withLock { $0.claimed = true }
    }

    /// Renews the leases until cancelled (see the type's comment), then gives them all back.
    public func run() async {
        var renewedAt = ContinuousClock.now
        while !Task.isCancelled {
            do { try await Task.sleep(for: duration / 3) } catch { break }
            let names = leases.withLock { Set($0.keys) }
            let sent = ContinuousClock.now
            do {
                let renewed = try await store.query(
                    """
                    UPDATE lease SET expires_at = now() + make_interval(secs => \(seconds))
                    WHERE holder = \(holder) AND name = ANY(\(Array(names))::text[]) RETURNING name
                    """, "renewing leases", bound: duration / 3
                ).map { try $0.decode(String.self) }
                renewedAt = sent
                drop(names.subtracting(renewed))
                if naming.withLock({ $0.claimed }), !renewed.contains(claim) { await reclaim() }
            } catch {
                if ContinuousClock.now - renewedAt >= duration * 2 / 3 { drop(leases.withLock { Set($0.keys) }) }
            }
        }
        await bestEffort("giving leases back", "DELETE FROM lease WHERE holder = \(holder)")
    }

    /// The name claim was lost (the database was away longer than a lease): take it again, or
    /// say that another daemon took the name meanwhile.
    private func reclaim() async {
        guard (try? await take(claim)) == true else {
            if naming.withLock({ s in
                defer { s.takenReported = true }
                return !s.takenReported
            }) {
                logger.error(
                    """
                    another live instance took this instance's name while the database was away; \
                    set STPD_INSTANCE to tell them apart
                    """, metadata: ["instance": "\(instance)"])
            }
            return
        }
        leases.withLock { $0[claim] = {} }
        naming.withLock { $0.takenReported = false }
    }

    /// Stops the work of leases no longer held (outside the lock: `lost` stops a poller).
    private func drop(_ names: Set<String>) {
        guard !names.isEmpty else { return }
        let lost = leases.withLock { leases in names.compactMap { leases.removeValue(forKey: $0) } }
        logger.warning("lost fleet leases; their work stops here", metadata: ["leases": "\(names.sorted())"])
        for stop in lost { stop() }
    }
}

/// Another live daemon of the fleet has this daemon's name.
public struct InstanceNameInUse: Error, CustomStringConvertible {
    public var instance: String
    public var holder: String
    public var description: String {
        "another live stpd of the fleet is named \(instance) (\(holder)): give each instance its own STPD_INSTANCE"
    }
}
