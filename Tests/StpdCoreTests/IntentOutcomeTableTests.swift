import Foundation
import JSONRPC
import StripeAPI
import Testing

@testable import StpdCore

/// One case per row of `IntentRules.outcomeTable`: an intent in the row's status, read at the row's
/// entry point and moment, and the outcome STPPaymentHandler gives it, written out here (not read
/// from the table) from the SDK file the row cites.
struct IntentOutcomeTableTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var kind: IntentKind
        var entry: IntentEntry
        var moment: IntentMoment
        var status: String
        var pm: String? = "card"
        var action: String? = nil
        var expected: IntentOutcome

        var testDescription: String {
            "\(kind.rawValue) \(status)\(pm.map { "/\($0)" } ?? "")\(action.map { " [\($0)]" } ?? "") "
                + "\(entry.rawValue) \(moment.rawValue)"
        }
    }

    static let cases: [Case] = [
        // Both kinds.
        .init(kind: .paymentIntent, entry: .confirm, moment: .start, status: "succeeded", expected: .succeeded),
        .init(
            kind: .setupIntent, entry: .handleNextAction, moment: .afterAction, status: "succeeded",
            expected: .succeeded),
        .init(
            kind: .paymentIntent, entry: .managedPayment, moment: .afterAction, status: "canceled", expected: .canceled),
        .init(kind: .setupIntent, entry: .confirm, moment: .start, status: "canceled", expected: .canceled),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .start, status: "some_new_status",
            expected: .failed(reason: "unexpected")),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .start, status: "requires_payment_method",
            expected: .failed(reason: "requiresPaymentMethod")),
        .init(
            kind: .setupIntent, entry: .handleNextAction, moment: .start, status: "requires_payment_method",
            expected: .failed(reason: "requiresPaymentMethod")),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .afterAction, status: "requires_payment_method",
            expected: .failedWithLastError),
        .init(
            kind: .setupIntent, entry: .confirm, moment: .afterAction, status: "requires_payment_method",
            expected: .failedWithLastError),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .start, status: "requires_action", pm: "oxxo",
            action: "oxxo_display_details", expected: .nextAction),
        .init(
            kind: .paymentIntent, entry: .handleNextAction, moment: .afterAction, status: "requires_action", pm: "oxxo",
            action: "oxxo_display_details", expected: .succeeded),
        .init(
            kind: .setupIntent, entry: .confirm, moment: .afterAction, status: "requires_action",
            pm: "us_bank_account", action: "verify_with_microdeposits", expected: .succeeded),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .start, status: "requires_action",
            action: "redirect_to_url", expected: .nextAction),
        .init(
            kind: .setupIntent, entry: .confirm, moment: .afterAction, status: "requires_action",
            action: "redirect_to_url", expected: .nextAction),
        // PaymentIntents.
        .init(kind: .paymentIntent, entry: .confirm, moment: .start, status: "requires_capture", expected: .succeeded),
        .init(
            kind: .paymentIntent, entry: .handleNextAction, moment: .start, status: "requires_confirmation",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .paymentIntent, entry: .handleNextAction, moment: .afterAction, status: "requires_confirmation",
            expected: .succeeded),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .start, status: "requires_confirmation",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .afterAction, status: "requires_confirmation",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .paymentIntent, entry: .managedPayment, moment: .start, status: "requires_confirmation",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .start, status: "processing", pm: "sepa_debit",
            expected: .succeeded),
        .init(
            kind: .paymentIntent, entry: .handleNextAction, moment: .afterAction, status: "processing",
            pm: "us_bank_account", expected: .succeeded),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .start, status: "processing",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .paymentIntent, entry: .confirm, moment: .afterAction, status: "processing", pm: "ideal",
            expected: .pollProcessing),
        // SetupIntents.
        .init(
            kind: .setupIntent, entry: .confirm, moment: .start, status: "requires_confirmation",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .setupIntent, entry: .handleNextAction, moment: .afterAction, status: "requires_confirmation",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .setupIntent, entry: .confirm, moment: .start, status: "processing", pm: "sepa_debit",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .setupIntent, entry: .handleNextAction, moment: .afterAction, status: "processing", pm: "bacs_debit",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .setupIntent, entry: .confirm, moment: .start, status: "processing",
            expected: .failed(reason: "intentStatus")),
        .init(
            kind: .setupIntent, entry: .confirm, moment: .afterAction, status: "processing", expected: .pollProcessing),
    ]

    private static func json(_ c: Case) -> JSONValue {
        let prefix = c.kind == .paymentIntent ? "pi" : "seti"
        var json: [String: JSONValue] = [
            "id": .string("\(prefix)_1"), "client_secret": .string("\(prefix)_1_secret_x"), "status": .string(c.status),
            "amount": 1000, "currency": "eur",
        ]
        if let pm = c.pm { json["payment_method"] = ["id": "pm_1", "object": "payment_method", "type": .string(pm)] }
        if let action = c.action { json["next_action"] = ["type": .string(action), .init(stringLiteral: action): [:]] }
        return .object(json)
    }

    private static func outcome(_ c: Case) throws -> IntentOutcome {
        switch c.kind {
        case .paymentIntent:
            IntentRules.outcome(of: try PaymentIntent(json: json(c)), entry: c.entry, at: c.moment)
        case .setupIntent:
            IntentRules.outcome(of: try SetupIntent(json: json(c)), entry: c.entry, at: c.moment)
        }
    }

    @Test(arguments: cases) func theSDKsOutcome(_ c: Case) throws {
        #expect(try Self.outcome(c) == c.expected)
    }

    /// Each row is proved by a case above: every row matches at least one case, and that case's
    /// outcome is the row's.
    @Test func everyRowHasItsCase() throws {
        for (index, row) in IntentRules.outcomeTable.enumerated() {
            let covering = try Self.cases.filter { c in
                let status: IntentStatusCase =
                    switch c.kind {
                    case .paymentIntent: IntentStatusCase(try PaymentIntent(json: Self.json(c)))
                    case .setupIntent: IntentStatusCase(try SetupIntent(json: Self.json(c)))
                    }
                // The first matching row decides: a case proves the row it lands on.
                let first = IntentRules.outcomeTable.firstIndex { $0.matches(c.kind, c.entry, c.moment, status) }
                return first == index
            }
            #expect(!covering.isEmpty, "row \(index) (\(row.status), \(row.sdk)) has no case")
            // Each source the row names is a file and a line of stripe-ios, not a function alone.
            for source in row.sdk.split(separator: ";") {
                #expect(
                    source.range(of: #"\.swift:[0-9]+"#, options: .regularExpression) != nil,
                    "row \(index) cites \(source) without a line")
            }
        }
    }

    /// Every status at every entry point and moment has a row, for both kinds (requires_capture is
    /// a PaymentIntent's only).
    @Test func theTableIsComplete() {
        for kind in [IntentKind.paymentIntent, .setupIntent] {
            for entry in IntentEntry.allCases {
                for moment in IntentMoment.allCases {
                    for status in IntentStatusCase.allCases where !(kind == .setupIntent && status == .requiresCapture)
                    {
                        let row = IntentRules.outcomeTable.first { $0.matches(kind, entry, moment, status) }
                        #expect(row != nil, "\(kind) \(entry) \(moment) \(status)")
                    }
                }
            }
        }
    }

    /// A Source redirect's follow-up polls a pending Source and ends on any other status.
    @Test func aSourceFollowUpEndsOnAnyStatusButPending() {
        #expect(SourceOutcomes.continuesPolling(.pending))
        for status in [Source.Status.chargeable, .consumed, .failed, .canceled] {
            #expect(!SourceOutcomes.continuesPolling(status))
        }
        #expect(!SourceOutcomes.continuesPolling(nil))
    }
}
