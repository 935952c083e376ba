import JSONRPC
import StripeAPI
import Testing

@testable import StpdCore

/// The domain's tests render failures as the domain keeps them, with no wire codes: a `Failure`
/// reads as its own Codable form (`failure(_:)` reads it back), an error from outside the domain
/// (a fake adapter's `RPCError`) as that error. How failures read to clients is checked where the
/// mapping lives, in StpdDaemonTests.
struct DomainFailures: FailureRenderer {
    func render(_ failure: Failure) -> JSONValue {
        if case .described(let description) = failure { return description }
        return (try? JSONCoding.value(of: failure)) ?? .null
    }

    func describe(_ error: any Error) -> JSONValue {
        if let error = error as? RPCError, let value = try? JSONCoding.value(of: error) { return value }
        return .string(String(describing: error))
    }
}

/// The domain's tests see records as the domain keeps them: an event carries its record's own
/// Codable form (the tests read it back as the record), no view of the contract. How each kind reads
/// to clients is checked where the views live, in StpdDaemonTests and ContractTests.
struct DomainViews: RecordViews {
    private let failures = DomainFailures()

    func render(_ failure: Failure) -> JSONValue { failures.render(failure) }
    func describe(_ error: any Error) -> JSONValue { failures.describe(error) }

    func source(_ record: SourceRecord) throws -> PublicState { try PublicState(record) }
    func customerSession(_ record: CustomerSessionRecord) throws -> PublicState { try PublicState(record) }
    func redirect(_ record: RedirectRecord) throws -> PublicState { try PublicState(record) }
    func intent<Intent: StripeIntent>(_ record: IntentRecord<Intent>) throws -> PublicState { try PublicState(record) }
    func paymentContext(_ record: PaymentContextRecord) throws -> JSONValue { try JSONCoding.value(of: record) }
}

/// A failure `DomainFailures` rendered, read back as the domain's type.
func failure(_ rendered: JSONValue?) -> Failure? {
    rendered.flatMap { try? JSONCoding.typed(Failure.self, from: $0) }
}

/// A failure a record keeps (read from the record itself, not from what an event rendered).
func failure(_ kept: Failure?) -> Failure? { kept }

/// The domain error `body` throws; records an issue when nothing is thrown or it is not one.
func domainError<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async -> DomainError? {
    do {
        _ = try await body()
        Issue.record("expected an error", sourceLocation: sourceLocation)
        return nil
    } catch let error as DomainError {
        return error
    } catch {
        Issue.record("\(error) is not a DomainError", sourceLocation: sourceLocation)
        return nil
    }
}

extension DomainError {
    /// The case's name (`notFound`, `invalidState`...), for tests that care only which rule refused.
    var name: String { Mirror(reflecting: self).children.first?.label ?? String(describing: self) }
}

extension Failure {
    /// The code of an error from outside the domain (a fake adapter's `RPCError`) as
    /// `DomainFailures` described it.
    var describedCode: Int? {
        guard case .described(let description) = self, let code = description["code"]?.intValue else { return nil }
        return Int(code)
    }

    /// The domain error's case name when this failure is one.
    var domainErrorName: String? {
        if case .domain(let error) = self { return error.name }
        return nil
    }
}

extension Failure {
    /// The `data` a domain error keeps for clients (paymentFailed's, a redirect's), or none.
    var domainData: [String: JSONValue] {
        switch self {
        case .domain(.paymentFailed(_, let data)), .domain(.redirectUnavailable(_, let data)),
            .domain(.redirectOpenFailed(_, let data)), .domain(.redirectCancelled(_, let data)),
            .domain(.redirectLoadFailed(_, let data)):
            data
        default: [:]
        }
    }
}

/// The error `body` throws, whatever it is (a fake adapter's own, passed through); records an
/// issue when nothing is thrown.
func thrownError<T>(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T) async -> (
    any Error
)? {
    do {
        _ = try await body()
        Issue.record("expected an error", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}
