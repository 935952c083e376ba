import JSONRPC
import StpdCore
import StpdDaemon
import StpdProtocol
import Testing

/// How the domain's errors read to clients (WireErrors.swift): the codes and data the domain's own
/// tests (StpdCoreTests) leave to the edge.
@Suite struct DomainErrorMappingTests {
    @Test func appRequestErrorsAsClientsSeeThem() {
        let timedOut = AppRequestError.timedOut(operation: "createEphemeralKey", after: .milliseconds(1500)).rpcError
        #expect(timedOut.code == StpdErrors.appRequestTimedOut.code)
        #expect(timedOut.message.hasSuffix(": the app did not answer createEphemeralKey within 1.5 s"))
        #expect(timedOut.data == ["operation": "createEphemeralKey", "timeoutSeconds": 1.5])

        let failedError = AppRequestError.failed(message: "declined", code: nil, operation: "attachPaymentMethod")
        let failed = failedError.rpcError
        #expect(failed.code == StpdErrors.appRequestFailed.code)
        #expect(failed.message == "\(StpdErrors.appRequestFailed.message): declined")
        #expect(failed.data == ["operation": "attachPaymentMethod", "message": "declined", "code": .null])

        let malformed = AppRequestError.malformedAnswer(
            operation: "retrieveCustomer", detail: "missing required field id")
        #expect(malformed.rpcError.code == StpdErrors.appAnswerInvalid.code)
        #expect(malformed.rpcError.data == ["operation": "retrieveCustomer"])

        #expect(AppRequestError.notFound(id: "areq_1").rpcError.code == 1001)
        let finished = AppRequestError.alreadyFinished(id: "areq_1", state: "timedOut").rpcError
        #expect(finished.code == 1003)
        #expect(finished.data == ["id": "areq_1", "state": "timedOut"])

    }

    /// A database that cannot be reached is StoreUnavailable, 1010 on the wire, naming the instance.
    @Test func storeUnavailableNamesTheInstance() {
        let error = StoreUnavailable(reason: "migrations: no route", instance: "host-a")
        #expect(error.rpcError.code == StpdErrors.storeUnavailable.code)
        #expect(error.rpcError.code == 1010)
        #expect(error.rpcError.data == ["instance": "host-a"])
    }

    /// An incomplete shipping address names its first missing member as the parameter, and all of them.
    @Test func anIncompleteShippingAddressNamesItsMembers() {
        let error = DomainError.shippingAddressIncomplete(
            fields: ["phoneNumber", "postalAddress"], members: ["phone", "address.state", "address.postalCode"]
        ).rpcError
        #expect(error.code == StpdErrors.shippingAddressIncomplete.code)
        #expect(error.data?["parameter"] == "address.phone")
        #expect(error.data?["parameters"] == ["address.phone", "address.address.state", "address.address.postalCode"])
    }

    /// The codes the domain's tests name by case (StpdCoreTests), as clients see them.
    @Test func domainErrorsReadAsTheirContractErrors() {
        let cases: [(DomainError, Int)] = [
            (.notFound(.paymentContext, id: "pctx_1"), StpdErrors.notFound.code),
            (
                .notInObject(.paymentContext, id: "pctx_1", member: "paymentMethod", value: "pm_x", detail: "none"),
                StpdErrors.notFound.code
            ),
            (
                .invalidState(.paymentContext, id: "pctx_1", state: "closed", detail: "closed"),
                StpdErrors.invalidState.code
            ),
            (.invalidInput(input: "url", detail: "required"), RPCError.invalidParamsCode),
            (.disabled(setting: "STPD_OPENER", detail: "off"), StpdErrors.disabled.code),
            (.redirectUnavailable(detail: "none", data: [:]), StpdErrors.redirectUnavailable.code),
            (.redirectOpenFailed(detail: "no app", data: [:]), StpdErrors.redirectOpenFailed.code),
            (.redirectCancelled(detail: nil, data: [:]), StpdErrors.redirectCancelled.code),
            (.redirectLoadFailed(detail: nil, data: [:]), StpdErrors.redirectLoadFailed.code),
            (.pendingActionGone(action: "pact_1", detail: "gone"), 5001),
            (.pendingActionTimedOut(action: "pact_1", kind: "didCreatePaymentResult", detail: "late"), 5002),
            (.paymentFailed(detail: nil, data: [:]), StpdErrors.paymentFailed.code),
        ]
        for (error, code) in cases {
            #expect(error.rpcError.code == code, "\(error)")
        }
        let gone = DomainError.pendingActionGone(action: "pact_1", detail: "gone").rpcError
        #expect(gone.data == ["action": "pact_1"])
        let late = DomainError.pendingActionTimedOut(action: "pact_1", kind: "didUpdateShippingAddress", detail: "late")
        #expect(late.rpcError.data == ["action": "pact_1", "kind": "didUpdateShippingAddress"])
        let url = DomainError.invalidInput(input: "url", detail: "required").rpcError
        #expect(url.data?["parameter"] == "url")
        let closed = DomainError.invalidState(.redirect, id: "rdr_1", state: "closed", detail: "closed").rpcError
        #expect(closed.data?["state"] == "closed")
    }

    /// The `data` clients read: the id under the params member that names it, the setting to change,
    /// and what a payment's or a redirect's failure keeps, as it is (none when it keeps nothing).
    @Test func domainErrorsCarryTheirData() {
        #expect(DomainError.notFound(.paymentContext, id: "pctx_1").rpcError.data == ["context": "pctx_1"])
        #expect(DomainError.notFound(.redirect, id: "rdr_1").rpcError.data == ["session": "rdr_1"])
        let member = DomainError.notInObject(
            .paymentContext, id: "pctx_1", member: "paymentMethod", value: "pm_x", detail: "none")
        #expect(member.rpcError.data == ["paymentMethod": "pm_x"])
        #expect(DomainError.disabled(setting: "STPD_OPENER", detail: "off").rpcError.data == ["setting": "STPD_OPENER"])
        let declined: [String: JSONValue] = ["message": "Your card was declined", "code": "card_declined"]
        #expect(DomainError.paymentFailed(detail: "declined", data: declined).rpcError.data == .object(declined))
        #expect(DomainError.paymentFailed(detail: nil, data: [:]).rpcError.data == nil)
        let sdk: [String: JSONValue] = ["sdkDomain": "com.stripe.lib", "sdkCode": 80, "message": "Done tapped"]
        #expect(DomainError.redirectCancelled(detail: "Done tapped", data: sdk).rpcError.data == .object(sdk))
        #expect(
            DomainError.redirectUnavailable(detail: "flow", data: ["reason": "flow"]).rpcError.data == [
                "reason": "flow"
            ])
    }
}
