import ArgumentParser
import Foundation
import JSONRPC
import RPCTransport
import StpctlKit

// A custom main rather than Stpctl.main(): ArgumentParser exits 64 on usage errors and 1 on
// anything else, while stpctl's statuses (ExitStatus) tell scripts what went wrong.
// In a function rather than top-level code: there, `run()` on `any AsyncParsableCommand`
// resolved to the synchronous overload, which only prints help.
enum Main {
    static func run() async -> Never {
        let command: any ParsableCommand
        do {
            command = try await Stpctl.asyncParseAsRoot()
        } catch {
            // Help, --version and completion scripts arrive here too; ArgumentParser prints them.
            if ExitStatus.forParse(error, of: Stpctl.self) == .success { Stpctl.exit(withError: error) }
            Output.write(Stpctl.fullMessage(for: error), to: .standardError)
            exit(ExitStatus.usage.rawValue)
        }
        do {
            try await execute(command)
            exit(ExitStatus.success.rawValue)
        } catch {
            let status = ExitStatus.forRun(error, of: Stpctl.self)
            switch error {
            case _ where status == .success:
                Stpctl.exit(withError: error)  // help: `stpctl`, `stpctl --help`, `stpctl help ping`
            case let reply as RPCError:
                ((command as? any ClientCommand)?.global.output ?? Output(forceJSON: false)).failure(reply)
            case is StpctlFailure, is RPCClientError:
                Output.diagnostic(String(describing: error))
            default:
                Output.write(Stpctl.fullMessage(for: error), to: .standardError)
            }
            exit(status.rawValue)
        }
    }

    static func execute(_ command: any ParsableCommand) async throws {
        if var command = command as? any AsyncParsableCommand {
            try await command.run()
        } else {
            var command = command
            try command.run()
        }
    }
}

await Main.run()
