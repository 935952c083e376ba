import Testing

@testable import StpdCore

@Suite("ReturnURLIndex")
struct ReturnURLIndexTests {
    func url(_ text: String) -> ReturnURL {
        guard let url = ReturnURL(text) else { preconditionFailure("unparseable \(text)") }
        return url
    }

    func shop(_ order: Int) -> ReturnURL {
        url("myshop://stripe-redirect?order=\(order)&redirect_merchant_name=Shop")
    }

    /// `count` sessions, session `s<n>` with order n, owners cycling through 1000...1009.
    func index(_ count: Int, _ makeURL: (Int) -> ReturnURL) -> ReturnURLIndex {
        var index = ReturnURLIndex()
        for n in 0..<count {
            index.register(session: "s\(n)", owner: UInt32(1000 + n % 10), order: Int64(n), url: makeURL(n))
        }
        return index
    }

    @Test func earliestRegisteredWinsWhateverTheInsertionOrder() {
        var index = ReturnURLIndex()
        let incoming = url("myshop://r?order=7&m=Shop")
        // Filed differently: keyed by order, keyed by m, and with no query item.
        index.register(session: "late", owner: 1, order: 30, url: url("myshop://r?order=7"))
        index.register(session: "early", owner: 1, order: 10, url: url("myshop://r?m=Shop"))
        index.register(session: "middle", owner: 1, order: 20, url: url("MYSHOP://R"))
        index.register(session: "other", owner: 1, order: 1, url: url("myshop://r?order=8"))
        #expect(index.count == 4)
        #expect(index.match(incoming, viewer: nil) == "early")
        index.unregister(session: "early")
        #expect(index.match(incoming, viewer: nil) == "middle")
        index.unregister(session: "middle")
        #expect(index.match(incoming, viewer: nil) == "late")
    }

    @Test func unregisterAndReregister() {
        var index = ReturnURLIndex()
        index.register(session: "s", owner: 1, order: 1, url: shop(1))
        index.unregister(session: "unknown")
        #expect(index.count == 1)
        // Registering again replaces the URL.
        index.register(session: "s", owner: 1, order: 2, url: shop(2))
        #expect(index.count == 1)
        #expect(index.match(shop(1), viewer: nil) == nil)
        #expect(index.match(shop(2), viewer: nil) == "s")
        index.unregister(session: "s")
        #expect(index.count == 0)
        #expect(index.match(shop(2), viewer: nil) == nil)
        #expect(index.candidateCount(for: shop(2)) == 0)
    }

    @Test func viewerSeesOnlyItsOwnSessions() {
        var index = ReturnURLIndex()
        let shared = url("myshop://r?m=Shop")
        index.register(session: "a", owner: 1000, order: 1, url: shared)
        index.register(session: "b", owner: 1001, order: 2, url: shared)
        index.register(session: "c", owner: 1000, order: 3, url: shared)
        #expect(index.match(shared, viewer: nil) == "a")
        #expect(index.match(shared, viewer: 1000) == "a")
        #expect(index.match(shared, viewer: 1001) == "b")
        #expect(index.match(shared, viewer: 1002) == nil)
        index.unregister(session: "a")
        #expect(index.match(shared, viewer: 1000) == "c")
        #expect(index.match(shared, viewer: nil) == "b")
    }

    @Test func valuelessRegisteredItemMatchesAbsentItem() {
        var index = ReturnURLIndex()
        index.register(session: "s", owner: 1, order: 1, url: url("myapp://x?flag"))
        #expect(index.match(url("myapp://x"), viewer: nil) == "s")
        #expect(index.match(url("myapp://x?flag=1"), viewer: nil) == nil)
    }

    @Test func identicalURLsGoToTheEarliest() {
        let shared = url("myshop://stripe-redirect?redirect_merchant_name=Shop")
        var index = index(1_000, { _ in shared })
        let incoming = url("myshop://stripe-redirect?redirect_merchant_name=Shop&client_secret=x")
        #expect(index.match(incoming, viewer: nil) == "s0")
        #expect(index.match(incoming, viewer: 1009) == "s9")
        #expect(index.candidateCount(for: incoming) == 1)
        #expect(index.candidateCount(for: incoming, viewer: 1009) == 1)
        index.unregister(session: "s0")
        #expect(index.match(incoming, viewer: nil) == "s1")
    }

    /// Structural, not timed: a lookup examines as many entries with 10,000 sessions as with 10,
    /// whichever name the item that differs has (`order` sorts before the shared item, `z_id` after).
    @Test(arguments: [
        "myshop://stripe-redirect?order=%d&redirect_merchant_name=Shop", "myshop://r?a_merchant=Shop&z_id=%d",
    ])
    func lookupCostDoesNotGrowWithSessions(_ pattern: String) {
        func make(_ n: Int) -> ReturnURL { url(pattern.replacingOccurrences(of: "%d", with: String(n))) }
        let small = index(10, make)
        let large = index(10_000, make)
        for n in [0, 7, 9] {
            #expect(small.match(make(n), viewer: nil) == "s\(n)")
            #expect(large.match(make(n), viewer: nil) == "s\(n)")
            #expect(large.match(make(n), viewer: UInt32(1000 + n % 10)) == "s\(n)")
            #expect(large.match(make(n), viewer: UInt32(1000 + (n + 1) % 10)) == nil)
            #expect(small.candidateCount(for: make(n)) <= 2)
            #expect(large.candidateCount(for: make(n)) == small.candidateCount(for: make(n)))
        }
        #expect(large.match(make(5_000), viewer: nil) == "s5000")
        #expect(large.candidateCount(for: make(5_000)) <= 2)
    }
}
