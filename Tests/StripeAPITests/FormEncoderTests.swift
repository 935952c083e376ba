import Foundation
import JSONRPC
import StripeAPI
import Testing

// Byte-exact bodies: the SDK's encoding (spec §7.2) is the contract, so each rule is pinned.

@Test func nestedObjectsUseUnescapedBrackets() {
    let body = FormEncoder.encode(["owner": ["address": ["line1": "1 Main", "city": "Berlin"], "name": "Jo"]])
    #expect(body == "owner[address][city]=Berlin&owner[address][line1]=1%20Main&owner[name]=Jo")
}

@Test func keysSortAtEveryLevel() {
    let body = FormEncoder.encode(["type": "card", "amount": 1099, "currency": "eur", "Zeta": 1])
    // Plain String ordering: upper case sorts before lower case.
    #expect(body == "Zeta=1&amount=1099&currency=eur&type=card")
}

@Test func scalarsBooleansNumbersAndNulls() {
    let body = FormEncoder.encode([
        "t": true, "f": false, "i": -42, "d": 1.5, "w": 2.0, "n": nil, "s": "",
    ])
    #expect(body == "d=1.5&f=false&i=-42&s=&t=true&w=2")
}

@Test func escapingSet() {
    // Escaped: :#[]@!$&'()*+,;= space and non-ASCII; kept: unreserved, / and ?.
    #expect(FormEncoder.escape(":#[]@!$&'()*+,;=") == "%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D")
    #expect(FormEncoder.escape("a-b._~/?c") == "a-b._~/?c")
    #expect(FormEncoder.escape("a b%\"<>\\^`{|}") == "a%20b%25%22%3C%3E%5C%5E%60%7B%7C%7D")
    #expect(FormEncoder.escape("Müller €😀") == "M%C3%BCller%20%E2%82%AC%F0%9F%98%80")
}

@Test func valuesAndKeysAreEscapedButInsertedBracketsAreNot() {
    let body = FormEncoder.encode([
        "metadata": ["a&b": "x=y+z", "k[1]": "https://e.com/r?x=1&y=2#f"],
        "q": "1+1=2 & more",
    ])
    #expect(
        body
            == "metadata[a%26b]=x%3Dy%2Bz&metadata[k%5B1%5D]=https%3A//e.com/r?x%3D1%26y%3D2%23f"
            + "&q=1%2B1%3D2%20%26%20more")
}

@Test func arraysKeepIndexOrderObjectsSortKeysAsStrings() {
    let items: [JSONValue] = (0...10).map { .int(Int64($0)) }
    let body = FormEncoder.encode(["a": .array(items), "o": ["10": "x", "2": "y"]])
    let expectedArray = (0...10).map { "a[\($0)]=\($0)" }.joined(separator: "&")
    #expect(body == expectedArray + "&o[10]=x&o[2]=y")
}

@Test func nestedArraysOfObjects() {
    let body = FormEncoder.encode([
        "source_order": [
            "items": [
                ["type": "sku", "amount": 500, "description": "T-shirt"],
                ["type": "shipping", "amount": 100, "tags": ["a", "b"]],
            ]
        ],
        "expand": ["payment_method"],
    ])
    #expect(
        body
            == "expand[0]=payment_method"
            + "&source_order[items][0][amount]=500&source_order[items][0][description]=T-shirt"
            + "&source_order[items][0][type]=sku"
            + "&source_order[items][1][amount]=100&source_order[items][1][tags][0]=a"
            + "&source_order[items][1][tags][1]=b&source_order[items][1][type]=shipping")
}

@Test func emptyContainersAndNullsAreOmitted() {
    #expect(FormEncoder.encode(["a": [], "b": [:], "c": [nil, nil], "d": "x"]) == "d=x")
    #expect(FormEncoder.encode(["a": ["x", nil, "z"]]) == "a[0]=x&a[2]=z")
    #expect(FormEncoder.encode([:]) == "")
}

@Test func queryStringForGet() {
    let params: JSONValue = ["client_secret": "src_client_secret_abc", "expand": ["x"]]
    let q = params.objectValue!
    #expect(
        FormEncoder.appendingQuery(to: "https://api.stripe.com/v1/sources/src_1", q)
            == "https://api.stripe.com/v1/sources/src_1?client_secret=src_client_secret_abc&expand[0]=x")
    #expect(FormEncoder.appendingQuery(to: "https://h/p?x=1", ["y": 2]) == "https://h/p?x=1&y=2")
    #expect(FormEncoder.appendingQuery(to: "https://h/p", [:]) == "https://h/p")
}

@Test func bodyBytes() {
    #expect(FormEncoder.encodeData(["a": "é"]) == Data("a=%C3%A9".utf8))
}
