import JSONRPC
import Testing

@testable import StripeTestServer

/// `GET /edge-internal/card-metadata`, as test mode answers the SDK's `STPBINRange.retrieve`.
@Suite struct CardMetadataTests {
    let path = "/edge-internal/card-metadata"

    @Test func theNineteenDigitUnionPayPrefixHasItsRange() async {
        let state = StripeTestState()
        let known = await call(state, "GET", path, key: pk, form: ["key": .string(pk), "bin_prefix": "620550"])
        #expect(known.status == 200)
        let range = known["data"]?.arrayValue?.first
        #expect(range?["pan_length"] == 19 && range?["brand"] == "UNIONPAY")
        #expect(range?["account_range_low"] == "6205500000000000000")
        let unknown = await call(state, "GET", path, key: pk, form: ["key": .string(pk), "bin_prefix": "620000"])
        #expect(unknown.status == 200 && unknown["data"] == [])
    }

    @Test func badRequestsAreRefused() async {
        let state = StripeTestState()
        #expect(await call(state, "GET", path, key: pk, form: ["bin_prefix": "620550"]).status == 400)
        #expect(
            await call(state, "GET", path, key: pk, form: ["key": "pk_test_other", "bin_prefix": "620550"]).status
                == 400)
        #expect(
            await call(state, "GET", path, key: pk, form: ["key": .string(pk), "bin_prefix": "62055"]).status == 400)
        #expect(
            await call(state, "GET", path, key: pk, form: ["key": .string(pk), "bin_prefix": "62055x"]).status == 400)
        #expect(
            await call(state, "GET", path, key: nil, form: ["key": .string(pk), "bin_prefix": "620550"]).status == 401)
    }
}
