import Foundation
import JSONRPC
import Logging
import NIOCore
import RPCTransport
import ServiceLifecycle
import StpdCore
import StpdProtocol
import StpdStore

/// Starts stpd: opens the store, takes or binds the socket, serves until SIGTERM/SIGINT (or
/// idle exit), then drains and exits.
public enum Daemon {
    public static func run(_ configuration: DaemonConfiguration) async throws {
        // Everything stpd creates (database, journal files) is private to its user.
        umask(0o077)
        ProcessLimits.limitMallocArenas()
        let logger = makeLogger(level: configuration.logLevel)
        try prepareStateDirectory(configuration.stateDirectory)
        let listener = try Listener.acquire(configuration)
        let opened = try await OpenedStore.open(
            configuration, instance: configuration.instanceName(socketPath: listener.socket.path), logger: logger)
        let store = opened.store
        let metrics = StpdMetrics()
        let appended: @Sendable (Int) -> Void = { metrics.eventsAppended.increment(by: Int64($0)) }
        // A fleet's database may be down now: its log starts once it answers (FleetService).
        let log =
            opened.fleet == nil
            ? try await EventLog(
                store: store, views: WireViews(), retention: configuration.eventRetention,
                limits: configuration.byteLimits, appended: appended)
            : EventLog(
                awaiting: store, views: WireViews(), retention: configuration.eventRetention,
                limits: configuration.byteLimits, appended: appended)

        let facts = ProcessFacts(
            activation: listener.activation, socketPath: listener.socket.path,
            stateDirectory: configuration.stateDirectory)
        // Created last before the group runs: its HTTP client must be shut down, which the group does.
        let stripe = StripeSetup(configuration: configuration, logger: logger, metrics: metrics)
        let activity = Activity()
        let background = BackgroundWork(began: activity.hold, ended: activity.release)
        let loopback = LoopbackServer(
            configuration: .init(configuration), instance: configuration.instanceName(socketPath: listener.socket.path),
            activity: activity, logger: logger)
        let parts = Parts(
            configuration: configuration, log: log, store: opened, stripe: stripe, activity: activity,
            background: background, logger: logger, metrics: metrics, loopback: loopback)
        let readiness = Readiness(
            socketPath: listener.socket.path, activation: listener.activation, storeReady: opened.fleet == nil,
            logger: logger)
        // With SQLite, before serving: polls resume (holding off idle exit), started redirect
        // sessions take URLs again, and no client sees events about to be pruned.
        if opened.fleet == nil { try await resume(parts, logger: logger) }
        let router = makeRouter(facts: facts, parts: parts, configuration: configuration)
        let service = StpdService(
            router: router, logger: logger, activity: parts.activity, subscriptions: parts.subscriptions,
            pageBytes: configuration.byteLimits.pageBytes, metrics: metrics)

        var serverConfiguration = RPCServerConfiguration()
        serverConfiguration.maxFrameBytes = configuration.maxFrameBytes
        serverConfiguration.maxOutboundBytes = configuration.maxOutboundBytes
        serverConfiguration.maxOutboundBytesPerUID = configuration.maxOutboundBytesPerUID
        serverConfiguration.maxInFlightPerConnection = configuration.maxInFlight
        serverConfiguration.maxBatchRequests = configuration.maxBatchRequests
        serverConfiguration.maxConnections = configuration.maxConnections
        serverConfiguration.maxConnectionsPerUID = configuration.maxConnectionsPerUID
        serverConfiguration.reservedConnections = configuration.reservedConnections
        serverConfiguration.idleTimeout = configuration.connectionIdleTimeout.map(TimeAmount.init)
        serverConfiguration.frameTimeout = TimeAmount(configuration.frameTimeout)
        // Each connection is a file descriptor: the soft limit (1024 under systemd) must hold them.
        ProcessLimits.raiseFileLimit(toHold: configuration.maxConnections + 256, logger: logger)
        let server = RPCServer(
            socket: listener.socket, configuration: serverConfiguration, service: service, logger: logger,
            onListening: readiness.isListening)

        // Shutdown runs in reverse order: background work stops (giving its leases back) and the
        // server drains its calls before the Stripe client and the database's pool close.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let fleet = opened.fleet { services.append(.init(service: fleet.store)) }
        services += [.init(service: stripe), .init(service: server)]
        if let fleet = opened.fleet {
            services.append(
                .init(service: FleetService(fleet: fleet, log: log, parts: parts, readiness: readiness, logger: logger))
            )
        }
        services += [
            .init(service: GrowthPrune(log: log, logger: logger)), .init(service: BackgroundService(work: background)),
            .init(service: loopback),
        ]
        if listener.activation == .socket, let timeout = configuration.idleTimeout {
            services.append(
                .init(
                    service: IdleExit(activity: parts.activity, timeout: timeout, logger: logger),
                    successTerminationBehavior: .gracefullyShutdownGroup))
        }
        // Shutdown runs in reverse order: systemd hears STOPPING=1 first, then the server drains.
        services.append(.init(service: SystemdWatchdog(logger: logger)))
        var groupConfiguration = ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownGracePeriod
        try await ServiceGroup(configuration: groupConfiguration).run()
        logger.info("stopped")
    }

