import Foundation
import Logging
import PostgresNIO
import StpdCore
import Synchronization

/// Leases in the fleet's database (`lease`: name, holder, expiry). Expiry is the database
/// server's clock (`now()`), so the hosts' clocks never have to agree. The holder renews all its
/// leases every third of `duration`; a lease it fails to renew before it expires (the database
/// was unreachable) counts as lost, and its work is stopped before another daemon may take it.
public final class PostgresLeases: WorkLeases {
    let store: PostgresStateStore
    /// This process: the instance name and a token, so a restarted daemon does not mistake the
    /// leases of its previous life (whose work is gone) for live ones of its own.
    public let holder: String
    public let duration: Duration
    private let logger: Logger
    private let leases = Mutex<[String: @Sendable () -> Void]>([:])

    public init(
        store: PostgresStateStore, instance: String, duration: Duration, logger: Logger = Logger(label: "stpd.leases")
    ) {
        self.store = store
        holder = "\(instance)/\(UUID().uuidString.prefix(8).lowercased())"
        self.duration = duration
        self.logger = logger
    }

    private var seconds: Double { duration.seconds }

    public func acquire(_ name: String, lost: @escaping @Sendable () -> Void) async -> Bool {
        let taken = try? await store.query(
            """
            INSERT INTO lease (name, holder, expires_at) VALUES (\(name), \(holder), now() + make_interval(secs => \(seconds)))
            ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
            WHERE lease.expires_at < now() OR lease.holder = excluded.holder RETURNING 1
            """
        ).count
        guard taken == 1 else { return false }
        leases.withLock { $0[name] = lost }
        return true
    }

    public func release(_ name: String) async {
        leases.withLock { $0[name] = nil }
        _ = try? await store.query("DELETE FROM lease WHERE name = \(name) AND holder = \(holder)")
    }

    public var held: [String] { leases.withLock { $0.keys.sorted() } }

    /// Renews the leases until cancelled; on shutdown gives them back, so the others take the
    /// work over at once rather than after the lease.
    public func run() async {
        var lastRenewed = ContinuousClock.now
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: duration / 3)
            } catch { break }
            let before = leases.withLock { Set($0.keys) }
            do {
                let renewed = try await store.query(
                    """
                    UPDATE lease SET expires_at = now() + make_interval(secs => \(seconds))
                    WHERE holder = \(holder) RETURNING name
                    """
                ).map { try $0.decode(String.self) }
                lastRenewed = .now
                drop(before.subtracting(renewed))
            } catch {
                logger.warning("renewing the fleet's leases failed", metadata: ["error": "\(error)"])
                if ContinuousClock.now - lastRenewed >= duration { drop(leases.withLock { Set($0.keys) }) }
            }
        }
        for name in held { await release(name) }
    }

    /// Stops the work of leases no longer held (outside the lock: `lost` stops a poller).
    private func drop(_ names: Set<String>) {
        guard !names.isEmpty else { return }
        let lost = leases.withLock { leases in names.compactMap { leases.removeValue(forKey: $0) } }
        logger.warning("lost fleet leases; their work stops here", metadata: ["leases": "\(names.sorted())"])
        for stop in lost { stop() }
    }
}
