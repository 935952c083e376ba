import JSONRPC
import StpdProtocol
import Testing

/// Params whose members exclude each other (`JSONSchema.exactlyOne(of:)`): the router refuses two
/// (or none, where one is needed) with -32602 naming both, before any handler runs; one given
/// reaches the handler as its enum case.
@Suite struct ExclusiveParamsTests {
    /// Routes `params` to `M`, whose handler hands back what it was given (re-encoded).
    private func call<M: RPCMethod>(_ method: M.Type, _ params: JSONValue) async -> Result<JSONValue, RPCError> {
        var router = MethodRouter<Void>(definitions: StpdAPI.schemas.mapValues(\.json))
        router.register(M.self) { params, _ in
            throw RPCError(code: 0, message: "reached", data: try JSONCoding.value(of: params))
        }
        let response = await router.handle(Request(id: RequestID(1), method: M.name, params: params), context: ())
        guard case .failure(let error)? = response?.outcome else { return .success(.null) }
        return error.code == 0 ? .success(error.data ?? .null) : .failure(error)
    }

    private func refused<M: RPCMethod>(
        _ method: M.Type, _ params: JSONValue, saying reason: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let outcome = await call(M.self, params)
        guard case .failure(let error) = outcome else {
            Issue.record("\(M.name) took \(params)", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == RPCError.invalidParamsCode, sourceLocation: sourceLocation)
        #expect(error.message == "Invalid params: params: \(reason)", sourceLocation: sourceLocation)
        #expect(error.data?["parameter"] == "params", sourceLocation: sourceLocation)
    }

    private func twoOf(_ a: String, _ b: String) -> String {
        "matches more than one of its alternatives (\(a), \(b)); give one"
    }

    @Test func appRequestAnswerTakesAResultOrAnError() async throws {
        await refused(
            AppRequestAnswer.self, ["request": "areq_1", "result": 1, "error": ["message": "no"]],
            saying: twoOf("result", "error"))
        await refused(
            AppRequestAnswer.self, ["request": "areq_1"],
            saying: "matches none of its alternatives (result: is required; error: is required)")
        // A null result is a result (a detach answers with one).
        #expect(
            await call(AppRequestAnswer.self, ["request": "areq_1", "result": nil])
                == .success(["request": "areq_1", "result": nil]))
        #expect(
            await call(AppRequestAnswer.self, ["request": "areq_1", "error": ["message": "no"]])
                == .success(["request": "areq_1", "error": ["message": "no"]]))
    }

    @Test func redirectCreateTakesASourceOrAPaymentIntent() async throws {
        let source: JSONValue = ["id": "src_1"]
        let intent: JSONValue = ["clientSecret": "pi_1_secret_2"]
        await refused(
            RedirectCreate.self, ["source": source, "paymentIntent": intent], saying: twoOf("source", "paymentIntent"))
        await refused(
            RedirectCreate.self, ["followUpTimeout": 1],
            saying: "matches none of its alternatives (source: is required; paymentIntent: is required)")
        #expect(await call(RedirectCreate.self, ["paymentIntent": intent]) == .success(["paymentIntent": intent]))
        // A bad member is still blamed on itself.
        if case .failure(let error) = await call(RedirectCreate.self, ["source": ["id": "nope"]]) {
            #expect(error.data?["parameter"] == "source.id")
        } else {
            Issue.record("a bad source id was taken")
        }
    }

    @Test func verifyMicrodepositsTakesAmountsOrADescriptorCode() async throws {
        let secret: JSONValue = "seti_1_secret_2"
        for method: any RPCMethod.Type in [
            IntentVerifyMicrodeposits<PaymentIntentNaming>.self, IntentVerifyMicrodeposits<SetupIntentNaming>.self,
        ] {
            let secret: JSONValue = method.name.hasPrefix("setup") ? secret : "pi_1_secret_2"
            await refused(
                method, ["clientSecret": secret, "amounts": [32, 45], "descriptorCode": "SM11AA"],
                saying: twoOf("amounts", "descriptorCode"))
            await refused(
                method, ["clientSecret": secret],
                saying: "matches none of its alternatives (amounts: is required; descriptorCode: is required)")
            #expect(
                await call(method, ["clientSecret": secret, "amounts": [32, 45]])
                    == .success(["clientSecret": secret, "amounts": [32, 45]]))
        }
    }

    @Test func paymentContextUpdateTakesAnAmountOrItemsOrNeither() async throws {
        let items: JSONValue = [["label": "x", "amount": 1]]
        await refused(
            PaymentContextUpdate.self, ["context": "pctx_1", "amount": 1, "paymentSummaryItems": items],
            saying: twoOf("amount", "paymentSummaryItems"))
        #expect(
            await call(PaymentContextUpdate.self, ["context": "pctx_1", "currency": "usd"])
                == .success(["context": "pctx_1", "currency": "usd"]))
        #expect(
            await call(PaymentContextUpdate.self, ["context": "pctx_1", "paymentSummaryItems": []])
                == .success(["context": "pctx_1", "paymentSummaryItems": []]))
    }

    /// Decoded without the router's validation, the params refuse the same cases themselves.
    @Test func theParamsRefuseTwoWithoutTheSchema() throws {
        #expect(throws: (any Error).self) {
            try JSONCoding.typed(
                RedirectCreate.Params.self,
                from: ["source": ["id": "src_1"], "paymentIntent": ["clientSecret": "pi_1_secret_2"]])
        }
        #expect(throws: (any Error).self) {
            try JSONCoding.typed(AppRequestAnswer.Params.self, from: ["request": "areq_1"])
        }
    }
}