    /// Picks up what was under way, once the store answers: the retention is applied once, and
    /// the work the store says must run starts wherever its lease is free (all of it with
    /// SQLite). From then on the retention is applied hourly by one daemon of the fleet (the
    /// leased job `retention`).
    static func resume(_ parts: Parts, logger: Logger) async throws {
        try await Retention.apply(parts.log, parts.sweepable, logger: logger)
        try await parts.work.adoptAll()
    }

    /// `stpd --recover-with-key FILE`: re-seals with the state key every row sealed with the key in
    /// `FILE` (one that was lost or replaced, found again), so its objects and events are served
    /// again from the next start; says what it did, and what is still sealed with other keys.
    public static func recover(_ configuration: DaemonConfiguration, oldKeyFile: String) async throws -> String {
        umask(0o077)
        guard configuration.databaseURL == nil else {
            throw RecoveryError(
                reason: "--recover-with-key is for the SQLite state; a fleet re-seals with --rotate-state-key")
        }
        try prepareStateDirectory(configuration.stateDirectory)
        let old = try readOldStateKey(oldKeyFile)
        // A recovery re-seals with the key the daemon has; it never makes one (a new key would
        // let the next start open a database whose rows it cannot read, instead of refusing).
        guard
            StateKey.exists(
                stateDirectory: configuration.stateDirectory, credentialsDirectory: configuration.credentialsDirectory)
        else {
            throw RecoveryError(
                reason:
                    "no state key in \(configuration.stateDirectory) (nor a systemd credential): --recover-with-key "
                    + "re-seals with the daemon's key and never creates one; put the key back first")
        }
        let stateKey = try StateKey.load(
            stateDirectory: configuration.stateDirectory, credentialsDirectory: configuration.credentialsDirectory,
            databaseExists: true)
        let store = try SQLiteStateStore(path: configuration.databasePath, sealer: stateKey.sealer)
        let recovered = try await store.recover(sealedWith: old)
        let left = try SQLiteStateStore.sealedRows(path: configuration.databasePath)
            .filter { $0.key != stateKey.sealer.keyID }
        var report =
            "re-sealed \(recovered.objects) objects and \(recovered.events) events of state key \(old.keyID ?? "")"
            + " with state key \(stateKey.sealer.keyID ?? "") (\(stateKey.source))"
        for (key, rows) in left.sorted(by: { $0.key < $1.key }) {
            report += "\nstill sealed with state key \(key): \(rows) rows"
        }
        return report
    }

    /// The key file given to `--recover-with-key`, read as the configuration is (`FileTrust`):
    /// a key another user can write to, or that they own, could make stpd seal with their key.
    static func readOldStateKey(_ path: String) throws -> StateSealer {
        let handle: FileHandle
        do throws(FileTrust.Failure) { handle = try FileTrust.open(path) } catch {
            switch error {
            case .unreadable(let reason): throw StateKeyError(path: path, reason: "cannot read it: \(reason)")
            case .untrusted(let reason): throw ConfigurationError.untrusted("state key file", path, reason)
            }
        }
        defer { try? handle.close() }
        let bytes: Data
        do { bytes = try handle.read(upToCount: 4097) ?? Data() } catch {
            throw StateKeyError(path: path, reason: "cannot read it: \(ConfigFile.readFailure(error))")
        }
        return try StateKey.sealer(fromBytes: Array(bytes), path: path)
    }

