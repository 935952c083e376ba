/// Opens a URL for the customer (STPD_URL_OPENER); throws when the opener reports failure.
public protocol URLOpener: Sendable {
    func open(_ url: String) async throws
}
