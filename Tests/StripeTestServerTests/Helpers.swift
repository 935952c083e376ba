import Foundation
import JSONRPC
import StripeAPI
import StripeTestServer

#if canImport(Glibc)
    import Glibc
#endif

let sk = StripeTestServerConfiguration().secretKey
let pk = StripeTestServerConfiguration().publishableKey

struct Reply {
    var status: Int
    var json: JSONValue
    var raw: TestHTTPResponse

    func header(_ name: String) -> String? { raw.headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    var error: JSONValue? { json["error"] }
    subscript(_ key: String) -> JSONValue? { json[key] }
}

/// Sends one request through the core, form-encoding `form` with the client's own encoder.
@discardableResult
func call(
    _ state: StripeTestState, _ method: String, _ path: String, key: String? = sk,
    form: [String: JSONValue] = [:], headers: [String: String] = [:]
) async -> Reply {
    var h = headers
    if let key { h["Authorization"] = "Bearer \(key)" }
    h["Host"] = h["Host"] ?? "127.0.0.1:12111"
    let encoded = FormEncoder.encode(form)
    let request =
        method == "GET" || method == "DELETE"
        ? TestHTTPRequest(method: method, path: path, query: encoded, headers: h)
        : TestHTTPRequest(
            method: method, path: path,
            headers: h.merging(["Content-Type": "application/x-www-form-urlencoded"]) { a, _ in a },
            body: Array(encoded.utf8))
    let response = await state.handle(request)
    let json = (try? JSONCoding.decode(JSONValue.self, from: Data(response.body))) ?? .null
    return Reply(status: response.status, json: json, raw: response)
}

/// Sends JSON to a `/_test/...` control endpoint.
@discardableResult
func control(_ state: StripeTestState, _ method: String, _ path: String, json: JSONValue? = nil) async -> Reply {
    let body = json.map { Array((try? JSONCoding.encode($0)) ?? Data()) } ?? []
    let parts = path.split(separator: "?", maxSplits: 1).map(String.init)
    let response = await state.handle(
        TestHTTPRequest(
            method: method, path: parts[0], query: parts.count > 1 ? parts[1] : "",
            headers: ["Host": "127.0.0.1:12111"], body: body))
    let decoded = (try? JSONCoding.decode(JSONValue.self, from: Data(response.body))) ?? .null
    return Reply(status: response.status, json: decoded, raw: response)
}

func makeCustomer(_ state: StripeTestState) async -> String {
    await call(state, "POST", "/v1/customers", form: ["email": "jenny@example.com"])["id"]!.stringValue!
}

func makeEphemeralKey(_ state: StripeTestState, customer: String) async -> String {
    await call(
        state, "POST", "/v1/ephemeral_keys", form: ["customer": .string(customer)],
        headers: ["Stripe-Version": "2020-08-27"])["secret"]!.stringValue!
}

// MARK: A tiny blocking HTTP/1.1 client over a TCP socket (run off the cooperative pool).

struct RawHTTPResult: Sendable {
    var bytes: [UInt8]
    var text: String { String(decoding: bytes, as: UTF8.self) }
    var status: Int? {
        guard text.hasPrefix("HTTP/1.1 ") else { return nil }
        return Int(text.dropFirst(9).prefix(3))
    }
    var body: String {
        guard let r = text.range(of: "\r\n\r\n") else { return "" }
        return String(text[r.upperBound...])
    }
}

enum RawHTTPError: Error { case socket(String) }

func rawHTTP(port: Int, _ request: String, timeoutSeconds: Int = 10) async throws -> RawHTTPResult {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<RawHTTPResult, Error>) in
        Thread.detachNewThread {
            continuation.resume(
                with: Result { try rawHTTPBlocking(port: port, request, timeoutSeconds: timeoutSeconds) })
        }
    }
}

private func rawHTTPBlocking(port: Int, _ request: String, timeoutSeconds: Int) throws -> RawHTTPResult {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RawHTTPError.socket("socket") }
    defer { close(fd) }
    var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard rc == 0 else { throw RawHTTPError.socket("connect errno \(errno)") }
    let bytes = Array(request.utf8)
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n > 0 else { throw RawHTTPError.socket("send errno \(errno)") }
        sent += n
    }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n > 0 {
            out.append(contentsOf: buffer[0..<n])
            continue
        }
        if n == 0 { break }
        if errno == EINTR { continue }
        if errno == ECONNRESET { break }
        throw RawHTTPError.socket("recv errno \(errno)")
    }
    return RawHTTPResult(bytes: out)
}

func httpRequest(_ method: String, _ path: String, port: Int, key: String? = sk, body: String = "") -> String {
    var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
    if let key { text += "Authorization: Bearer \(key)\r\n" }
    if method == "POST" {
        text += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n"
    }
    return text + "\r\n" + body
}
