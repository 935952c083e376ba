import Synchronization

/// Runs `operation`, or throws `onTimeout()` once `seconds` pass (0: wait forever).
///
/// Not a task group: a group waits for all its children, and a call waiting for a reply that
/// never comes cannot be interrupted by cancellation. Here the caller gets control back and the
/// abandoned work is cancelled on a best-effort basis (stpctl exits right after anyway).
public func withTimeout<R: Sendable>(
    seconds: Double, onTimeout: @escaping @Sendable () -> any Error,
    _ operation: @escaping @Sendable () async throws -> R
) async throws -> R {
    guard seconds > 0 else { return try await operation() }
    let outcome = FirstOutcome<R>()
    let work = Task {
        do { outcome.deliver(.success(try await operation())) } catch { outcome.deliver(.failure(error)) }
    }
    let timer = Task {
        // A cancelled sleep means the work finished first: nothing to report.
        guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }
        outcome.deliver(.failure(onTimeout()))
    }
    defer {
        work.cancel()
        timer.cancel()
    }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { outcome.wait($0) }
    } onCancel: {
        outcome.deliver(.failure(CancellationError()))
    }
}

/// Keeps the first result delivered and hands it to the waiter, whichever comes first.
final class FirstOutcome<R: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<R, any Error>)
        case delivered(Result<R, any Error>)
        case done
    }

    private let state = Mutex<State>(.empty)

    func wait(_ continuation: CheckedContinuation<R, any Error>) {
        let ready: Result<R, any Error>? = state.withLock { state in
            if case .delivered(let result) = state {
                state = .done
                return result
            }
            state = .waiting(continuation)
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    func deliver(_ result: Result<R, any Error>) {
        let waiter: CheckedContinuation<R, any Error>? = state.withLock { state in
            switch state {
            case .empty:
                state = .delivered(result)
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .delivered, .done:
                return nil
            }
        }
        waiter?.resume(with: result)
    }
}
