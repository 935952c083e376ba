import Logging
import ServiceLifecycle
import StpdCore
import StpdPostgres
import StpdProtocol
import Synchronization

/// A fleet daemon's life on its database, as a service of the group.
///
/// 1. **Start.** Until the database answers (it may be down when the daemon starts), it retries
///    every second while the server answers every call that needs the database with 1010; systemd
///    hears why in STATUS= and gets its start timeout extended. Then: migrate, claim the instance
///    name (a second live daemon with it is refused: the daemon stops with an error), start the
///    log where the table ends, open the store to calls, resume the work (`Daemon.resume`). Only
///    then is the daemon ready (READY=1, with the server listening).
/// 2. **Run.** Follow the shared event log, renew the leases, and adopt the work of daemons that
///    died, every half lease. Each of these retries by itself when the database goes away and
///    resumes when it returns, with no restart.
struct FleetService: Service {
    let fleet: Fleet
    let log: EventLog
    let parts: Daemon.Parts
    let readiness: Readiness
    let logger: Logger

    func run() async throws {
        try await cancelWhenGracefulShutdown {
            // Stopped before the database was ever reached: nothing to wind down.
            guard try await start() else { return }
            readiness.storeIsReady()
            await withDiscardingTaskGroup { group in
                group.addTask { await PostgresEventFollower(store: fleet.store, log: log).run() }
                group.addTask { await fleet.leases.run() }
                group.addTask { await adopt() }
            }
        }
    }

    /// False when shutdown began first.
    private func start() async throws -> Bool {
        var waitingFor: String?
        while !Task.isCancelled {
            do {
                let latest = try await fleet.store.migrate()
                try await fleet.leases.claimInstance()
                log.start(after: latest)
                fleet.store.open()
                try await Daemon.resume(parts, logger: logger)
                logger.notice(
                    "joined the fleet",
                    metadata: ["instance": "\(fleet.instance)", "database": "\(fleet.store.location)"])
                return true
            } catch let error as InstanceNameInUse {
                throw error
            } catch {
                if Task.isCancelled { return false }
                let reason = "\(error)"
                if reason != waitingFor {
                    logger.warning("waiting for the database; calls that need it answer 1010 meanwhile: \(reason)")
                    waitingFor = reason
                }
                // Not ready yet, and not failed: systemd waits (its start timeout extended) and says why.
                Systemd.notify("EXTEND_TIMEOUT_USEC=10000000\nSTATUS=Waiting for the database: \(reason)")
                try? await Task.sleep(for: .seconds(1))
            }
        }
        return false
    }

    /// Starts, every half lease, the work no live daemon runs (its holder died).
    private func adopt() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: fleet.leases.duration / 2) } catch { return }
            do {
                try await parts.work.adoptAll()
            } catch is StoreUnavailable {
                // Reported by the store (DatabaseHealth); the next round tries again.
            } catch {
                logger.warning("looking for work to take over failed", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// READY=1 once the server listens and the store can serve (at once with SQLite; in a fleet once
/// the database was reached and the work resumed).
final class Readiness: Sendable {
    private let state = Mutex((listening: false, storeReady: false))
    private let socketPath: String
    private let activation: DaemonStatus.Activation
    private let logger: Logger

    init(socketPath: String, activation: DaemonStatus.Activation, storeReady: Bool, logger: Logger) {
        self.socketPath = socketPath
        self.activation = activation
        self.logger = logger
        state.withLock { $0.storeReady = storeReady }
    }

    func isListening() { change { $0.listening = true } }
    func storeIsReady() { change { $0.storeReady = true } }

    private func change(_ mutate: (inout (listening: Bool, storeReady: Bool)) -> Void) {
        let ready = state.withLock { s in
            let before = s.listening && s.storeReady
            mutate(&s)
            return !before && s.listening && s.storeReady
        }
        guard ready else { return }
        logger.notice(
            "stpd \(StpdAPI.version) ready",
            metadata: ["socket": "\(socketPath)", "activation": "\(activation.rawValue)"])
        Systemd.notify("READY=1\nSTATUS=Serving on \(socketPath)")
    }
}
