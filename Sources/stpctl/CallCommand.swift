import ArgumentParser
import JSONRPC
import StpctlKit
import StpdProtocol

/// `stpctl call METHOD [ARGS...]`: any method by name, for methods without their own command.
struct CallCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Call any method by name and print its result.",
        discussion: """
            Params are one JSON object, or key=value pairs:
              a value starting with {, [ or " is raw JSON (it must parse);
              true, false, null and numbers are JSON scalars; anything else is a string;
              dotted keys build nested objects: a.b=1 a.c=x gives {"a":{"b":1,"c":"x"}}.
            Quote a string that looks like a number or keyword as JSON: name='"42"'.

            Examples:
              stpctl call daemon.status
              stpctl call some.method id=cus_123 limit=10 metadata.order=A-7
              stpctl call some.method '{"id": "cus_123"}'
            """)

    @OptionGroup(title: "Global Options") var global: GlobalOptions

    @Argument(
        help: "Method name, e.g. \(DaemonStatusMethod.name) (stpctl discover lists them).",
        completion: .list(StpdAPI.methods.map { $0.name }))
    var method: String

    @Argument(help: ArgumentHelp("One JSON object, or key=value pairs.", valueName: "params"))
    var arguments: [String] = []

    // Checked while parsing so a malformed argument is a usage error with the usage line.
    func validate() throws {
        do { _ = try CallParams.parse(arguments) } catch { throw ValidationError(String(describing: error)) }
    }

    func run() async throws {
        let output = global.output
        let result = try await global.connection().call(method, params: try CallParams.parse(arguments))
        output.result(result) { Render.json($0, pretty: true) }
    }
}
