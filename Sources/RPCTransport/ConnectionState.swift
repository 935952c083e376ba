/// Where a connection is in its life, with marks for the work its handler waits on: one private
/// enum, changed only by the mutating transitions below (the shape of SwiftNIO's
/// HTTPServerPipelineHandler). Each transition returns the `Action` the handler takes; one that
/// cannot happen in the current state (a bug of the handler) returns `forceClose` and leaves the
/// connection closing: the handler logs it and closes that one connection, rather than acting on a
/// connection that has moved on or stopping the daemon with every other connection in it.
/// Confined to the connection's event loop, like its `ConnectionHandler`.
///
///     open ──EOF, shutdown, bad frame──▶ readEnded ──outbox finished and drained──▶ closing ──▶ closed
///
/// A connection the application closes (its outbox finished) goes from open to closing directly;
/// the channel may close in any state.
struct ConnectionState {
    /// What the handler does after a transition.
    enum Action: Equatable {
        /// Nothing more.
        case none
        /// Give NIO the read it is owed (`resumeRead`).
        case read
        /// Drop the input not yet handled (the first `dropRest` of `endReading`).
        case dropInput
        /// Schedule a turn of the event loop for the leftover frames (`scheduleBacklog`).
        case scheduleBacklog
        /// Flush what was written (`flush`).
        case flush
        /// Flush the last bytes, then close the channel (`startClosing`).
        case closeWhenFlushed
        /// An invariant of the handler broke: log the reason and close this connection now.
        case forceClose(String)
    }

    enum ReadEnd {
        /// The peer sent EOF: frames already read are still answered.
        case peerClosed
        /// Reading stopped for good (shutdown, a bad frame): frames not yet handled are dropped.
        case dropRest
    }

    private enum Phase {
        /// Reading frames.
        case open(Marks)
        /// No more frames are read. The calls read are still answered (every one after the peer's
        /// EOF; after a shutdown or a bad frame, those already started), then the connection closes.
        case readEnded(ReadEnd, Marks)
        /// Everything is answered and the outbox finished and drained: the last bytes flush, then
        /// the channel closes. Nothing more is read or written.
        case closing
        /// The channel is closed: a late completion (a reply, a prepared frame, a timer) does nothing.
        case closed
    }

    private struct Marks: OptionSet {
        let rawValue: UInt8
        /// NIO asked for a read while a limit held reading back: it is owed one.
        static let readHeld = Marks(rawValue: 1 << 0)
        /// A turn for frames the last one left over is scheduled on the event loop.
        static let backlogScheduled = Marks(rawValue: 1 << 1)
        /// A large frame is parsed and routed as a task; later frames wait for it.
        static let preparing = Marks(rawValue: 1 << 2)
        /// Bytes were written to the channel and not yet flushed.
        static let unflushed = Marks(rawValue: 1 << 3)
        /// The outbox may hold frames (or have finished): set by its wake and by replies queued
        /// behind it, cleared when a `poll` finds it empty. While clear, writes skip its lock.
        static let outboxDirty = Marks(rawValue: 1 << 4)
    }

    private var phase = Phase.open([])

    // MARK: Questions

    var isOpen: Bool { if case .open = phase { true } else { false } }
    var isClosing: Bool { if case .closing = phase { true } else { false } }
    var isClosed: Bool { if case .closed = phase { true } else { false } }
    /// Replies are still written and the outbox pumped: open, or answering after reading ended.
    var takesReplies: Bool { marks != nil }
    var readHeld: Bool { if case .open(let marks) = phase { marks.contains(.readHeld) } else { false } }
    var backlogScheduled: Bool { marks?.contains(.backlogScheduled) ?? false }
    var outboxDirty: Bool { marks?.contains(.outboxDirty) ?? false }
    /// Reading has ended, or a frame is still being prepared: not idle.
    var busyReading: Bool { !isOpen || (marks?.contains(.preparing) ?? false) }

    /// Frames may be cut and their calls started: not once the rest is dropped, nor while a large
    /// frame is prepared.
    var mayDispatch: Bool {
        switch phase {
        case .open(let marks), .readEnded(.peerClosed, let marks): !marks.contains(.preparing)
        case .readEnded(.dropRest, _), .closing, .closed: false
        }
    }

    /// More bytes may be read: open, with no frame prepared and no turn of leftovers pending.
    var mayRead: Bool {
        guard case .open(let marks) = phase else { return false }
        return marks.isDisjoint(with: [.preparing, .backlogScheduled])
    }