    /// The long-lived pieces handlers share.
    struct Parts: Sendable {
        var activity: Activity
        var log: EventLog
        var store: OpenedStore
        var subscriptions: SubscriptionRegistry
        var waits: EventWaits
        /// The Stripe API client (nil inside when no key is configured).
        var stripe: StripeSetup
        var broker: AppRequestBroker
        var customers: CustomerSessions
        var payments: any PaymentsAPI
        var sources: SourceService
        var intents: IntentPollers
        var redirects: RedirectSessions
        var contexts: PaymentContexts
        /// The loopback return's listener (nil in tests that run none).
        var loopback: LoopbackServer?
        var cards = CardValidator()
        var metrics: StpdMetrics
        /// The background work that runs once in a fleet (all of it, with SQLite).
        var work: LeasedWork
        /// What holds finished objects that the retention sweep removes.
        var sweepable: [any Sweepable] { [customers, broker, sources, redirects, contexts] + intents.sweepable }

        init(
            configuration: DaemonConfiguration, log: EventLog, store: OpenedStore, stripe: StripeSetup,
            activity: Activity, background: BackgroundWork, logger: Logger, metrics: StpdMetrics = StpdMetrics(),
            loopback: LoopbackServer? = nil
        ) {
            self.activity = activity
            self.loopback = loopback
            self.metrics = metrics
            self.log = log
            self.store = store
            subscriptions = SubscriptionRegistry(
                log: log, limits: configuration.subscriptionLimits, metrics: metrics)
            waits = EventWaits(limits: configuration.waitLimits)
            self.stripe = stripe
            cards = CardValidator(metadata: CardMetadataLookup(source: StripeCardMetadata(stripe.client)))
            let work = LeasedWork(leases: store.fleet?.leases ?? LocalLeases(), background: background)
            self.work = work
            // A row that no longer decodes is set aside, never fatal: say which, once.
            let setAside: SetAsideReporter = { kind, id, error in
                logger.error(
                    "set aside a \(kind.noun) that does not decode", metadata: ["object": "\(id)", "error": "\(error)"])
            }
            broker = AppRequestBroker(log: log, work: work, reportSetAside: setAside)
            customers = CustomerSessions(
                log: log,
                factory: DaemonBackendFactory(
                    stripe: stripe, broker: broker, serverKeyAccess: configuration.serverKeyAccess),
                background: background, reportSetAside: setAside)
            payments = StripePaymentsAPI(stripe: stripe)
            // One budget for both kinds of poll: a user's polls count and send together.
            let pollBudget = PollBudget(limits: configuration.pollLimits)
            sources = SourceService(
                api: payments, log: log, background: background, work: work, budget: pollBudget,
                reportSetAside: setAside)
            intents = IntentPollers(
                api: payments, log: log, background: background, work: work, budget: pollBudget,
                reportSetAside: setAside)
            redirects = RedirectSessions(
                api: payments, sources: sources, intents: intents,
                opener: configuration.urlOpener.map(CommandURLOpener.init), log: log, background: background,
                followUpTimeout: configuration.redirectPollTimeout, work: work,
                loopback: loopback.map { LoopbackReturns(listener: $0, instance: $0.instance) },
                reportSetAside: setAside)
            loopback?.attach(redirects)
            sources.follow(with: redirects)
            intents.follow(with: redirects)
            contexts = PaymentContexts(
                customers: customers, api: payments, redirects: redirects, log: log, background: background,
                pendingActionTimeout: configuration.pendingActionTimeout,
                companyName: { [merchantName = configuration.merchantName] caller in
                    MerchantName.resolve(given: nil, configured: merchantName, caller: caller)
                },
                work: work, reportSetAside: setAside, cardMetadata: cards.metadata)
            redirects.follow(with: contexts)
            intents.follow(with: contexts)
            Retention.schedule(on: work, log: log, sweepable: sweepable, logger: logger)
        }
    }

    /// Every method's handler; a test checks it covers exactly `StpdAPI.methods`.
    static func makeRouter(facts: ProcessFacts, parts: Parts, configuration: DaemonConfiguration) -> MethodRouter<
        CallContext
    > {
        var router = MethodRouter<CallContext>(
            definitions: StpdAPI.schemas.mapValues(\.json), maxStringBytes: configuration.maxStringBytes)
        DaemonHandlers.register(into: &router, facts: facts, parts: parts)
        EventHandlers.register(into: &router, log: parts.log, subscriptions: parts.subscriptions, waits: parts.waits)
        DebugHandlers.register(into: &router, log: parts.log, enabled: configuration.debugMethods)
        CustomerHandlers.register(into: &router, sessions: parts.customers)
        AppRequestHandlers.register(into: &router, broker: parts.broker)
        SourceHandlers.register(
            into: &router, sources: parts.sources, redirects: parts.redirects, cards: parts.cards,
            merchantName: configuration.merchantName)
        RedirectHandlers.register(into: &router, redirects: parts.redirects)
        AppHandlers.register(
            into: &router, sources: parts.sources, redirects: parts.redirects, customers: parts.customers)
        IntentHandlers.register(
            into: &router, handler: PaymentHandler(api: parts.payments, redirects: parts.redirects),
            polls: parts.intents, cards: parts.cards,
            returnURLs: ReturnURLs(redirects: parts.redirects, merchantName: configuration.merchantName))
        PaymentContextHandlers.register(into: &router, contexts: parts.contexts)
        CardHandlers.register(into: &router, cards: parts.cards)
        return router
    }

