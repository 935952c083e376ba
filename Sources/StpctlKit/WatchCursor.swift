/// Where `stpctl watch` stands in the event log, so that the subscription made after a
/// reconnect continues right after the last event printed: no event missed, none printed twice.
///
/// Two numbers are kept apart:
/// - `lastPrinted`, the highest seq printed: an event at or below it is a duplicate;
/// - `since`, what the next `events.subscribe` passes: every matching event up to it was
///   printed (or did not match the filter). Nil until known: subscribe for live events only.
public struct WatchCursor: Sendable, Equatable {
    public private(set) var lastPrinted: Int64?
    public private(set) var since: Int64?

    /// `since` is `--since` (replay after it first), or nil for live events only.
    public init(since: Int64? = nil) {
        self.since = since
    }

    /// A subscription began. Without a position yet it starts at `latestSeq` (a subscription
    /// without `since` sends the events after it), which is where a later reconnect resumes.
    public mutating func subscribed(latestSeq: Int64) {
        if since == nil { since = latestSeq }
    }

    /// True when the event with `seq` is to be printed (and is then counted as printed);
    /// false for a duplicate.
    public mutating func accept(seq: Int64) -> Bool {
        if let lastPrinted, seq <= lastPrinted { return false }
        lastPrinted = seq
        since = max(since ?? seq, seq)
        return true
    }

    /// `events.dropped` arrived: the daemon sent every event up to `resumeSince`. It may be past
    /// the last event printed (later events did not match the filter), never a reason to go back.
    public mutating func dropped(resumeSince: Int64) {
        since = max(since ?? resumeSince, resumeSince)
    }

    /// The daemon answered CursorExpired: events after `since` up to `oldestSeq - 1` were pruned.
    /// Continues from `oldestSeq - 1`; returns the warning to print.
    public mutating func cursorExpired(oldestSeq: Int64) -> String {
        let from = since ?? 0
        let resume = max(oldestSeq - 1, 0)
        since = resume
        let missed =
            switch resume - from {
            case ...0: ""
            case 1: "seq \(resume) was missed; "
            default: "seq \(from + 1) to \(resume) were missed; "
            }
        return "warning: events after seq \(from) are no longer kept by stpd (data.oldestSeq = \(oldestSeq)); "
            + "\(missed)continuing from seq \(oldestSeq)"
    }

    /// The daemon answered CursorAhead on a resume: its log ends at `latestSeq`, before what was
    /// printed, so it is not the log those events came from (state directory replaced or reset).
    /// Continues with its events after `latestSeq`, which may reuse seqs already printed.
    public mutating func cursorAhead(latestSeq: Int64) -> String {
        let from = since ?? 0
        since = latestSeq
        lastPrinted = nil
        return "warning: stpd's event log now ends at seq \(latestSeq), before seq \(from) already seen "
            + "(its state was reset or replaced); continuing with its events after seq \(latestSeq)"
    }
}

/// Delays between reconnection attempts: `initial`, doubling up to `maximum`; `reset` after a
/// success.
public struct Backoff: Sendable, Equatable {
    public let initial: Duration
    public let maximum: Duration
    public private(set) var next: Duration

    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(2)) {
        self.initial = initial
        self.maximum = maximum
        next = initial
    }

    public mutating func delay() -> Duration {
        defer { next = min(next * 2, maximum) }
        return next
    }

    public mutating func reset() {
        next = initial
    }
}

/// `events.wait` waits on the daemon's side: stpctl's own `--timeout` must not cut it short.
public enum LongPoll {
    /// What the daemon waits when `timeout` is not given.
    public static let daemonDefaultWait: Double = 30

    /// The client's bound for a long poll: `--timeout` (the daemon's time to answer) on top of
    /// the wait; 0 stays 0 (wait forever).
    public static func clientTimeout(global: Double, wait: Double?) -> Double {
        global == 0 ? 0 : global + (wait ?? daemonDefaultWait)
    }
}
