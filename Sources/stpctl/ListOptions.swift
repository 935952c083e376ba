import ArgumentParser
import JSONRPC
import StpdProtocol

/// `--limit`, `--starting-after`, `--status` and `--all` of every `list` command: one page by
/// default, as the daemon pages (100 objects, at most 1,000), or every page with `--all`.
struct ListOptions<Status: ExpressibleByArgument & CaseIterable & Codable & Sendable & Hashable>: ParsableArguments
where Status: RawRepresentable<String> {
    @Option(help: "Objects per page (1-1000; the daemon's default is 100).")
    var limit: Int?

    @Option(name: .customLong("starting-after"), help: "Start after this id (the last one of the previous page).")
    var startingAfter: String?

    @Option(help: "Only objects with this status.")
    var status: Status?

    @Flag(help: "Every page, not just the first.")
    var all = false

    /// Calls `method` for one page, or for every page with `--all`, as one result.
    func fetch<M: RPCMethod>(_ method: M.Type, on connection: Connection) async throws -> M.Result
    where M.Params == ListParams<Status>, M.Result: ListResult, M.Result.Item: Identified {
        let (first, all) = (ListParams(limit: limit, startingAfter: startingAfter, status: status), all)
        return try await connection.run { client in
            var params = first
            var items: [M.Result.Item] = []
            while true {
                let page = try await client.call(M.self, params)
                items += page.items
                guard all, page.hasMore, let last = page.items.last else {
                    return M.Result(items: items, hasMore: page.hasMore)
                }
                params.startingAfter = last.id
            }
        }
    }
}

extension CustomerSessionStatus: ExpressibleByArgument {}
extension SourceStatus: ExpressibleByArgument {}
extension RedirectStatus: ExpressibleByArgument {}
extension PaymentContextStatus: ExpressibleByArgument {}
