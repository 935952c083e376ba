import Foundation

/// Finished objects do not stay forever: once one has been finished and untouched for the
/// retention age (the event log's, so its history is gone too), it is removed with a
/// `<kind>.removed` event carrying its last state. Each service says what "finished" means.
public protocol Sweepable: Sendable {
    /// Removes the finished objects last changed before `cutoff`; returns how many.
    func sweep(before cutoff: Date) async throws -> Int
}
