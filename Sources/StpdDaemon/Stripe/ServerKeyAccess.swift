import Foundation
import JSONRPC
import StpdProtocol

/// Who may open customer sessions with `keyProvider: {kind: server}`: those call Stripe with the
/// daemon's own secret (or restricted) key for whatever customer id the caller names, so they
/// are a privilege of the key's owner. Root and the daemon's own uid may always (both can read
/// the key anyway); other uids only when listed in `STPD_SERVER_KEY_UIDS`, or for a customer
/// listed in `STPD_SERVER_KEY_CUSTOMERS`.
public struct ServerKeyAccess: Sendable, Hashable {
    public var uids: Set<UInt32> = []
    public var customers: Set<String> = []

    public init(uids: Set<UInt32> = [], customers: Set<String> = []) {
        self.uids = uids
        self.customers = customers
    }

    public func allows(uid: UInt32, customer: String, daemonUID: UInt32 = geteuid()) -> Bool {
        uid == 0 || uid == daemonUID || uids.contains(uid) || customers.contains(customer)
    }

    /// PermissionDenied (1002) when `uid` may not; `data.setting` names what would allow it.
    public func check(uid: UInt32, customer: String) throws(RPCError) {
        guard !allows(uid: uid, customer: customer) else { return }
        throw StpdErrors.permissionDenied(
            "uid \(uid) may not open sessions with stpd's own Stripe key (keyProvider kind server); "
                + "the daemon's configuration lists who may in STPD_SERVER_KEY_UIDS or STPD_SERVER_KEY_CUSTOMERS",
            data: ["setting": "STPD_SERVER_KEY_UIDS", "uid": .int(Int64(uid))])
    }

    /// `0,1001,alice`: numbers are uids, names are looked up now (an unknown name is an error).
    static func parseUsers(_ raw: String) throws -> Set<UInt32> {
        var uids: Set<UInt32> = []
        for item in list(raw) {
            if let uid = UInt32(item) {
                uids.insert(uid)
            } else if let uid = lookUp(user: item) {
                uids.insert(uid)
            } else {
                throw ConfigurationKey.Refusal(
                    expected: "uids or names of existing users, separated by commas (\(item)?)")
            }
        }
        return uids
    }

    static func parseCustomers(_ raw: String) throws -> Set<String> {
        let ids = list(raw)
        for id in ids {
            guard id.hasPrefix("cus_"), id.count > 4,
                id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            else { throw ConfigurationKey.Refusal(expected: "customer ids (cus_…) separated by commas") }
        }
        return Set(ids)
    }

    private static func list(_ raw: String) -> [String] {
        raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    private static func lookUp(user name: String) -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.pw_uid
    }
}
