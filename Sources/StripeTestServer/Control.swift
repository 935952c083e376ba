import Foundation
import JSONRPC

/// The `/_test/...` endpoints: test control, never logged, never faulted, no auth.
extension StripeTestState {
    func handleControl(_ request: TestHTTPRequest) -> TestHTTPResponse {
        let s = request.path.split(separator: "/").map(String.init)
        let m = request.method
        do throws(APIError) {
            switch (m, s.count) {
            case ("GET", 2) where s[1] == "requests":
                let q = FormDecoding.decode(request.query)
                var entries = log
                if let key = q["idempotency_key"]?.stringValue { entries = entries.filter { $0.idempotencyKey == key } }
                if let path = q["path"]?.stringValue { entries = entries.filter { $0.path.hasPrefix(path) } }
                if let method = q["method"]?.stringValue {
                    entries = entries.filter { $0.method == method.uppercased() }
                }
                return .json(
                    200, ["object": "list", "data": .array(entries.map(\.json)), "count": .int(Int64(entries.count))])
            case ("DELETE", 2) where s[1] == "requests":
                log.removeAll()
                return .json(200, ["deleted": true])
            case ("POST", 2) where s[1] == "faults":
                let json: JSONValue
                do { json = try JSONCoding.decode(JSONValue.self, from: Data(request.body)) } catch {
                    throw .invalid("the body must be a JSON fault or an array of faults")
                }
                let list = json.arrayValue ?? [json]
                var added: [Fault] = []
                for item in list { added.append(try Fault(json: item)) }
                faults.append(contentsOf: added)
                return .json(200, ["object": "list", "data": .array(faults.map(\.json))])
            case ("GET", 2) where s[1] == "faults":
                return .json(200, ["object": "list", "data": .array(faults.map(\.json))])
            case ("DELETE", 2) where s[1] == "faults":
                faults.removeAll()
                return .json(200, ["deleted": true])
            case ("POST", 2) where s[1] == "reset":
                clear()
                return .json(200, ["reset": true])
            case ("POST", 2) where s[1] == "clock":
                let json = try? JSONCoding.decode(JSONValue.self, from: Data(request.body))
                guard let advance = json?["advance"]?.intValue else { throw .missing("advance") }
                clockOffset += Int(advance)
                return .json(200, ["now": .int(Int64(now))])
            case ("GET", 2) where s[1] == "config":
                return .json(
                    200,
                    [
                        "secret_key": .string(configuration.secretKey),
                        "publishable_key": .string(configuration.publishableKey),
                        "ephemeral_key_lifetime": .int(Int64(configuration.ephemeralKeyLifetime)),
                    ])
            case ("POST", 4) where s[1] == "sources":
                return .json(200, try driveSource(s[2], s[3]))
            case ("POST", 4) where s[1] == "payment_intents" || s[1] == "setup_intents":
                guard s[2].hasPrefix(s[1] == "setup_intents" ? "seti_" : "pi_") else {
                    throw .notFound(String(s[1].dropLast()), s[2])
                }
                if s[3] == "next_action" { return .json(200, try setNextAction(s[2], request.body)) }
                return .json(200, try finishAction(s[2], try Outcome(control: s[3])))
            case ("GET", 3) where s[1] == "redirect":
                return try redirectPage(s[2], query: FormDecoding.decode(request.query))
            default:
                throw .unknownRoute(m, request.path)
            }
        } catch {
            return .json(error.status, error.body)
        }
    }

    /// The "bank page" a redirect URL points at, and every page Stripe hosts for a next action
    /// (voucher, QR code, microdeposits). Without `action` it is an HTML page with the buttons a
    /// customer presses (`BankPage`); with `action=authorize|fail|cancel` (sources) or
    /// `succeed|fail|expire|cancel` (payment and setup intents; `cancel` leaves the intent as it is,
    /// a customer backing out) it drives the object and answers 302 to the return URL as Stripe does.
    func redirectPage(_ id: String, query: Obj) throws(APIError) -> TestHTTPResponse {
        let action = query["action"]?.stringValue
        let isSource = id.hasPrefix("src_")
        let isSetup = id.hasPrefix("seti_")
        let object = isSource ? sources[id] : isSetup ? setupIntents[id] : paymentIntents[id]
        guard let object else {
            throw .notFound(isSource ? "source" : isSetup ? "setup_intent" : "payment_intent", id)
        }
        let secret = object["client_secret"]?.stringValue ?? ""
        guard query["client_secret"]?.stringValue == secret else {
            throw .invalid("The client_secret does not match.", param: "client_secret", status: 404)
        }
        guard let action else {
            let html = BankPage(id: id, object: object, secret: secret, isSource: isSource).html
            return TestHTTPResponse(
                status: 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
                body: Array(html.utf8))
        }
        var returnURL: String?
        var items: [(String, String)]
        if isSource {
            let result = try driveSource(id, action)
            returnURL = result["redirect"]?["return_url"]?.stringValue
            items = [("client_secret", secret), ("livemode", "false"), ("source", id)]
        } else {
            returnURL =
                pendingActions[id]?.returnURL ?? object["next_action"]?["redirect_to_url"]?["return_url"]?.stringValue
            let result: JSONValue
            if action == "cancel" {
                result = .object(object)
            } else if holdsResult(object) {
                // Back from Cash App or Klarna: the intent learns the result late (see PendingAction.held).
                let outcome = try Outcome(control: action)
                pendingActions[id, default: PendingAction()].held = outcome
                pendingActions[id]?.heldUntil = now + Self.heldSeconds
                var shown = object
                if case .succeed = outcome { shown["status"] = "succeeded" }
                result = .object(shown)
            } else {
                result = try finishAction(id, try Outcome(control: action))
            }
            let kind = isSetup ? "setup_intent" : "payment_intent"
            items = [
                (kind, id), ("\(kind)_client_secret", secret),
                ("redirect_status", result["status"]?.stringValue == "succeeded" ? "succeeded" : "failed"),
            ]
        }
        guard let returnURL else {
            return .json(200, .object((isSource ? sources[id] : isSetup ? setupIntents[id] : paymentIntents[id])!))
        }
        let query = items.map { "\($0.0)=\(FormEncoderBridge.escape($0.1))" }.joined(separator: "&")
        let location = returnURL + (returnURL.contains("?") ? "&" : "?") + query
        return TestHTTPResponse(status: 302, headers: [("Location", location)])
    }
}
