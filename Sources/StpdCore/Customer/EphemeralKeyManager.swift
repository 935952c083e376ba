import Foundation
import JSONRPC
import StripeAPI
import Synchronization

/// Keeps one customer ephemeral key and fetches a new one from the provider when needed, as the
/// SDK's `STPEphemeralKeyManager` does (spec §5.3):
/// - a key is *unexpired* iff one is stored and `expires - now > refreshMargin`; `key()` returns an
///   unexpired key at once;
/// - otherwise one provider call serves every caller waiting meanwhile (coalescing). A key that
///   decodes is stored and given to all; a provider error is thrown to all and nothing is stored;
///   JSON that is not a customer key throws `StripeError` of kind `.ephemeralKeyDecoding` (the SDK's
///   code 1000) to all. Whatever the outcome, the fetch is then over: the next call fetches again;
/// - a cancelled caller stops waiting at once with `CancellationError`; the fetch goes on for the
///   others (it runs in a task of its own, never cancelled) and its key is stored even if no one
///   waits for it any more.
///
/// `refreshEagerly()` is the SDK's app-foreground hook, minus its quirk: at most once per
/// `eagerRefreshInterval` rather than only once ever.
///
/// A key handed out may already be inside the margin when the backend issues short-lived keys:
/// like the SDK, the fetched key is given to its waiters as is, and the next call fetches again.
public final class EphemeralKeyManager: Sendable {
    public static let defaultRefreshMargin: Duration = .seconds(60)
    /// The SDK's cap on the margin: larger values are clamped to it.
    public static let maximumRefreshMargin: Duration = .seconds(3600)
    /// Eager refreshes happen only when more than this has passed since the last one.
    public static let eagerRefreshInterval: Duration = .seconds(3600)

    /// Passed to the provider, which must create the key with it (the version requests are made with).
    public let apiVersion: String
    private let provider: any EphemeralKeyProvider
    private let now: @Sendable () -> Date
    private let state: Mutex<State>

    private struct State {
        var key: EphemeralKey?
        var refreshMargin: Duration
        var fetching = false
        /// Callers waiting for the fetch in flight, by waiter id.
        var waiters: [UInt64: CheckedContinuation<EphemeralKey, any Error>] = [:]
        var nextWaiterID: UInt64 = 0
        var lastEagerRefresh: Date?
        var providerCalls = 0
    }

    private enum Decision {
        case resume(Result<EphemeralKey, any Error>)
        case wait(startFetch: Bool)
    }

    public init(
        provider: any EphemeralKeyProvider, apiVersion: String = StripeConfiguration.sdkAPIVersion,
        refreshMargin: Duration = EphemeralKeyManager.defaultRefreshMargin,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.provider = provider
        self.apiVersion = apiVersion
        self.now = now
        state = Mutex(State(refreshMargin: Self.clamp(refreshMargin)))
    }

    /// Clamped to `0...maximumRefreshMargin` when set (the SDK only caps it; a negative margin would
    /// hand out keys past their expiry).
    public var refreshMargin: Duration {
        get { state.withLock { $0.refreshMargin } }
        set { state.withLock { $0.refreshMargin = Self.clamp(newValue) } }
    }

    /// The stored key, unexpired or not; nil before the first successful fetch.
    public var currentKey: EphemeralKey? { state.withLock { $0.key } }

    /// The customer of the stored key (a stored key always has one).
    public var customerID: String? { state.withLock { $0.key?.customerID } }

    /// Whether a fetch is in flight.
    public var isFetching: Bool { state.withLock { $0.fetching } }

    /// Callers currently waiting for the fetch in flight.
    public var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Calls made to the provider so far.
    public var providerCalls: Int { state.withLock { $0.providerCalls } }

    /// An unexpired key: the stored one, or one fetched now (shared with every concurrent caller).
    public func key() async throws -> EphemeralKey {
        let time = now()
        if let key = state.withLock({ s in
            s.key.flatMap { Self.isUnexpired($0, at: time, margin: s.refreshMargin) ? $0 : nil }
        }) {
            return key
        }
        let id = state.withLock { s in
            defer { s.nextWaiterID += 1 }
            return s.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<EphemeralKey, any Error>) in
                let time = now()
                let decision = state.withLock { s -> Decision in
                    // Under the lock: a cancellation whose handler ran before we got here has set
                    // the flag already, so it cannot be missed.
                    if Task.isCancelled { return .resume(.failure(CancellationError())) }
                    if let key = s.key, Self.isUnexpired(key, at: time, margin: s.refreshMargin) {
                        return .resume(.success(key))
                    }
                    s.waiters[id] = continuation
                    return .wait(startFetch: Self.beginFetch(&s))
                }
                switch decision {
                case .resume(let result): continuation.resume(with: result)
                case .wait(let startFetch): if startFetch { launchFetch() }
                }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    /// The app-foreground hook: starts a fetch (result ignored; `key()` callers join it) unless the
    /// stored key is unexpired or an eager refresh happened less than `eagerRefreshInterval` ago.
    /// Returns whether it refreshed: true also when it joined a fetch already in flight, which then
    /// counts as this hour's eager refresh.
    @discardableResult
    public func refreshEagerly() -> Bool {
        let time = now()
        let interval = Self.seconds(Self.eagerRefreshInterval)
        let (refresh, startFetch) = state.withLock { s -> (Bool, Bool) in
            if let key = s.key, Self.isUnexpired(key, at: time, margin: s.refreshMargin) { return (false, false) }
            if let last = s.lastEagerRefresh, !(time.timeIntervalSince(last) > interval) { return (false, false) }
            s.lastEagerRefresh = time
            return (true, Self.beginFetch(&s))
        }
        if startFetch { launchFetch() }
        return refresh
    }

    /// Drops the stored key (e.g. when the app reports a logout); a fetch in flight still completes.
    public func clear() {
        state.withLock { $0.key = nil }
    }

    // MARK: - Fetching

    /// Marks a fetch as started; false when one already is.
    private static func beginFetch(_ s: inout State) -> Bool {
        if s.fetching { return false }
        s.fetching = true
        s.providerCalls += 1
        return true
    }

    /// Runs the provider call in a task of its own, so no caller's cancellation reaches it.
    private func launchFetch() {
        Task { await self.fetch() }
    }

    private func fetch() async {
        let outcome: Result<EphemeralKey, any Error>
        do {
            let json = try await provider.createCustomerKey(apiVersion: apiVersion)
            outcome = Result { try Self.customerKey(from: json) }
        } catch {
            outcome = .failure(error)
        }
        let waiters = state.withLock { s in
            if case .success(let key) = outcome { s.key = key }
            s.fetching = false
            defer { s.waiters = [:] }
            return s.waiters
        }
        for waiter in waiters.values { waiter.resume(with: outcome) }
    }

    /// The provider's JSON as a customer key; anything else is an `.ephemeralKeyDecoding` error.
    static func customerKey(from json: JSONValue) throws(StripeError) -> EphemeralKey {
        let key = try EphemeralKey(json: json)
        guard key.customerID != nil else {
            throw EphemeralKey.failure("associated_objects has no customer entry (not a customer key)")
        }
        return key
    }

    // MARK: - Time

    static func isUnexpired(_ key: EphemeralKey, at now: Date, margin: Duration) -> Bool {
        key.remainingLifetime(at: now) > seconds(margin)
    }

    private static func clamp(_ margin: Duration) -> Duration {
        min(max(margin, .zero), maximumRefreshMargin)
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
