// Times ReturnURLIndex lookups at 10, 1,000 and 10,000 open sessions, to show the cost does not
// grow with the number of sessions. Prints a table; asserts nothing.
import Foundation
import StpdCore

/// How the sessions' return URLs relate to each other.
enum Workload: String, CaseIterable {
    case distinct = "distinct order=N"  // the SDK's usual shape: one item differs per session
    case identical = "identical URL"  // every session registered the same URL
    case identicalUID = "identical, uid"  // same, looked up by one of 10 non-root owners
}

func url(_ text: String) -> ReturnURL {
    guard let url = ReturnURL(text) else { fatalError("unparseable \(text)") }
    return url
}

func shopURL(_ order: Int) -> ReturnURL {
    url("myshop://stripe-redirect?order=\(order)&redirect_merchant_name=Shop")
}

let lookups = 100_000
print("sessions  workload           ns/lookup  candidates")
var checksum = 0
for sessions in [10, 1_000, 10_000] {
    for workload in Workload.allCases {
        var index = ReturnURLIndex()
        let shared = url("myshop://stripe-redirect?redirect_merchant_name=Shop")
        for n in 0..<sessions {
            let owner = UInt32(1000 + n % 10)
            index.register(
                session: "src_\(n)", owner: owner, order: Int64(n), url: workload == .distinct ? shopURL(n) : shared)
        }
        // Incoming URLs are parsed up front: only the lookup is timed.
        let incoming: [ReturnURL] =
            workload == .distinct
            ? (0..<64).map { shopURL(($0 * 7919) % sessions) }
            : [url("myshop://stripe-redirect?redirect_merchant_name=Shop&client_secret=src_client_secret_x")]
        // The last owner's first session is the 10th registered: the UID lookup skips nobody.
        let viewer: UInt32? = workload == .identicalUID ? 1009 : nil
        let elapsed = ContinuousClock().measure {
            for i in 0..<lookups {
                if let session = index.match(incoming[i % incoming.count], viewer: viewer) {
                    checksum &+= session.utf8.count
                }
            }
        }
        let ns =
            (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(lookups)
        let candidates =
            Double(incoming.map { index.candidateCount(for: $0, viewer: viewer) }.reduce(0, +)) / Double(incoming.count)
        let row = [
            String(sessions).padding(toLength: 10, withPad: " ", startingAt: 0),
            workload.rawValue.padding(toLength: 19, withPad: " ", startingAt: 0),
            String(format: "%9.0f", ns), String(format: "  %10.1f", candidates),
        ]
        print(row.joined())
    }
}
print("(checksum \(checksum))")
