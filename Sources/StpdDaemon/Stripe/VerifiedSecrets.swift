import StripeAPI
import Synchronization

/// The (id, client secret) pairs stpd has found right under a server key, so that a confirm after
/// a retrieve, or a poll's every request, reads the object from Stripe once, not each time.
/// Bounded (the oldest pair goes first); a pair is only ever added after the object read from
/// Stripe carried that very secret, and a secret that does not match the one remembered is read
/// from Stripe again, so a wrong secret takes as long whether or not the id is remembered.
final class VerifiedSecrets: Sendable {
    static let capacity = 4096

    private struct Pairs {
        var secrets: [String: String] = [:]
        var order: [String] = []
        var head = 0
    }

    private let pairs = Mutex(Pairs())

    func contains(id: String, secret: String) -> Bool {
        guard let known = pairs.withLock({ $0.secrets[id] }) else { return false }
        return ClientSecret.matches(secret, known)
    }

    func remember(id: String, secret: String) {
        pairs.withLock { p in
            guard p.secrets.updateValue(secret, forKey: id) == nil else { return }
            if p.order.count < Self.capacity {
                p.order.append(id)
            } else {
                p.secrets[p.order[p.head]] = nil
                p.order[p.head] = id
                p.head = (p.head + 1) % Self.capacity
            }
        }
    }
}
