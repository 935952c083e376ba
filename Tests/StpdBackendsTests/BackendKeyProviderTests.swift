import Foundation
import JSONRPC
import StpdBackends
import StpdCore
import StripeAPI
import StripeHTTP
import TestSupport
import Testing

let keyJSON = #"""
    {"id":"ephkey_1","object":"ephemeral_key","associated_objects":[{"id":"cus_123","type":"customer"}],
     "created":1700000000,"expires":4102444800,"livemode":false,"secret":"ek_test_YWNjdF8xMjM0NTY3ODkwYWJjZGVm"}
    """#

func withProvider(
    path: String = "/ephemeral_keys?session=abc",
    _ script: @escaping @Sendable (Int, TestHTTPServer.Received) -> TestHTTPServer.Action,
    _ body: (BackendKeyProvider, TestHTTPServer) async throws -> Void
) async throws {
    try await withServer(script) { transport, server in
        let provider = try BackendKeyProvider(url: server.baseURL + path, authorization: token, transport: transport)
        try await body(provider, server)
    }
}

@Test func keyProviderPostsTheAPIVersionFormEncodedAndReturnsTheJSON() async throws {
    try await withProvider({ _, _ in .respond(status: 200, headers: jsonHeaders, body: keyJSON) }) { provider, server in
        let result = try await provider.createCustomerKey(apiVersion: "2020-08-27")
        #expect(result == (try json(Data(keyJSON.utf8))))

        let request = try #require(server.received.first)
        #expect(server.received.count == 1)
        #expect(request.method == "POST")
        #expect(request.uri == "/ephemeral_keys?session=abc")
        #expect(request.values("Content-Type") == ["application/x-www-form-urlencoded"])
        #expect(request.values("Authorization") == [token])
        #expect(String(decoding: request.body, as: UTF8.self) == "api_version=2020-08-27")
    }
}

@Test func keyProviderFeedsTheKeyManager() async throws {
    try await withProvider({ _, _ in .respond(status: 200, body: keyJSON) }) { provider, server in
        let manager = EphemeralKeyManager(provider: provider)
        let key = try await manager.key()
        #expect(key.customerID == "cus_123")
        #expect(key.id == "ephkey_1")
        #expect(
            String(decoding: try #require(server.received.first).body, as: UTF8.self)
                == "api_version=\(StripeConfiguration.sdkAPIVersion)")
    }
}

@Test func keyProviderNamesTheStatusOfAnHTTPError() async throws {
    try await withProvider({ _, _ in .respond(status: 403, body: "Forbidden: not logged in") }) { provider, _ in
        let error = await thrown(MerchantBackendError.self) {
            _ = try await provider.createCustomerKey(apiVersion: "2020-08-27")
        }
        #expect(error?.status == 403)
        #expect(error?.method == "POST")
        #expect(error?.route == "/ephemeral_keys")
        #expect(error?.excerpt == "Forbidden: not logged in")
        #expect(error?.description.contains("HTTP 403") == true)
    }
}

@Test func keyProviderRelaysAStripeShapedError() async throws {
    let body =
        #"{"error":{"type":"invalid_request_error","message":"No such customer: 'cus_gone'","param":"customer"}}"#
    try await withProvider({ _, _ in .respond(status: 400, body: body) }) { provider, _ in
        let error = await thrown(StripeError.self) {
            _ = try await provider.createCustomerKey(apiVersion: "2020-08-27")
        }
        #expect(error?.kind == .invalidRequest)
        #expect(error?.param == "customer")
        #expect(error?.httpStatus == 400)
    }
}

@Test func keyProviderAnswerThatIsNotJSONIsAKeyDecodingError() async throws {
    try await withProvider({ _, _ in .respond(status: 200, body: "ok") }) { provider, _ in
        let error = await thrown(StripeError.self) {
            _ = try await provider.createCustomerKey(apiVersion: "2020-08-27")
        }
        #expect(error?.kind == .ephemeralKeyDecoding)
    }
}

@Test func keyProviderRetriesOnceOnADroppedConnection() async throws {
    try await withProvider({ index, _ in index == 0 ? .close : .respond(status: 200, body: keyJSON) }) {
        provider, server in
        _ = try await provider.createCustomerKey(apiVersion: "2020-08-27")
        #expect(server.received.count == 2)
    }
    try await withProvider({ _, _ in .close }) { provider, server in
        let error = await thrown(StripeError.self) {
            _ = try await provider.createCustomerKey(apiVersion: "2020-08-27")
        }
        #expect(error?.kind == .connection)
        #expect(server.received.count == 2)
    }
}

// MARK: - URL and header validation

@Test(arguments: [
    "https://shop.example.com/api", "https://shop.example.com", "https://203.0.113.7:8443/x/",
    "http://localhost:8080/api", "http://LOCALHOST/api", "http://127.0.0.1:4242", "http://127.10.0.3/",
    "http://[::1]:8080/api",
])
func acceptedURLs(url: String) throws {
    _ = try MerchantBackend(baseURL: url, authorization: token, transport: AsyncHTTPTransportStub())
    _ = try BackendKeyProvider(url: url, authorization: token, transport: AsyncHTTPTransportStub())
}

@Test(arguments: [
    ("", "not a URL"),
    ("shop.example.com/api", "not a URL"),
    ("ftp://shop.example.com/api", "not an http(s) URL"),
    ("file:///etc/passwd", "not an http(s) URL"),
    ("http://shop.example.com/api", "plain http"),
    ("http://10.0.0.5:8080/api", "plain http"),
    ("http://128.0.0.1/api", "plain http"),
    ("http://localhost.example.com/api", "plain http"),
    ("http://[::2]/api", "plain http"),
    ("https:///api", "no host"),
    ("https://user:pass@shop.example.com/api", "credentials"),
    ("http://127.0.0.1@evil.example.com/api", "credentials"),
    ("https://shop.example.com/api#frag", "fragment"),
])
func refusedURLs(url: String, reason: String) throws {
    for error in [
        #expect(throws: BackendConfigurationError.self) {
            try MerchantBackend(baseURL: url, authorization: token, transport: AsyncHTTPTransportStub())
        },
        #expect(throws: BackendConfigurationError.self) {
            try BackendKeyProvider(url: url, authorization: token, transport: AsyncHTTPTransportStub())
        },
    ] {
        let text = try #require(error).description
        #expect(text.contains(reason), "\(text)")
        #expect(!text.contains("pass@"))
    }
}

@Test func aQueryIsRefusedOnTheBaseURLButAllowedOnTheKeyURL() throws {
    let error = #expect(throws: BackendConfigurationError.self) {
        try MerchantBackend(baseURL: "https://shop.example.com/api?x=1", transport: AsyncHTTPTransportStub())
    }
    #expect(error?.setting == "merchant backend URL")
    #expect(error?.description.contains("query") == true)
    _ = try BackendKeyProvider(url: "https://shop.example.com/keys?x=1", transport: AsyncHTTPTransportStub())
}

@Test(arguments: ["", "  ", "Bearer abc\r\nX-Injected: 1", "Bearer abc\n"])
func badAuthorizationValuesAreRefused(value: String) throws {
    let error = #expect(throws: BackendConfigurationError.self) {
        try MerchantBackend(
            baseURL: "https://shop.example.com", authorization: value, transport: AsyncHTTPTransportStub())
    }
    #expect(error?.setting == "Authorization value")
    #expect(error?.description.contains("abc") == false)
    #expect(throws: BackendConfigurationError.self) {
        try BackendKeyProvider(
            url: "https://shop.example.com", authorization: value, transport: AsyncHTTPTransportStub())
    }
}

@Test func aNonPositiveTimeoutIsRefused() {
    #expect(throws: BackendConfigurationError.self) {
        try MerchantBackend(baseURL: "https://shop.example.com", timeout: .zero, transport: AsyncHTTPTransportStub())
    }
}