    static func makeLogger(level: Logger.Level) -> Logger {
        let toJournal = Systemd.stderrIsJournal()
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                toJournal
                ? JournalLogHandler(logLevel: level, label: label)
                : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "stpd")
    }

    /// The state folder is private to the daemon's user (0700), created if missing.
    static func prepareStateDirectory(_ path: String) throws {
        let manager = FileManager.default
        do {
            if !manager.fileExists(atPath: path) {
                try manager.createDirectory(
                    atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } else {
                try manager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
            }
            guard access(path, W_OK) == 0 else { throw StateDirectoryError(path: path, reason: "not writable") }
        } catch let error as StateDirectoryError {
            throw error
        } catch {
            throw StateDirectoryError(
                path: path, reason: (error as NSError).localizedFailureReason ?? "cannot create or secure it")
        }
    }
}

struct RecoveryError: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
}

struct StateDirectoryError: Error, CustomStringConvertible {
    var path: String
    var reason: String
    var description: String { "state directory \(path): \(reason) (set --state-dir or STPD_STATE_DIR)" }
}

/// Pings systemd's watchdog at half its interval while the daemon runs, and tells systemd when
/// shutdown begins (`STOPPING=1`) so new connections queue for the next start.
struct SystemdWatchdog: Service {
    let logger: Logger

    func run() async throws {
        let interval = Systemd.watchdogPingInterval()
        if let interval { logger.info("watchdog enabled", metadata: ["ping_interval": "\(interval)"]) }
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    if interval != nil { Systemd.notify("WATCHDOG=1") }
                    do { try await Task.sleep(for: interval ?? .seconds(3600)) } catch { break }
                }
            }
        } onGracefulShutdown: {
            Systemd.notify("STOPPING=1\nSTATUS=Shutting down")
        }
    }
}

/// Runs the domain's background work (a session's prefetch) inside the service tree.
struct BackgroundService: Service {
    let work: BackgroundWork

    func run() async throws {
        await cancelWhenGracefulShutdown { await work.run() }
    }
}

/// The retention: the event log is pruned and objects finished longer ago than events are kept
/// are removed. Applied once as the daemon starts, then hourly by the leased job `retention`
/// (one daemon of a fleet runs it; another takes it over if that one dies), and the log alone
/// by `GrowthPrune` as it grows.
enum Retention {
    static let lease = "retention"

    static func schedule(on work: LeasedWork, log: EventLog, sweepable: [any Sweepable], logger: Logger) {
        work.adopt {
            [
                LeasedWork.Job(name: lease, holdsOffIdleExit: false) {
                    while (try? await Task.sleep(for: .seconds(3600))) != nil {
                        do {
                            try await apply(log, sweepable, logger: logger)
                        } catch {
                            logger.error("applying the retention failed: \(error)")
                        }
                    }
                }
            ]
        }
    }

    static func apply(_ log: EventLog, _ sweepable: [any Sweepable], logger: Logger) async throws {
        let dropped = try await log.prune()
        if dropped > 0 { logger.info("pruned \(dropped) events past retention") }
        let cutoff = Date().addingTimeInterval(-log.retention.maxAge.seconds)
        var removed = 0
        for service in sweepable { removed += try await service.sweep(before: cutoff) }
        if removed > 0 { logger.info("removed \(removed) objects finished before \(cutoff.formatted(.iso8601))") }
    }
}

/// Prunes the event log each time this daemon appended `EventRetention.pruneEvery` events, so a
/// restart never meets a prune backlog (100,000 sessions left 400,000 events to prune in one go:
/// 5 s before serving). Not leased: daemons of a fleet pruning at once take turns in the store.
struct GrowthPrune: Service {
    let log: EventLog
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in log.pruneDue {
                do {
                    let dropped = try await log.prune()
                    if dropped > 0 { logger.debug("pruned \(dropped) events past retention") }
                } catch {
                    logger.error("pruning the event log failed: \(error)")
                }
            }
        }
    }
}
