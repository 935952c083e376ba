import Foundation
import JSONRPC
import StpdProtocol
import Testing

@testable import StpdCore

/// The retention sweep removes what is finished and keeps what still runs or waits.
extension PaymentContextsTests {
    @Test func theSweepRemovesFinishedObjectsAndKeepsRunningOnes() async throws {
        let world = try await World(customer: Self.cards())
        let idle = try await world.create()
        let busy = try await world.create()
        _ = try await world.requestPayment(busy.id)
        let unpolled = world.api.addSource()
        _ = try await world.sources.retrieve(
            id: unpolled, clientSecret: "\(unpolled)_secret", for: Caller(uid: 1000))
        let neverStarted = try await world.redirects.create(
            for: Caller(uid: 1000), sourceID: unpolled, clientSecret: nil, followUpTimeout: nil)
        let other = world.api.addSource()
        _ = try await world.sources.retrieve(id: other, clientSecret: "\(other)_secret", for: Caller(uid: 1000))
        let running = try await world.redirects.create(
            for: Caller(uid: 1000), sourceID: other, clientSecret: nil, followUpTimeout: nil)
        _ = try await world.redirects.start(id: running.id, for: Caller(uid: 1000), mode: nil, opener: nil)

        let services: [any Sweepable] = [world.sources, world.redirects, world.contexts]
        for service in services { #expect(try await service.sweep(before: .distantPast) == 0, "nothing is that old") }

        let since = try await world.mark()
        #expect(try await world.contexts.sweep(before: .distantFuture) == 1)
        #expect(try await world.redirects.sweep(before: .distantFuture) == 1)
        #expect(try await world.sources.sweep(before: .distantFuture) == 2)

        await #expect(throws: DomainError.self) { try await world.contexts.get(id: idle.id, for: Caller(uid: 1000)) }
        #expect(try await world.contexts.get(id: busy.id, for: Caller(uid: 1000)).requestState == .requestingPayment)
        await #expect(throws: DomainError.self) {
            try await world.redirects.get(id: neverStarted.id, for: Caller(uid: 1000))
        }
        #expect(try await world.redirects.get(id: running.id, for: Caller(uid: 1000)).status == .inProgress)
        #expect(try await world.store.object(id: idle.id) == nil)
        #expect(try await world.store.object(id: unpolled) == nil)
        let removed = try await world.log.wait(since: since, filter: EventFilter(), limit: 100, timeout: .zero).events
        #expect(Set(removed.map(\.type)) == ["paymentContext.removed", "redirect.removed", "source.removed"])
        #expect(removed.first { $0.objectId == idle.id }?.object["id"] == .string(idle.id), "the last state is carried")
    }
}
