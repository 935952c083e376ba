import Synchronization

/// Background work that runs exactly once among the daemons sharing a store (a fleet): each
/// piece has a name, `<kind>:<id>`, and runs only where the lease of that name is held
/// (`WorkLeases`), as background work of the daemon (`BackgroundWork`). With SQLite every lease
/// is granted, and this is plain background work that a restart picks up again.
///
/// Invariants:
/// - **Once here.** A name runs at most once in this process: `start` for a name already running
///   queues the job to run after the current one, under the same lease.
/// - **Once in the fleet.** A job runs only while its lease is held. Its task is cancelled when
///   the lease is lost (another daemon may take the work over) or the work is stopped: `stop` on
///   any daemon revokes the lease, which its holder loses at its next renewal, within a third of
///   a lease. A job must end promptly when cancelled and record nothing it did not finish: the
///   daemon that takes the work over starts again from the stored state.
/// - **Nothing is orphaned.** Each kind registers a finder that lists the pieces the store says
///   must run (`adopt`). `adoptAll` starts those not running here whose leases are free: the
///   daemon runs it at start (a restart resumes its work) and, in a fleet, every half lease (the
///   work of a daemon that died resumes elsewhere once its leases expired, within 1.5 leases).
///   So work may begin anywhere; the lease keeps it to one daemon.
///
/// Plugging a kind of work in takes three lines, e.g. for polls:
///
///     work.start("poll:\(pollID)") { await poll(...) }     // where it begins
///     await work.stop("poll:\(pollID)")                     // where the app stops or cancels it
///     work.adopt { try await runningPolls().map { LeasedWork.Job(name: "poll:\($0.pollID)") { ... } } }
public final class LeasedWork: Sendable {
    public struct Job: Sendable {
        public var name: String
        /// False for work that never ends by itself, which must not keep an idle daemon up.
        public var holdsOffIdleExit = true
        public var run: @Sendable () async -> Void

        public init(name: String, holdsOffIdleExit: Bool = true, run: @escaping @Sendable () async -> Void) {
            self.name = name
            self.holdsOffIdleExit = holdsOffIdleExit
            self.run = run
        }
    }

    public let leases: any WorkLeases
    private let background: BackgroundWork
    private let running = Mutex<[String: Piece]>([:])
    private let finders = Mutex<[@Sendable () async throws -> [Job]]>([])

    public init(leases: any WorkLeases = LocalLeases(), background: BackgroundWork) {
        self.leases = leases
        self.background = background
    }

    /// Runs `job` as background work once the lease `name` is taken; does nothing more when
    /// another daemon holds it (it runs there).
    public func start(_ name: String, holdsOffIdleExit: Bool = true, _ job: @escaping @Sendable () async -> Void) {
        let piece = Piece(job)
        let isNew = running.withLock { running in
            if let current = running[name] {
                current.queue(job)
                return false
            }
            running[name] = piece
            return true
        }
        if isNew { background.start(holdsOffIdleExit: holdsOffIdleExit) { [self] in await run(name, piece) } }
    }

    /// Stops the work `name` wherever it runs: here at once, on another daemon within a third of
    /// a lease.
    public func stop(_ name: String) async {
        running.withLock { $0[name] }?.stop()
        // In a task of its own: a call whose client hung up (its task cancelled) still stops it.
        let leases = leases
        await Task { await leases.revoke(name) }.value
    }

    public func isRunning(_ name: String) -> Bool { running.withLock { $0[name] != nil } }

    /// Registers how to find the pieces of one kind of work the store says must run.
    public func adopt(_ finder: @escaping @Sendable () async throws -> [Job]) {
        finders.withLock { $0.append(finder) }
    }

    /// Starts every piece the finders list that runs neither here nor on a live daemon.
    /// Every finder is asked even when one fails; the last failure is thrown.
    public func adoptAll() async throws {
        var failure: (any Error)?
        for finder in finders.withLock({ $0 }) {
            do {
                let jobs = try await finder().filter { !isRunning($0.name) }
                let free = Set(await leases.free(among: jobs.map(\.name)))
                for job in jobs where free.contains(job.name) {
                    start(job.name, holdsOffIdleExit: job.holdsOffIdleExit, job.run)
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    private func run(_ name: String, _ piece: Piece) async {
        while await leases.acquire(name, lost: { piece.stop() }) {
            while let job = piece.next() { await piece.runUntilStopped(job) }
            await leases.release(name)
            // A job queued while the lease was given back runs under a new one.
            let again = running.withLock { running in
                if piece.hasQueued { return true }
                running[name] = nil
                return false
            }
            if !again { return }
        }
        running.withLock { if $0[name] === piece { $0[name] = nil } }
    }
}

/// One name's work in this process: the jobs to run in turn, and its stop signal.
private final class Piece: Sendable {
    private let queued: Mutex<[@Sendable () async -> Void]>
    private let stopped = Signal()

    init(_ job: @escaping @Sendable () async -> Void) { queued = Mutex([job]) }

    func queue(_ job: @escaping @Sendable () async -> Void) {
        queued.withLock { if !stopped.hasFired { $0.append(job) } }
    }

    var hasQueued: Bool { queued.withLock { !$0.isEmpty } }

    func next() -> (@Sendable () async -> Void)? {
        queued.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    /// Ends the running job (its task is cancelled) and drops the queued ones.
    func stop() {
        stopped.fire()
        // After the fire: a job queued from now on sees it and is dropped.
        queued.withLock { $0 = [] }
    }

    /// Runs `job` until it returns or the piece is stopped (then its task is cancelled).
    func runUntilStopped(_ job: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await job() }
            group.addTask { await self.stopped.wait() }
            await group.next()
            group.cancelAll()
        }
    }
}
