import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdDaemon

/// stpd's confirm request against the SDK's, type by type: each confirmation in
/// `Tests/Fixtures/sdk-confirm-forms.json` names the form keys the Stripe iOS SDK sends (its
/// recorded request, or its params classes where no functional test confirms the type, each entry
/// citing its stripe-ios file) and the `paymentIntent.confirm` / `setupIntent.confirm` params for
/// the same confirmation. stpd's form for those params must carry every key the SDK sends, unless
/// the fixture says why stpd does not (docs/sdk-differences.md lists those). Keys only: the values
/// differ where the test data does.
@Suite struct SDKConfirmFormTests {
    struct Confirmation: Decodable, Sendable, CustomTestStringConvertible {
        var type: String
        var intent: String
        var sdk: String
        var sdkKeys: [String]
        var stpd: JSONValue
        var notSent: [String: String]?
        var testDescription: String { "\(type) on a \(intent)" }
        var member: String? {
            stpd["paymentMethod"]?.objectValue?.keys.first { !["billingDetails", "metadata"].contains($0) }
        }
    }

    struct Fixture: Decodable, Sendable {
        var notSent: [String: String]
        var confirmations: [Confirmation]
    }

    static let fixture: Fixture = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/sdk-confirm-forms.json")
        // A fixture that does not load fails every test below (no confirmations, no types covered).
        guard let data = try? Data(contentsOf: url), let fixture = try? JSONDecoder().decode(Fixture.self, from: data)
        else { return Fixture(notSent: [:], confirmations: []) }
        return fixture
    }()

    private struct NoTransport: StripeHTTPTransport {
        func send(_ request: HTTPRequestData) async throws -> HTTPResponseData { HTTPResponseData(status: 500) }
    }

    /// A publishable key's client, as the SDK confirms: the client secret and `payment_user_agent` go in the form.
    private static let client = StripeClient(
        configuration: StripeConfiguration(
            key: StripeKey("pk_test_51HbQxLKj2s9dFh3kPzR7yT0vWq")!,
            userAgent: StripeUserAgent(bindingsVersion: StpdAPI.version)),
        transport: NoTransport())

    /// The keys of stpd's form for the entry's params, percent-decoded (`payment_method_data[type]`).
    static func stpdKeys(_ entry: Confirmation) throws -> Set<String> {
        var params = entry.stpd.objectValue ?? [:]
        let setupIntent = entry.intent == "setupIntent"
        params["clientSecret"] = .string(setupIntent ? "seti_1_secret_2" : "pi_1_secret_2")
        let schema = setupIntent ? SetupIntentConfirm.paramsSchema : PaymentIntentConfirm.paramsSchema
        try SchemaValidator().validate(.object(params), against: schema)
        let confirm =
            setupIntent
            ? try JSONCoding.typed(SetupIntentConfirm.Params.self, from: .object(params)).confirmParams(
                setupIntent: true)
            : try JSONCoding.typed(PaymentIntentConfirm.Params.self, from: .object(params)).confirmParams(
                setupIntent: false)
        let form = StripePaymentsAPI.confirmForm(confirm, by: client)
        return Set(FormEncoder.pairs(form).map { $0.key.removingPercentEncoding ?? $0.key })
    }

    @Test(arguments: fixture.confirmations)
    func stpdSendsEveryKeyTheSDKSends(_ entry: Confirmation) throws {
        let sent = try Self.stpdKeys(entry)
        let excused = Self.fixture.notSent.merging(entry.notSent ?? [:]) { global, _ in global }
        let missing = entry.sdkKeys.filter { !sent.contains($0) && excused[$0] == nil }
        #expect(missing.isEmpty, "stpd does not send \(missing), which the SDK sends (\(entry.sdk))")
        // A key excused as not sent must really be absent, so the list of differences stays true.
        let excusedYetSent = excused.keys.filter { sent.contains($0) }.sorted()
        #expect(excusedYetSent.isEmpty, "listed as not sent, yet sent: \(excusedYetSent)")
        #expect(!entry.sdk.isEmpty)
    }

    /// Every payment-method member of `paymentMethod` has at least one confirmation, and every
    /// SetupIntent mandate type one on a SetupIntent.
    @Test func everyTypeHasAConfirmation() {
        let members = Set(Self.fixture.confirmations.compactMap(\.member))
        let types = PaymentMethodInput.members.filter { $0 != "id" }
        #expect(types.filter { !members.contains($0) } == [])
        let setupTypes = Set(Self.fixture.confirmations.filter { $0.intent == "setupIntent" }.map(\.type))
        #expect(Mandates.setupIntent.subtracting(setupTypes).sorted() == ["link"])
    }
}
