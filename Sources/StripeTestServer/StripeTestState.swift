import Foundation
import JSONRPC

/// Keys and knobs of a test server.
public struct StripeTestServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var secretKey: String
    public var publishableKey: String
    /// Seconds from creation to `expires` of a minted ephemeral key.
    public var ephemeralKeyLifetime: Int
    /// The base used in redirect URLs when a request carries no Host header.
    public var fallbackBaseURL: String?

    public init(
        host: String = "127.0.0.1", port: Int = 0,
        secretKey: String = "sk_test_stpdTestServerSecretKey0001",
        publishableKey: String = "pk_test_stpdTestServerPublishable0001",
        ephemeralKeyLifetime: Int = 3600, fallbackBaseURL: String? = nil
    ) {
        self.host = host
        self.port = port
        self.secretKey = secretKey
        self.publishableKey = publishableKey
        self.ephemeralKeyLifetime = ephemeralKeyLifetime
        self.fallbackBaseURL = fallbackBaseURL
    }
}

/// The in-memory Stripe: objects, keys, idempotency records, faults and the request log. Every
/// request goes through `handle(_:)`; the HTTP layer is a thin adapter around it.
public final class StripeTestState: @unchecked Sendable {
    public let configuration: StripeTestServerConfiguration
    let lock = NSLock()

    // Objects, by id; `seq` orders lists (newest first).
    var customers: [String: Obj] = [:]
    var paymentMethods: [String: Obj] = [:]
    var paymentMethodCards: [String: TestCard] = [:]
    var sources: [String: Obj] = [:]
    var sourceCards: [String: TestCard] = [:]
    var paymentIntents: [String: Obj] = [:]
    var setupIntents: [String: Obj] = [:]
    /// Started next actions, by intent id (NextActions.swift).
    var pendingActions: [String: PendingAction] = [:]
    var ephemeralKeys: [String: Obj] = [:]  // by secret
    var created: [String: Int] = [:]  // id → creation sequence
    var sequence = 0
    var clockOffset = 0

    struct IdempotencyRecord {
        var fingerprint: String
        var response: TestHTTPResponse
    }
    var idempotency: [String: IdempotencyRecord] = [:]
    var faults: [Fault] = []
    var log: [LoggedRequest] = []

    public init(configuration: StripeTestServerConfiguration = .init()) {
        self.configuration = configuration
    }

    var now: Int { Int(Date().timeIntervalSince1970) + clockOffset }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: Swift test API

    /// Everything the log holds, oldest first.
    public var requests: [LoggedRequest] { withLock { log } }
    public func addFault(_ fault: Fault) { withLock { faults.append(fault) } }
    public var pendingFaults: [Fault] { withLock { faults } }
    /// How many requests with this idempotency key reached the server (replays included).
    public func requestCount(idempotencyKey: String) -> Int {
        withLock { log.filter { $0.idempotencyKey == idempotencyKey }.count }
    }
    public func advanceClock(seconds: Int) { withLock { clockOffset += seconds } }
    public func reset() { withLock { clear() } }

    /// Forgets every object, record, fault and logged request, and winds the clock back
    /// (`reset()`, and `POST /_test/reset`); the caller holds the lock.
    func clear() {
        customers = [:]
        paymentMethods = [:]
        paymentMethodCards = [:]
        sources = [:]
        sourceCards = [:]
        paymentIntents = [:]
        setupIntents = [:]
        pendingActions = [:]
        ephemeralKeys = [:]
        created = [:]
        idempotency = [:]
        faults = []
        log = []
        clockOffset = 0
    }
    public func object(_ id: String) -> JSONValue? {
        withLock {
            let o = customers[id] ?? paymentMethods[id] ?? sources[id] ?? paymentIntents[id] ?? setupIntents[id]
            return o.map(JSONValue.object)
        }
    }

    // MARK: Entry point

