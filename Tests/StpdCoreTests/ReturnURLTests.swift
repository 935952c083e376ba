import Testing

@testable import StpdCore

/// One row of the SDK's matching rule (spec §2.2): `registered` matched against `incoming`.
struct URLMatchCase: Sendable, CustomTestStringConvertible {
    let registered: String
    let incoming: String
    let matches: Bool
    let why: String
    var testDescription: String { "\(why): \(registered) vs \(incoming)" }
}

@Suite("ReturnURL")
struct ReturnURLTests {
    static let cases: [URLMatchCase] = [
        // The SDK's own test evidence (NSURLComponents_StripeTest.swift).
        .init(
            registered: "com.bar.foo://host", incoming: "COM.BAR.FOO://HOST", matches: true,
            why: "scheme and host ignore case"),
        .init(
            registered: "https://shop.example.com/crtABC",
            incoming: "https://shop.example.com/crtABC?redirect_merchant_name=xctest", matches: true,
            why: "extra incoming item"),
        .init(registered: "", incoming: "", matches: true, why: "empty URLs (nil == nil)"),
        // Scheme, host, path.
        .init(
            registered: "https://shop.example.com/crtABC", incoming: "https://shop.example.com/crtabc", matches: false,
            why: "path is case-sensitive"),
        .init(
            registered: "https://shop.example.com/a", incoming: "https://other.example.com/a", matches: false,
            why: "different host"),
        .init(
            registered: "https://shop.example.com/a", incoming: "http://shop.example.com/a", matches: false,
            why: "different scheme"),
        .init(registered: "myshop://r", incoming: "myshop://r/", matches: false, why: "empty path is not /"),
        .init(
            registered: "myshop://r/caf%C3%A9/%7Eme", incoming: "myshop://r/café/~me", matches: true,
            why: "path compared decoded"),
        .init(registered: "myshop://r/a%2Fb", incoming: "myshop://r/a/b", matches: true, why: "decoded %2F is a slash"),
        .init(registered: "/p?x=1", incoming: "/p?x=1&y=2", matches: true, why: "no scheme or host on either side"),
        .init(registered: "/p", incoming: "myshop:///p", matches: false, why: "nil scheme is not a scheme"),
        .init(
            registered: "https://shop.example.com/p", incoming: "https://u:pw@shop.example.com:8443/p#frag",
            matches: true, why: "user, port, fragment ignored"),
        .init(
            registered: "https://shop.example.com:443/p#a", incoming: "https://shop.example.com/p#b", matches: true,
            why: "registered port, fragment ignored"),
        // Query items: subset rule.
        .init(registered: "myshop://r?order=1", incoming: "myshop://r", matches: false, why: "registered item missing"),
        .init(registered: "myshop://r?order=1", incoming: "myshop://r?order=2", matches: false, why: "different value"),
        .init(
            registered: "myshop://r?m=Shop", incoming: "myshop://r?m=shop", matches: false,
            why: "value is case-sensitive"),
        .init(
            registered: "myshop://r?Order=1", incoming: "myshop://r?order=1", matches: false,
            why: "name is case-sensitive"),
        .init(
            registered: "myshop://r?order=1", incoming: "myshop://r?order=1&x=2", matches: true,
            why: "extra incoming items allowed"),
        .init(registered: "myshop://r?a=1&b=2", incoming: "myshop://r?b=2&a=1", matches: true, why: "order irrelevant"),
        .init(
            registered: "myshop://r?a=2", incoming: "myshop://r?a=1&a=2", matches: true,
            why: "duplicate incoming: later wins"),
        .init(
            registered: "myshop://r?a=1", incoming: "myshop://r?a=1&a=2", matches: false,
            why: "duplicate incoming: earlier lost"),
        .init(
            registered: "myshop://r?a=1&a=2", incoming: "myshop://r?a=2", matches: false,
            why: "every registered item must hold"),
        .init(registered: "myshop://r?m=a%20b", incoming: "myshop://r?m=a+b", matches: false, why: "+ is not a space"),
        .init(
            registered: "myshop://r?m=a%20b", incoming: "myshop://r?m=a%20b", matches: true,
            why: "values compared decoded"),
        // A valueless registered item: Swift's nil == nil, and the SDK's fold drops valueless items.
        .init(
            registered: "myapp://x?flag", incoming: "myapp://x?flag", matches: true, why: "valueless matches valueless"),
        .init(registered: "myapp://x?flag", incoming: "myapp://x", matches: true, why: "valueless matches absent"),
        .init(
            registered: "myapp://x?flag", incoming: "myapp://x?flag=1&flag", matches: true,
            why: "later valueless erases"),
        .init(registered: "myapp://x?flag", incoming: "myapp://x?flag=", matches: false, why: "nil is not empty"),
        .init(registered: "myapp://x?flag", incoming: "myapp://x?flag=1", matches: false, why: "nil is not a value"),
        .init(registered: "myapp://x?flag=", incoming: "myapp://x?flag", matches: false, why: "empty is not nil"),
    ]

    @Test(arguments: cases)
    func matchingRule(_ row: URLMatchCase) throws {
        let registered = try #require(ReturnURL(row.registered))
        let incoming = try #require(ReturnURL(row.incoming))
        #expect(registered.matches(incoming) == row.matches)
    }

    @Test func unparseableIsNil() {
        #expect(ReturnURL("http://x:port/") == nil)
        #expect(ReturnURL("ht tp://x") == nil)
    }

    @Test func componentsAsParsed() throws {
        let url = try #require(ReturnURL("HTTPS://Shop.Example.com/a%20b?x=1&flag&x=2"))
        #expect(url.scheme == "HTTPS")
        #expect(url.host == "Shop.Example.com")
        #expect(url.path == "/a b")
        #expect(
            url.queryItems == [
                .init(name: "x", value: "1"), .init(name: "flag", value: nil), .init(name: "x", value: "2"),
            ])
        #expect(url.queryValues == ["x": "2"])
    }
}
