import ArgumentParser
import Foundation
import StpctlKit
import Testing

/// `stpctl customer open`'s adapter options, parsed as the command parses them.
private struct OpenProbe: ParsableCommand {
    @OptionGroup var adapter: CustomerAdapterOptions
}

@Suite struct CustomerAdapterOptionsTests {
    func parse(_ arguments: [String]) throws -> CustomerAdapterOptions {
        try OpenProbe.parse(arguments).adapter
    }

    /// The parse error's exit status and message, or nil when the arguments parse.
    func usageError(_ arguments: [String]) -> (ExitStatus, String)? {
        do {
            _ = try OpenProbe.parse(arguments)
            return nil
        } catch {
            return (ExitStatus.forParse(error, of: OpenProbe.self), OpenProbe.message(for: error))
        }
    }

    let noFiles: (String) throws -> String = { path in
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path])
    }

    @Test func eachAdapterAlone() throws {
        let env: [String: String] = [:]
        #expect(try parse(["--app"]).choice(environment: env) == .app)
        #expect(try parse(["--stripe-app-keys"]).choice(environment: env) == .stripeAppKeys)
        #expect(
            try parse(["--stripe-server-customer", "cus_123"]).choice(environment: env)
                == .stripeServerCustomer("cus_123"))
        #expect(
            try parse(["--stripe-key-url", "https://shop/keys"]).choice(environment: env)
                == .stripeKeyURL("https://shop/keys", authorization: nil))
        #expect(
            try parse(["--backend", "https://shop/api", "--authorization", "Bearer x"]).choice(environment: env)
                == .backend("https://shop/api", authorization: "Bearer x"))
    }

    @Test func noAdapterIsAUsageError() throws {
        let (status, message) = try #require(usageError([]))
        #expect(status == .usage)
        #expect(message.contains("give one adapter"))
        #expect(usageError(["--include-apple-pay", "--timeout-seconds", "5"])?.0 == .usage)
    }

    @Test(arguments: [
        (["--app", "--backend", "http://127.0.0.1:1/api"], "--backend and --app"),
        (["--stripe-app-keys", "--app"], "--stripe-app-keys and --app"),
        (
            ["--stripe-key-url", "https://a", "--stripe-server-customer", "cus_1"],
            "--stripe-key-url and --stripe-server-customer"
        ),
        (["--stripe-key-url", "https://a", "--backend", "https://b"], "--stripe-key-url and --backend"),
    ])
    func twoAdaptersConflict(arguments: [String], named: String) throws {
        let (status, message) = try #require(usageError(arguments))
        #expect(status == .usage)
        #expect(message.contains("\(named) cannot be used together"), "\(message)")
    }

    @Test func authorizationRules() throws {
        let both = try #require(
            usageError(["--backend", "https://b", "--authorization", "x", "--authorization-file", "/f"]))
        #expect(both.0 == .usage && both.1.contains("cannot be used together"))
        let withApp = try #require(usageError(["--app", "--authorization", "x"]))
        #expect(withApp.0 == .usage && withApp.1.contains("--authorization goes with"))
        #expect(usageError(["--stripe-app-keys", "--authorization-file", "/f"])?.0 == .usage)
        #expect(usageError(["--backend", "https://b", "--authorization", ""])?.0 == .usage)
    }

    @Test func otherValuesAreChecked() {
        #expect(usageError(["--stripe-server-customer", "bob"])?.0 == .usage)
        #expect(usageError(["--stripe-server-customer", "cus_"])?.0 == .usage)
        #expect(usageError(["--backend", ""])?.0 == .usage)
        #expect(usageError(["--app", "--timeout-seconds", "0"])?.0 == .usage)
        #expect(usageError(["--app", "--timeout-seconds", "301"])?.0 == .usage)
        #expect(usageError(["--app", "--timeout-seconds", "300"]) == nil)
        #expect(usageError(["--app", "--include-apple-pay"]) == nil)
    }

    @Test func authorizationComesFromTheFileThenTheFlagThenTheEnvironment() throws {
        let env = [CustomerAdapterOptions.authorizationVariable: "Bearer env\n"]
        let read: (String) throws -> String = { path in
            #expect(path == "/secret")
            return "Bearer file  \nsecond line ignored\n"
        }
        let fromFile = try parse(["--backend", "https://b", "--authorization-file", "/secret"])
        #expect(
            try fromFile.choice(environment: env, readFile: read) == .backend("https://b", authorization: "Bearer file")
        )
        let fromFlag = try parse(["--backend", "https://b", "--authorization", "Bearer flag"])
        #expect(
            try fromFlag.choice(environment: env, readFile: noFiles)
                == .backend("https://b", authorization: "Bearer flag"))
        let fromEnvironment = try parse(["--stripe-key-url", "https://k"])
        #expect(
            try fromEnvironment.choice(environment: env, readFile: noFiles)
                == .stripeKeyURL("https://k", authorization: "Bearer env"))
        // Adapters that send no Authorization ignore the environment.
        #expect(try parse(["--app"]).choice(environment: env, readFile: noFiles) == .app)
        #expect(
            try parse(["--backend", "https://b"]).choice(environment: [:], readFile: noFiles)
                == .backend("https://b", authorization: nil))
    }

    @Test func anUnreadableOrEmptyFileIsAUsageError() throws {
        let missing = try parse(["--backend", "https://b", "--authorization-file", "/nonexistent/token"])
        #expect {
            try missing.choice(environment: [:])
        } throws: { error in
            guard let failure = error as? StpctlFailure, case .usage(let message) = failure else { return false }
            return failure.exitStatus == .usage && message.contains("/nonexistent/token")
        }
        let empty = try parse(["--backend", "https://b", "--authorization-file", "/empty"])
        #expect(throws: StpctlFailure.usage("--authorization-file /empty is empty")) {
            try empty.choice(environment: [:], readFile: { _ in "\n" })
        }
    }
}