    public func handle(_ request: TestHTTPRequest) async -> TestHTTPResponse {
        if request.path.hasPrefix("/_test/") || request.path == "/_test" {
            return withLock { handleControl(request) }
        }
        let fault: Fault? = withLock {
            guard let i = faults.firstIndex(where: { $0.matches(method: request.method, path: request.path) }) else {
                return nil
            }
            let f = faults[i]
            faults[i].times -= 1
            if faults[i].times <= 0 { faults.remove(at: i) }
            return f
        }
        if let fault, fault.delayMs > 0 {
            try? await Task.sleep(for: .milliseconds(fault.delayMs))
        }
        return withLock {
            var entry = LoggedRequest(
                seq: log.count + 1, method: request.method, path: request.path, query: request.query,
                idempotencyKey: request.header("idempotency-key"), auth: .none, status: nil,
                replayed: false, fault: nil, stripeVersion: request.header("stripe-version"),
                body: String(decoding: request.body, as: UTF8.self))
            var response: TestHTTPResponse
            if let fault, !fault.afterHandling, fault.drop || fault.status != nil {
                entry.auth = authKind(request)
                response = fault.drop ? TestHTTPResponse(status: 0, drop: true) : fault.response()
                entry.fault = fault.drop ? "drop" : "status"
            } else {
                response = route(request, entry: &entry)
                if let fault {
                    if fault.drop {
                        response = TestHTTPResponse(status: 0, drop: true)
                        entry.fault = "drop"
                    } else if fault.status != nil {
                        response = fault.response()
                        entry.fault = "status"
                    } else {
                        entry.fault = "delay"
                    }
                }
            }
            entry.status = response.drop ? nil : response.status
            log.append(entry)
            response.headers.append(("Request-Id", IDs.make("req_", length: 14)))
            return response
        }
    }

    // MARK: Auth

    enum Auth {
        case secret
        case publishable
        case ephemeral(customer: String)
    }

