import Foundation
import StripeAPI
import Testing

@testable import StpdDaemon

/// The Stripe settings: key sources and their order, key validation, the API base, and that the
/// key never shows in anything printable.
@Suite final class StripeConfigurationTests {
    let directory: URL
    /// Long enough that `StripeKey.redact` shows the last four, so a leak cannot hide behind a short key.
    let secretKey = "sk_live_51HbQxLKj2s9dFh3kPzR7yT0vWq"
    let restrictedKey = "rk_test_51HbQxLKj2s9dFh3kFILEFILEab"
    let publishableKey = "pk_test_51HbQxLKj2s9dFh3kENVENVabcd"

    init() throws {
        directory = try TrustedFiles.directory("stpd-stripe")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// Writes `text` to `name` in the test directory with `mode`; returns the path.
    @discardableResult
    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let url = directory.appendingPathComponent(name)
        try TrustedFiles.make(directoryAt: url.deletingLastPathComponent().path)
        try text.write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        return url.path
    }

    /// Resolves with an explicit (by default empty) config file, so no real one is read.
    func resolve(
        flags: [String: String] = [:], environment: [String: String] = [:], configText: String = ""
    ) throws -> DaemonConfiguration {
        let config = try write("stpd.conf", configText)
        var env = environment
        env["HOME"] = env["HOME"] ?? directory.path
        return try DaemonConfiguration.resolve(flags: flags, environment: env, configFile: config)
    }

