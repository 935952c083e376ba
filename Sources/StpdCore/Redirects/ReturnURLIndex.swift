/// Open redirect sessions' return URLs, for dispatching an incoming URL to the earliest-registered
/// matching session (spec §2.3, Swift short-circuit) without scanning every session.
///
/// Entries are bucketed by (lowercased scheme, lowercased host, path), which must be equal to
/// match. Within a bucket each entry is filed under one of its valued query items (name=value):
/// it can only match an incoming URL carrying that exact pair, so a lookup reads just the lists of
/// the incoming URL's pairs, plus the entries with no valued item (which any URL may satisfy).
/// Each list is kept sorted by (order, session), so its first match is its earliest.
/// A second copy per owner answers non-root viewers without stepping over other uids' entries.
public struct ReturnURLIndex: Sendable {
    /// A class so that sorted-list inserts and removals move references, not whole URLs.
    final class Entry: Sendable {
        let session: String
        let owner: UInt32
        let order: Int64
        let url: ReturnURL
        init(session: String, owner: UInt32, order: Int64, url: ReturnURL) {
            self.session = session
            self.owner = owner
            self.order = order
            self.url = url
        }
        /// Ties on `order` are broken by session id so the result never depends on hashing.
        func precedes(_ other: Entry) -> Bool { (order, session) < (other.order, other.session) }
    }

    private var entries: [String: Entry] = [:]
    private var all = Table()
    private var byOwner: [UInt32: Table] = [:]

    public init() {}

    public var count: Int { entries.count }

    /// A session has at most one URL: registering again replaces it.
    public mutating func register(session: String, owner: UInt32, order: Int64, url: ReturnURL) {
        unregister(session: session)
        let entry = Entry(session: session, owner: owner, order: order, url: url)
        entries[session] = entry
        all.insert(entry)
        byOwner[owner, default: Table()].insert(entry)
    }

    public mutating func unregister(session: String) {
        guard let entry = entries.removeValue(forKey: session) else { return }
        all.remove(entry)
        byOwner[entry.owner]?.remove(entry)
        if byOwner[entry.owner]?.isEmpty == true { byOwner[entry.owner] = nil }
    }

    /// The earliest-registered session whose URL matches `incoming` and that `viewer` may see
    /// (nil = root, sees all; otherwise only sessions it owns).
    public func match(_ incoming: ReturnURL, viewer: UInt32?) -> String? {
        table(for: viewer)?.find(incoming).entry?.session
    }

    /// How many entries `match(incoming, viewer:)` tests against `incoming`: the structural cost.
    public func candidateCount(for incoming: ReturnURL, viewer: UInt32? = nil) -> Int {
        table(for: viewer)?.find(incoming).examined ?? 0
    }

    private func table(for viewer: UInt32?) -> Table? {
        guard let viewer else { return all }
        return byOwner[viewer]
    }
}

extension ReturnURLIndex {
    struct BucketKey: Hashable {
        let scheme: String?, host: String?, path: String
        init(_ url: ReturnURL) { (scheme, host, path) = (url.schemeKey, url.hostKey, url.path) }
    }

    struct ItemKey: Hashable, Comparable {
        let name: String, value: String
        static func < (a: ItemKey, b: ItemKey) -> Bool { (a.name, a.value) < (b.name, b.value) }
    }

    struct Bucket {
        var unkeyed: [Entry] = []
        var keyed: [ItemKey: [Entry]] = [:]
        var isEmpty: Bool { unkeyed.isEmpty && keyed.isEmpty }
    }

    /// Where a session was filed, so removal needs no search for its list.
    struct Slot { let bucket: BucketKey, item: ItemKey? }

    struct Table {
        var buckets: [BucketKey: Bucket] = [:]
        var slots: [String: Slot] = [:]
        var isEmpty: Bool { slots.isEmpty }

        mutating func insert(_ entry: Entry) {
            let bucketKey = BucketKey(entry.url)
            var bucket = buckets.removeValue(forKey: bucketKey) ?? Bucket()
            // File under the valued item whose list is currently shortest (ties: smallest pair).
            // Lists stay short both when sessions differ in one item, whatever its name, and
            // when they share one URL (the first entry of a shared list matches at once).
            let item = entry.url.queryItems
                .compactMap { item in item.value.map { ItemKey(name: item.name, value: $0) } }
                .min { a, b in (bucket.keyed[a]?.count ?? 0, a) < (bucket.keyed[b]?.count ?? 0, b) }
            if let item {
                Self.insert(entry, into: &bucket.keyed[item, default: []])
            } else {
                Self.insert(entry, into: &bucket.unkeyed)
            }
            buckets[bucketKey] = bucket
            slots[entry.session] = Slot(bucket: bucketKey, item: item)
        }

        mutating func remove(_ entry: Entry) {
            guard let slot = slots.removeValue(forKey: entry.session),
                var bucket = buckets.removeValue(forKey: slot.bucket)
            else { return }
            if let item = slot.item {
                Self.remove(entry, from: &bucket.keyed[item, default: []])
                if bucket.keyed[item]?.isEmpty == true { bucket.keyed[item] = nil }
            } else {
                Self.remove(entry, from: &bucket.unkeyed)
            }
            if !bucket.isEmpty { buckets[slot.bucket] = bucket }
        }

        func find(_ incoming: ReturnURL) -> (entry: Entry?, examined: Int) {
            guard let bucket = buckets[BucketKey(incoming)] else { return (nil, 0) }
            var best: Entry?
            var examined = 0
            func scan(_ list: [Entry]) {
                for candidate in list {
                    // Sorted list: nothing further can beat the best found in another list.
                    if let best, !candidate.precedes(best) { return }
                    examined += 1
                    if candidate.url.matches(incoming) {
                        best = candidate
                        return
                    }
                }
            }
            scan(bucket.unkeyed)
            for (name, value) in incoming.queryValues {
                if let list = bucket.keyed[ItemKey(name: name, value: value)] { scan(list) }
            }
            return (best, examined)
        }

        /// Binary search for the first position whose entry does not precede `entry`.
        private static func position(of entry: Entry, in list: [Entry]) -> Int {
            var low = 0
            var high = list.count
            while low < high {
                let mid = (low + high) / 2
                if list[mid].precedes(entry) { low = mid + 1 } else { high = mid }
            }
            return low
        }

        private static func insert(_ entry: Entry, into list: inout [Entry]) {
            list.insert(entry, at: position(of: entry, in: list))
        }

        private static func remove(_ entry: Entry, from list: inout [Entry]) {
            let index = position(of: entry, in: list)
            if index < list.count, list[index] === entry { list.remove(at: index) }
        }
    }
}