    func bearer(_ request: TestHTTPRequest) -> String? {
        guard let header = request.header("authorization") else { return nil }
        if header.lowercased().hasPrefix("bearer ") {
            return String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        if header.lowercased().hasPrefix("basic "),
            let data = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let text = String(data: data, encoding: .utf8)
        {
            return String(text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        }
        return nil
    }

    func authKind(_ request: TestHTTPRequest) -> AuthKind {
        guard let key = bearer(request), !key.isEmpty else { return .none }
        if key == configuration.secretKey { return .secret }
        if key == configuration.publishableKey { return .publishable }
        if let ek = ephemeralKeys[key], (ek["expires"]?.intValue ?? 0) > now, ek["_revoked"] == nil {
            return .ephemeral
        }
        return .invalid
    }

    func authenticate(_ request: TestHTTPRequest) throws(APIError) -> Auth {
        guard let key = bearer(request), !key.isEmpty else {
            throw .invalid(
                "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
                status: 401)
        }
        if key == configuration.secretKey { return .secret }
        if key == configuration.publishableKey { return .publishable }
        if let ek = ephemeralKeys[key] {
            if ek["_revoked"] != nil || (ek["expires"]?.intValue ?? 0) <= now {
                throw .invalid(
                    "Expired API Key provided: \(APIError.redact(key))", code: "api_key_expired", status: 401)
            }
            if let customer = ek["associated_objects"]?.arrayValue?.first?["id"]?.stringValue {
                return .ephemeral(customer: customer)
            }
        }
        throw .invalid("Invalid API Key provided: \(APIError.redact(key))", status: 401)
    }

    enum Access: Sendable {
        case secretOnly
        case publishable  // pk or sk
        case customer  // ek or sk (the handler checks the ek's customer)
        case publishableOrCustomer
    }

    func check(_ auth: Auth, _ access: Access) throws(APIError) {
        switch (auth, access) {
        case (.secret, _): return
        case (.publishable, .publishable), (.publishable, .publishableOrCustomer): return
        case (.ephemeral, .customer), (.ephemeral, .publishableOrCustomer): return
        case (.publishable, _):
            throw .invalid(
                "This API call cannot be made with a publishable API key. Please use a secret API key. You can find a list of your API keys at https://dashboard.stripe.com/account/apikeys.",
                status: 401)
        case (.ephemeral, _):
            throw .invalid(
                "This API call cannot be made with an ephemeral API key. Please use a secret API key.", status: 401)
        }
    }

    /// An ephemeral key may only touch its own customer.
    func requireCustomerScope(_ auth: Auth, _ customer: String?) throws(APIError) {
        guard case .ephemeral(let own) = auth else { return }
        guard let customer, customer == own else {
            throw APIError(
                status: 403, type: "invalid_request_error",
                message:
                    "The provided key does not have access to this resource: an ephemeral key can only be used with the customer \(own).",
                code: "resource_missing")
        }
    }

    // MARK: Routing

    struct Call {
        var request: TestHTTPRequest
        var auth: Auth
        var params: Obj
        var pairs: [FormDecoding.Pair]
        var captures: [String]
        var baseURL: String
    }

    struct Route: Sendable {
        var method: String
        var pattern: [String]
        var access: Access
        var spec: ParamSpec
        var handler: @Sendable (StripeTestState, inout Call) throws(APIError) -> JSONValue
    }

    static let telemetry = [
        "muid", "guid", "sid", "payment_user_agent", "time_on_page", "referrer", "key", "_stripe_version",
        "_stripe_account",
    ]
    static let addressKeys = ["city", "country", "line1", "line2", "postal_code", "state"]

    static func address(_ prefix: String) -> [String] { addressKeys.map { "\(prefix)[\($0)]" } }

    static let routes: [Route] = {
        let expand = ["expand[#]"]
        let shipping =
            ["shipping[name]", "shipping[phone]", "shipping[carrier]", "shipping[tracking_number]"]
            + address("shipping[address]")
        let customerParams =
            [
                "email", "name", "description", "phone", "metadata[*]", "payment_method", "default_source", "source",
                "invoice_settings[default_payment_method]", "preferred_locales[#]", "balance", "tax_exempt",
            ]
            + shipping + address("address") + expand
        let billing =
            ["billing_details[name]", "billing_details[email]", "billing_details[phone]", "billing_details[tax_id]"]
            + address("billing_details[address]")
        let pmData =
            [
                "type", "card[number]", "card[exp_month]", "card[exp_year]", "card[cvc]", "card[token]", "metadata[*]",
                "ideal[bank]", "sepa_debit[iban]", "sofort[country]", "p24[bank]", "eps[bank]", "fpx[bank]",
                "fpx[account_holder_type]", "bancontact", "giropay", "alipay", "au_becs_debit[bsb_number]",
                "au_becs_debit[account_number]", "bacs_debit[sort_code]", "bacs_debit[account_number]",
                "boleto[tax_id]", "klarna[dob][day]", "klarna[dob][month]", "klarna[dob][year]",
                "us_bank_account[routing_number]", "us_bank_account[account_number]",
                "us_bank_account[account_holder_type]", "us_bank_account[account_type]", "allow_redisplay",
            ]
            + billing
        let pmCreate = pmData + ["customer", "payment_method"] + expand + telemetry
        // A confirmation's new PaymentMethod; with the SDK's fraud signal, as a publishable key sends it.
        let pmDataNested = (pmData + ["payment_user_agent"]).map {
            "payment_method_data[\(FormDecoding.segments(of: $0).joined(separator: "]["))]"
        }
        let sourceParams =
            [
                "type", "amount", "currency", "flow", "metadata[*]", "usage", "token", "statement_descriptor",
                "redirect[return_url]", "owner[name]", "owner[email]", "owner[phone]",
            ] + address("owner[address]")
            + [
                "card[number]", "card[cvc]", "card[exp_month]", "card[exp_year]", "card[name]",
                "card[visa_checkout][callid]",
                "card[masterpass][cart_id]", "card[masterpass][transaction_id]",
                "sepa_debit[iban]", "sofort[country]", "sofort[statement_descriptor]", "sofort[preferred_language]",
                "ideal[bank]", "ideal[statement_descriptor]", "bancontact[statement_descriptor]",
                "bancontact[preferred_language]",
                "giropay[statement_descriptor]", "three_d_secure[card]", "three_d_secure[customer]",
                "alipay[app_bundle_id]", "alipay[app_version_key]", "wechat[appid]", "wechat[statement_descriptor]",
                "klarna[**]", "source_order[**]", "p24[**]", "eps[**]", "multibanco[**]", "client_secret",
            ]
            + expand + telemetry + ["customer", "original_source", "mandate[**]", "receiver[**]"]
        let piShared =
            [
                "payment_method", "return_url", "receipt_email", "setup_future_usage", "metadata[*]", "description",
                "statement_descriptor", "statement_descriptor_suffix", "off_session", "save_payment_method",
                "payment_method_options[**]", "mandate_data[**]", "use_stripe_sdk", "source", "capture_method",
            ]
            + pmDataNested + shipping + expand
        let piCreate =
            [
                "amount", "currency", "customer", "confirm", "confirmation_method", "payment_method_types[#]",
                "automatic_payment_methods[enabled]", "automatic_payment_methods[allow_redirects]",
                "error_on_requires_action",
            ]
            + piShared
        let piConfirm = ["client_secret", "error_on_requires_action"] + piShared + telemetry
        let setiShared =
            ["payment_method", "return_url", "mandate_data[**]", "payment_method_options[**]", "use_stripe_sdk"]
            + pmDataNested + expand
        let verifyMicrodeposits = ["client_secret", "amounts[#]", "descriptor_code"] + expand + telemetry
        let setiCreate =
            ["customer", "confirm", "usage", "description", "metadata[*]", "payment_method_types[#]"] + setiShared

        return [
            Route(
                method: "POST", pattern: ["v1", "customers"], access: .secretOnly, spec: ParamSpec(customerParams),
                handler: { s, c throws(APIError) in try s.createCustomer(&c) }),
            Route(
                method: "GET", pattern: ["v1", "customers", ":id"], access: .customer, spec: ParamSpec(expand),
                handler: { s, c throws(APIError) in try s.retrieveCustomer(&c) }),
            Route(
                method: "POST", pattern: ["v1", "customers", ":id"], access: .customer, spec: ParamSpec(customerParams),
                handler: { s, c throws(APIError) in try s.updateCustomer(&c) }),
            Route(
                method: "DELETE", pattern: ["v1", "customers", ":id"], access: .secretOnly, spec: ParamSpec([]),
                handler: { s, c throws(APIError) in try s.deleteCustomer(&c) }),
            Route(
                method: "POST", pattern: ["v1", "payment_methods"], access: .publishable, spec: ParamSpec(pmCreate),
                handler: { s, c throws(APIError) in try s.createPaymentMethod(&c) }),
            Route(
                method: "GET", pattern: ["v1", "payment_methods"], access: .customer,
                spec: ParamSpec(["customer", "type", "limit", "starting_after", "ending_before"] + expand),
                handler: { s, c throws(APIError) in try s.listPaymentMethods(&c) }),
            Route(
                method: "GET", pattern: ["v1", "payment_methods", ":id"], access: .publishableOrCustomer,
                spec: ParamSpec(expand),
                handler: { s, c throws(APIError) in try s.retrievePaymentMethod(&c) }),
            Route(
                method: "POST", pattern: ["v1", "payment_methods", ":id", "attach"], access: .customer,
                spec: ParamSpec(["customer"] + expand),
                handler: { s, c throws(APIError) in try s.attachPaymentMethod(&c) }),
            Route(
                method: "POST", pattern: ["v1", "payment_methods", ":id", "detach"], access: .customer,
                spec: ParamSpec(expand),
                handler: { s, c throws(APIError) in try s.detachPaymentMethod(&c) }),
            Route(
                method: "POST", pattern: ["v1", "ephemeral_keys"], access: .secretOnly,
                spec: ParamSpec(["customer", "issuing_card", "nonce", "verification_session"] + expand),
                handler: { s, c throws(APIError) in try s.createEphemeralKey(&c) }),
            Route(
                method: "DELETE", pattern: ["v1", "ephemeral_keys", ":id"], access: .secretOnly,
                spec: ParamSpec(expand),
                handler: { s, c throws(APIError) in try s.deleteEphemeralKey(&c) }),
            Route(
                method: "GET", pattern: ["edge-internal", "card-metadata"], access: .publishable,
                spec: ParamSpec(["key", "bin_prefix"]),
                handler: { s, c throws(APIError) in try s.cardMetadata(&c) }),
            Route(
                method: "POST", pattern: ["v1", "sources"], access: .publishable, spec: ParamSpec(sourceParams),
                handler: { s, c throws(APIError) in try s.createSource(&c) }),
            Route(
                method: "GET", pattern: ["v1", "sources", ":id"], access: .publishable,
                spec: ParamSpec(["client_secret"] + expand),
                handler: { s, c throws(APIError) in try s.retrieveSource(&c) }),
            Route(
                method: "POST", pattern: ["v1", "payment_intents"], access: .secretOnly, spec: ParamSpec(piCreate),
                handler: { s, c throws(APIError) in try s.createPaymentIntent(&c) }),
            Route(
                method: "GET", pattern: ["v1", "payment_intents", ":id"], access: .publishable,
                spec: ParamSpec(["client_secret"] + expand),
                handler: { s, c throws(APIError) in try s.retrievePaymentIntent(&c) }),
            Route(
                method: "POST", pattern: ["v1", "payment_intents", ":id", "confirm"], access: .publishable,
                spec: ParamSpec(piConfirm),
                handler: { s, c throws(APIError) in try s.confirmPaymentIntent(&c) }),
            Route(
                method: "POST", pattern: ["v1", "payment_intents", ":id", "verify_microdeposits"], access: .publishable,
                spec: ParamSpec(verifyMicrodeposits),
                handler: { s, c throws(APIError) in try s.verifyMicrodeposits(&c) }),
            Route(
                method: "POST", pattern: ["v1", "payment_intents", ":id", "refresh"], access: .publishable,
                spec: ParamSpec(["client_secret"] + expand),
                handler: { s, c throws(APIError) in try s.refreshIntent(&c) }),
            Route(
                method: "POST", pattern: ["v1", "payment_intents", ":id", "cancel"], access: .secretOnly,
                spec: ParamSpec(["cancellation_reason"] + expand),
                handler: { s, c throws(APIError) in try s.cancelPaymentIntent(&c) }),
            Route(
                method: "POST", pattern: ["v1", "setup_intents"], access: .secretOnly, spec: ParamSpec(setiCreate),
                handler: { s, c throws(APIError) in try s.createSetupIntent(&c) }),
            Route(
                method: "GET", pattern: ["v1", "setup_intents", ":id"], access: .publishable,
                spec: ParamSpec(["client_secret"] + expand),
                handler: { s, c throws(APIError) in try s.retrieveSetupIntent(&c) }),
            Route(
                method: "POST", pattern: ["v1", "setup_intents", ":id", "confirm"], access: .publishable,
                spec: ParamSpec(["client_secret"] + setiShared + telemetry),
                handler: { s, c throws(APIError) in try s.confirmSetupIntent(&c) }),
            Route(
                method: "POST", pattern: ["v1", "setup_intents", ":id", "refresh"], access: .publishable,
                spec: ParamSpec(["client_secret"] + expand),
                handler: { s, c throws(APIError) in try s.refreshIntent(&c) }),
            Route(
                method: "POST", pattern: ["v1", "setup_intents", ":id", "verify_microdeposits"], access: .publishable,
                spec: ParamSpec(verifyMicrodeposits),
                handler: { s, c throws(APIError) in try s.verifyMicrodeposits(&c) }),
        ]
    }()

    static func match(_ pattern: [String], _ segments: [String]) -> [String]? {
        guard pattern.count == segments.count else { return nil }
        var captures: [String] = []
        for (p, s) in zip(pattern, segments) {
            if p.hasPrefix(":") { captures.append(s) } else if p != s { return nil }
        }
        return captures
    }

    func baseURL(_ request: TestHTTPRequest) -> String {
        if let host = request.header("host"), !host.isEmpty { return "http://\(host)" }
        return configuration.fallbackBaseURL ?? "http://\(configuration.host):\(configuration.port)"
    }

    /// Auth, route, parameters, idempotency; the log entry is filled in as it goes.
    func route(_ request: TestHTTPRequest, entry: inout LoggedRequest) -> TestHTTPResponse {
        entry.auth = authKind(request)
        let version = request.header("stripe-version")
        var extraHeaders: [(String, String)] = [("Stripe-Version", version ?? "2020-08-27")]
        if let key = request.header("idempotency-key") { extraHeaders.append(("Idempotency-Key", key)) }
        func fail(_ e: APIError) -> TestHTTPResponse { .json(e.status, e.body, headers: extraHeaders) }

        let segments = request.path.split(separator: "/").map(String.init)
        let candidates = Self.routes.compactMap { r in Self.match(r.pattern, segments).map { (r, $0) } }
        guard !candidates.isEmpty else { return fail(.unknownRoute(request.method, request.path)) }
        guard let (route, captures) = candidates.first(where: { $0.0.method == request.method }) else {
            return fail(.unknownRoute(request.method, request.path))
        }
        let auth: Auth
        do throws(APIError) {
            auth = try authenticate(request)
            try check(auth, route.access)
        } catch {
            return fail(error)
        }
        var pairs = FormDecoding.pairs(request.query)
        if request.method == "POST" { pairs += FormDecoding.pairs(String(decoding: request.body, as: UTF8.self)) }
        let unknown = route.spec.unknown(in: pairs)
        if !unknown.isEmpty { return fail(.unknownParameters(unknown)) }

        // Idempotency: POSTs only, keyed by the key; the fingerprint is the route and its params.
        let idemKey = request.method == "POST" ? request.header("idempotency-key") : nil
        let fingerprint =
            request.method + " " + request.path + "?"
            + pairs.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "&")
        if let idemKey, let record = idempotency[idemKey] {
            guard record.fingerprint == fingerprint else {
                return fail(
                    APIError(
                        status: 400, type: "idempotency_error",
                        message:
                            "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '\(idemKey)' if you meant to execute a different request."
                    ))
            }
            entry.replayed = true
            var replay = record.response
            replay.headers.append(("Idempotent-Replayed", "true"))
            return replay
        }

        var call = Call(
            request: request, auth: auth, params: FormDecoding.tree(pairs), pairs: pairs, captures: captures,
            baseURL: baseURL(request))
        let response: TestHTTPResponse
        do throws(APIError) {
            let value = try route.handler(self, &call)
            response = .json(200, value, headers: extraHeaders)
        } catch {
            response = fail(error)
        }
        if let idemKey { idempotency[idemKey] = IdempotencyRecord(fingerprint: fingerprint, response: response) }
        return response
    }

    func nextSeq(_ id: String) {
        sequence += 1
        created[id] = sequence
    }
}