    func configurationError(_ body: () throws -> DaemonConfiguration) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as ConfigurationError {
            return error.description
        } catch {
            return "unexpected \(error)"
        }
    }

    // MARK: defaults

    @Test func defaultsWithoutStripeSettings() throws {
        let c = try resolve()
        #expect(c.stripeAPIBase == "https://api.stripe.com")
        #expect(c.stripeTimeout == .seconds(30))
        #expect(c.stripeAccount == nil)
        #expect(c.stripeKeyFile == nil)
        #expect(c.stripeKey == nil, "no key is allowed: stpd serves, Stripe methods answer 3009")
        #expect(c.stripeKeySource == nil)
        #expect(c.warnings.isEmpty)
    }

    // MARK: key sources

    @Test func credentialThenKeyFileThenSetting() throws {
        let credentials = directory.appendingPathComponent("credentials").path
        try write("credentials/stripe-key", secretKey + "\n")
        let keyFile = try write("key", restrictedKey)
        let env = ["CREDENTIALS_DIRECTORY": credentials, "STPD_STRIPE_KEY": publishableKey]

        let all = try resolve(flags: ["STPD_STRIPE_KEY_FILE": keyFile], environment: env)
        #expect(all.stripeKey?.secret == secretKey)
        #expect(all.stripeKeySource == .credential(path: "\(credentials)/stripe-key"))
        #expect(all.warnings.count == 2, "both lower sources are reported as ignored: \(all.warnings)")
        #expect(all.warnings.contains { $0.contains("key file \(keyFile)") })
        #expect(all.warnings.contains { $0.contains("environment variable STPD_STRIPE_KEY") })

        try FileManager.default.removeItem(atPath: "\(credentials)/stripe-key")
        let fileThenEnv = try resolve(flags: ["STPD_STRIPE_KEY_FILE": keyFile], environment: env)
        #expect(
            fileThenEnv.stripeKey?.secret == restrictedKey, "a credentials directory without stripe-key falls through")
        #expect(fileThenEnv.stripeKeySource == .file(path: keyFile))

        let envOnly = try resolve(environment: env)
        #expect(envOnly.stripeKey?.secret == publishableKey)
        #expect(envOnly.stripeKeySource == .environment)
        #expect(envOnly.stripeKey?.kind == .publishable)
    }

    @Test func keyFileSettingFollowsFlagEnvironmentFilePrecedence() throws {
        let fromFlag = try write("flag-key", secretKey)
        let fromEnv = try write("env-key", restrictedKey)
        let c = try resolve(
            flags: ["STPD_STRIPE_KEY_FILE": fromFlag], environment: ["STPD_STRIPE_KEY_FILE": fromEnv])
        #expect(c.stripeKeyFile == fromFlag)
        #expect(c.stripeKey?.secret == secretKey)
        let e = try resolve(
            environment: ["STPD_STRIPE_KEY_FILE": fromEnv], configText: "STPD_STRIPE_KEY_FILE=\(fromFlag)\n")
        #expect(e.stripeKey?.secret == restrictedKey)
    }

    @Test func keyFromConfigFileWhenEnvironmentHasNone() throws {
        let c = try resolve(configText: "STPD_STRIPE_KEY=\"\(secretKey)\"\n")
        #expect(c.stripeKey?.secret == secretKey)
        guard case .configFile(let path) = c.stripeKeySource else {
            Issue.record("expected the config file as source, got \(String(describing: c.stripeKeySource))")
            return
        }
        #expect(path.hasSuffix("stpd.conf"))
        let env = try resolve(
            environment: ["STPD_STRIPE_KEY": publishableKey], configText: "STPD_STRIPE_KEY=\(secretKey)\n")
        #expect(env.stripeKey?.secret == publishableKey, "environment beats the config file")
    }

    @Test func theKeyIsNeverTakenFromFlags() throws {
        let c = try resolve(flags: ["STPD_STRIPE_KEY": secretKey])
        #expect(c.stripeKey == nil)
        #expect(DaemonConfiguration.keys.first { $0.key == "STPD_STRIPE_KEY" }?.flag == "")
        #expect(
            DaemonConfiguration.keys.allSatisfy {
                $0.flag.isEmpty || !$0.flag.contains("stripe-key") || $0.flag == "--stripe-key-file"
            })
    }

    @Test func whitespaceAroundTheKeyIsTrimmed() throws {
        let file = try write("key", "\n  \(secretKey) \t\n\n")
        #expect(try resolve(flags: ["STPD_STRIPE_KEY_FILE": file]).stripeKey?.secret == secretKey)
        #expect(
            try resolve(environment: ["STPD_STRIPE_KEY": "\t\(publishableKey)\n"]).stripeKey?.secret == publishableKey)
        let credentials = directory.appendingPathComponent("creds").path
        try write("creds/stripe-key", "\(restrictedKey)\r\n")
        #expect(try resolve(environment: ["CREDENTIALS_DIRECTORY": credentials]).stripeKey?.secret == restrictedKey)
    }

    @Test func emptySettingMeansNoKeyButEmptyFileIsAnError() throws {
        let blank = try resolve(environment: ["STPD_STRIPE_KEY": "  "], configText: "STPD_STRIPE_KEY=\(secretKey)\n")
        #expect(blank.stripeKey == nil, "a blank STPD_STRIPE_KEY in the environment unsets the config file's")
        let empty = try write("empty-key", "\n")
        let message = configurationError { try resolve(flags: ["STPD_STRIPE_KEY_FILE": empty]) }
        #expect(message == "Stripe key from key file \(empty): it is empty")
    }

    @Test func ephemeralKeyIsRefusedWithAnExplanation() throws {
        let ephemeral = "ek_test_YWNjdF8xMjM0NTY3ODkwLHNlY3JldA"
        let message = try #require(configurationError { try resolve(environment: ["STPD_STRIPE_KEY": ephemeral]) })
        #expect(message.contains("environment variable STPD_STRIPE_KEY"))
        #expect(message.contains("is an ephemeral key"))
        #expect(message.contains("publishable (pk_), secret (sk_) or restricted (rk_)"))
        #expect(!message.contains(ephemeral), "the message shows the key redacted: \(message)")
        #expect(message.contains(StripeKey.redact(ephemeral)))
    }

    @Test(arguments: ["hello", "sk_", "xx_test_abcdefgh", "sk_test_abc def", "pk_test_one\npk_test_two"])
    func textThatIsNotAKeyIsRefused(text: String) throws {
        let file = try write("key", text)
        let message = try #require(configurationError { try resolve(flags: ["STPD_STRIPE_KEY_FILE": file]) })
        #expect(message.hasPrefix("Stripe key from key file \(file): "))
        #expect(message.contains("expected one starting pk_, sk_ or rk_"))
    }

    @Test func missingKeyFileIsAnErrorNamingIt() throws {
        let path = directory.appendingPathComponent("nope").path
        let message = try #require(configurationError { try resolve(flags: ["STPD_STRIPE_KEY_FILE": path]) })
        #expect(message.contains("key file \(path): cannot read it"))
    }

    @Test func oversizedKeyFileIsRefused() throws {
        let file = try write("big", String(repeating: "a", count: 5000))
        let message = try #require(configurationError { try resolve(flags: ["STPD_STRIPE_KEY_FILE": file]) })
        #expect(message.contains("too large for a key"))
    }

    @Test func keyFileOthersCanReadLoadsWithAWarning() throws {
        let open = try write("open-key", secretKey, mode: 0o644)
        let c = try resolve(flags: ["STPD_STRIPE_KEY_FILE": open])
        #expect(c.stripeKey?.secret == secretKey, "a loose mode warns but still loads")
        #expect(c.warnings.count == 1)
        #expect(c.warnings.first?.contains(open) == true)
        #expect(c.warnings.first?.contains("0644") == true)

        let closed = try write("closed-key", secretKey, mode: 0o600)
        #expect(try resolve(flags: ["STPD_STRIPE_KEY_FILE": closed]).warnings.isEmpty)
        let groupOnly = try write("group-key", secretKey, mode: 0o640)
        #expect(try resolve(flags: ["STPD_STRIPE_KEY_FILE": groupOnly]).warnings.count == 1)
    }

    @Test func configFileHoldingTheKeyIsCheckedLikeAKeyFile() throws {
        let config = try write("open.conf", "STPD_STRIPE_KEY=\(secretKey)\n", mode: 0o644)
        let c = try DaemonConfiguration.resolve(flags: [:], environment: ["HOME": directory.path], configFile: config)
        #expect(c.stripeKey?.secret == secretKey)
        #expect(c.warnings.contains { $0.contains(config) && $0.contains("0644") })
    }

    // MARK: never printed

    @Test func keyNeverAppearsInDescriptionsOrDumps() throws {
        let file = try write("key", secretKey)
        let c = try resolve(flags: ["STPD_STRIPE_KEY_FILE": file, "STPD_STRIPE_ACCOUNT": "acct_1032D82eZvKYlo2C"])
        #expect(c.stripeKey?.secret == secretKey, "precondition: the key loaded")
        var dumped = ""
        dump(c, to: &dumped)
        let renderings = [
            String(describing: c), String(reflecting: c), "\(c)", dumped, String(describing: c.stripeKey as Any),
        ]
        for text in renderings {
            #expect(!text.contains(secretKey), "leaked in: \(text)")
            #expect(!text.contains(String(secretKey.dropFirst(8).prefix(12))), "a run of the secret leaked in: \(text)")
        }
        #expect(String(describing: c).contains(StripeKey.redact(secretKey)))
        #expect(String(describing: c).contains("acct_1032D82eZvKYlo2C"))
        #expect(String(describing: c).contains("STPD_STRIPE_API_BASE=https://api.stripe.com"))
    }

    @Test func keyNeverAppearsInErrorMessages() throws {
        // A live secret key typed into the wrong setting, and a mangled one, are reported redacted.
        let cases: [String?] = [
            configurationError { try resolve(environment: ["STPD_STRIPE_ACCOUNT": secretKey]) },
            configurationError { try resolve(environment: ["STPD_STRIPE_API_BASE": "https://\(secretKey)@x"]) },
            configurationError { try resolve(environment: ["STPD_STRIPE_KEY": "\(secretKey) trailing"]) },
            configurationError { try resolve(environment: ["STPD_STRIPE_KEY": "ek" + secretKey.dropFirst(2)]) },
        ]
        for message in cases {
            let message = try #require(message, "each case is refused")
            #expect(!message.contains(secretKey), "leaked in: \(message)")
            #expect(
                !message.contains(String(secretKey.dropFirst(8).prefix(12))),
                "a run of the secret leaked in: \(message)")
        }
    }

    // MARK: API base, account, timeout

    @Test(arguments: [
        ("https://api.stripe.com", "https://api.stripe.com"),
        ("https://api.stripe.com/", "https://api.stripe.com"),
        ("HTTPS://api.stripe.com:443", "HTTPS://api.stripe.com:443"),
        ("http://127.0.0.1:1234", "http://127.0.0.1:1234"),
        ("http://127.8.9.10:12111/", "http://127.8.9.10:12111"),
        ("http://localhost:12111", "http://localhost:12111"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("https://10.0.0.5:8443", "https://10.0.0.5:8443"),
    ])
    func acceptedAPIBases(raw: String, stored: String) throws {
        #expect(try DaemonConfiguration.validateStripeAPIBase(raw) == stored)
        let flags = ["STPD_STRIPE_API_BASE": raw, "STPD_ALLOW_INSECURE_STRIPE_BASE": "1"]
        #expect(try resolve(flags: flags).stripeAPIBase == stored)
    }

    /// Issue 24.2: plain http to Stripe (loopback only) takes STPD_ALLOW_INSECURE_STRIPE_BASE=1,
    /// the test stand-ins' switch, and never carries a live key.
    @Test func plainHTTPNeedsTheTestSwitchAndNeverTakesALiveKey() throws {
        let base = ["STPD_STRIPE_API_BASE": "http://127.0.0.1:12111"]
        let testKey = "STPD_STRIPE_KEY=sk_test_\(String(repeating: "a", count: 24))"
        let liveKey = "STPD_STRIPE_KEY=sk_live_\(String(repeating: "b", count: 24))"
        let refused = try #require(configurationError { try resolve(flags: base, configText: testKey) })
        #expect(refused.contains("STPD_ALLOW_INSECURE_STRIPE_BASE=1"))
        #expect(configurationError { try resolve(flags: base) } != nil, "without a key too: ephemeral keys go there")
        let allowed = base.merging(["STPD_ALLOW_INSECURE_STRIPE_BASE": "1"]) { $1 }
        #expect(try resolve(flags: allowed, configText: testKey).stripeAPIBase == "http://127.0.0.1:12111")
        let live = try #require(configurationError { try resolve(flags: allowed, configText: liveKey) })
        #expect(live.contains("live key") && !live.contains("bbbbbbbbbbbb"))
    }

    @Test(arguments: [
        "http://example.com", "http://10.0.0.1:8080", "http://127.0.0.1.nip.io", "http://[::2]:80",
        "http://0x7f000001", "ftp://api.stripe.com", "api.stripe.com", "not a url", "", "https://",
        "https://api.stripe.com/v1", "https://user:pw@api.stripe.com", "https://api.stripe.com?x=1",
        "https://api.stripe.com#f", "https://api.stripe.com:99999", "https://api.stripe.com:0",
        "http://127.0.0.1%2Eevil.com",
    ])
    func refusedAPIBases(raw: String) throws {
        let message = try #require(configurationError { try resolve(flags: ["STPD_STRIPE_API_BASE": raw]) })
        #expect(message.hasPrefix("STPD_STRIPE_API_BASE="))
    }

    @Test func plainHTTPRefusalSaysWhy() throws {
        let message = try #require(
            configurationError { try resolve(flags: ["STPD_STRIPE_API_BASE": "http://example.com"]) })
        #expect(message.contains("plain http is allowed only for a loopback host"))
    }

    @Test func accountAndTimeout() throws {
        let c = try resolve(flags: ["STPD_STRIPE_ACCOUNT": "acct_1032D82eZvKYlo2C", "STPD_STRIPE_TIMEOUT": "5"])
        #expect(c.stripeAccount == "acct_1032D82eZvKYlo2C")
        #expect(c.stripeTimeout == .seconds(5))
        #expect(try resolve(environment: ["STPD_STRIPE_ACCOUNT": ""]).stripeAccount == nil)
        for bad in ["cus_123", "acct_", "acct_1\r\nX-Evil: 1", "acct_ 1"] {
            #expect(
                configurationError { try resolve(flags: ["STPD_STRIPE_ACCOUNT": bad]) }?.hasPrefix(
                    "STPD_STRIPE_ACCOUNT=") == true, "\(bad)")
        }
        for bad in ["0", "-3", "soon"] {
            #expect(
                configurationError { try resolve(flags: ["STPD_STRIPE_TIMEOUT": bad]) }?.hasPrefix(
                    "STPD_STRIPE_TIMEOUT=") == true, "\(bad)")
        }
    }

    @Test func everyStripeKeyIsListed() {
        let listed = Set(DaemonConfiguration.keys.map(\.key))
        for key in [
            "STPD_STRIPE_API_BASE", "STPD_STRIPE_KEY_FILE", "STPD_STRIPE_KEY", "STPD_STRIPE_ACCOUNT",
            "STPD_STRIPE_TIMEOUT",
        ] {
            #expect(listed.contains(key), "\(key) missing from DaemonConfiguration.keys")
        }
    }
}