    /// Reading ended and no frame work is pending: once every call is answered, the outbox finishes.
    var mayFinish: Bool {
        guard case .readEnded(_, let marks) = phase else { return false }
        return marks.isDisjoint(with: [.preparing, .backlogScheduled])
    }

    /// Input left unread is dropped rather than answered.
    var dropsInput: Bool {
        switch phase {
        case .readEnded(.dropRest, _), .closing, .closed: true
        case .open, .readEnded(.peerClosed, _): false
        }
    }

    private var marks: Marks? {
        switch phase {
        case .open(let marks), .readEnded(_, let marks): marks
        case .closing, .closed: nil
        }
    }

    // MARK: Transitions

    /// Changes the marks of a connection that takes replies; false (and no change) once closing.
    @discardableResult
    private mutating func update(_ change: (inout Marks) -> Void) -> Bool {
        switch phase {
        case .open(var marks):
            change(&marks)
            phase = .open(marks)
        case .readEnded(let end, var marks):
            change(&marks)
            phase = .readEnded(end, marks)
        case .closing, .closed: return false
        }
        return true
    }

    /// A transition that cannot happen here: nothing more is read or written on this connection
    /// (a closed one stays closed), and the handler closes it.
    private mutating func broken(_ reason: String) -> Action {
        if !isClosed { phase = .closing }
        return .forceClose(reason)
    }

    /// NIO asked for a read that a limit holds back; after reading ended none is owed.
    mutating func holdRead() {
        guard case .open(var marks) = phase else { return }
        marks.insert(.readHeld)
        phase = .open(marks)
    }

    /// Gives NIO the read it is owed: `read`.
    mutating func resumeRead() -> Action {
        guard case .open(var marks) = phase, marks.remove(.readHeld) != nil else {
            return broken("a read resumed that was not held")
        }
        phase = .open(marks)
        return .read
    }

    /// Ends reading: `dropInput` when the input not yet handled must be dropped now (the first
    /// `dropRest`). A `dropRest` overrides the peer's EOF, never the reverse.
    mutating func endReading(_ end: ReadEnd) -> Action {
        switch phase {
        case .open(var marks):
            marks.remove(.readHeld)
            phase = .readEnded(end, marks)
            return end == .dropRest ? .dropInput : .none
        case .readEnded(.peerClosed, let marks):
            guard end == .dropRest else { return broken("the peer's EOF came twice") }
            phase = .readEnded(.dropRest, marks)
            return .dropInput
        case .readEnded(.dropRest, _), .closing:
            return .none
        case .closed:
            return broken("reading ended on a closed connection")
        }
    }

    /// Marks a turn for leftover frames: `scheduleBacklog`, or `none` when one is scheduled already.
    mutating func scheduleBacklog() -> Action {
        guard !dropsInput else { return broken("leftover frames scheduled where no frame is handled") }
        guard !backlogScheduled else { return .none }
        update { $0.insert(.backlogScheduled) }
        return .scheduleBacklog
    }

    mutating func backlogRan() { update { $0.remove(.backlogScheduled) } }

    mutating func startPreparing() -> Action {
        guard mayDispatch else { return broken("a frame prepared where no frame is handled") }
        update { $0.insert(.preparing) }
        return .none
    }

    mutating func finishPreparing() { update { $0.remove(.preparing) } }

    /// Bytes went to the channel unflushed; writing once closing began is a bug.
    mutating func wrote() -> Action {
        update { $0.insert(.unflushed) } ? .none : broken("a write after the connection began to close")
    }

    /// `flush` when a flush is owed (and clears it), else `none`.
    mutating func flush() -> Action {
        guard marks?.contains(.unflushed) ?? false else { return .none }
        update { $0.remove(.unflushed) }
        return .flush
    }

    mutating func outboxWoke() { update { $0.insert(.outboxDirty) } }
    mutating func outboxDrained() { update { $0.remove(.outboxDirty) } }

    /// Everything is answered and the outbox drained: `closeWhenFlushed`.
    mutating func startClosing() -> Action {
        guard takesReplies else { return broken("closing began twice, or after the channel closed") }
        phase = .closing
        return .closeWhenFlushed
    }

    /// The channel closed; twice is a bug, with nothing left to close.
    mutating func channelClosed() -> Action {
        guard !isClosed else { return .forceClose("the channel closed twice") }
        phase = .closed
        return .none
    }
}
