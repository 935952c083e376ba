import Foundation
import StpdCore

/// The merchant's name, by one rule for Sources' `redirect_merchant_name` and payment contexts'
/// `companyName`: the call's own, else STPD_MERCHANT_NAME, else the calling app's name as a customer
/// would know it. The SDK's default for both is the app's display name (`Bundle.stp_applicationName`);
/// the nearest thing a socket's peer has is its program, or for an interpreter the script it runs.
enum MerchantName {
    static func resolve(given: String?, configured: String?, caller: Caller) -> String? {
        given ?? configured ?? caller.pid.flatMap { PeerProcessName.of(pid: $0) }
    }
}

/// The calling app's name from `/proc/<pid>/cmdline`: its program's name, whole (`comm` is cut at 15
/// bytes), or for an interpreter (`python3 kiosk.py`, `node shop.js`, `java -jar till.jar`) its
/// script's, module's or main class's, never the interpreter's own. nil when the process is gone, or
/// runs an interpreter without a script (`python3 -c ...`, a REPL).
enum PeerProcessName {
    static func of(pid: Int32, procRoot: String = "/proc") -> String? {
        guard pid > 0, let data = FileManager.default.contents(atPath: "\(procRoot)/\(pid)/cmdline") else {
            return nil
        }
        return name(fromArguments: data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) })
    }

    static func name(fromArguments arguments: [String]) -> String? {
        guard let program = arguments.first.map(basename), !program.isEmpty else { return nil }
        guard let interpreter = Interpreter.named(program) else { return program }
        var rest = arguments.dropFirst()
        while let argument = rest.popFirst() {
            if let target = interpreter.naming[argument] { return rest.first.flatMap { name(of: $0, as: target) } }
            if interpreter.scriptless.contains(argument) { return nil }
            if interpreter.valued.contains(argument) {
                _ = rest.popFirst()
            } else if argument == "--" {
                return rest.first.flatMap { name(of: $0, as: interpreter.positional) }
            } else if !argument.hasPrefix("-") && !interpreter.subcommands.contains(argument) {
                return name(of: argument, as: interpreter.positional)
            }
        }
        return nil
    }

    private static func name(of argument: String, as target: Interpreter.Target) -> String? {
        let name: String
        switch target {
        case .file:
            let file = basename(argument)
            let parts = file.split(separator: ".", omittingEmptySubsequences: false)
            name =
                parts.count > 1 && scriptExtensions.contains(parts.last!.lowercased())
                ? parts.dropLast().joined(separator: ".") : file
        case .module: name = argument
        case .mainClass: name = String(argument.split(separator: ".").last ?? "")
        }
        return name.isEmpty ? nil : name
    }

    private static let scriptExtensions: Set<String> = [
        "py", "pyz", "js", "mjs", "cjs", "ts", "mts", "jar", "rb", "pl", "php", "lua", "sh", "bash",
    ]

    private static func basename(_ path: String) -> String {
        String(path.split(separator: "/").last ?? "")
    }

    /// How an interpreter's command line names what it runs.
    private struct Interpreter {
        enum Target { case file, module, mainClass }

        /// What a bare argument names: a script, or for `java` a main class.
        var positional = Target.file
        /// Before the script: `deno run`, `bun run`.
        var subcommands: Set<String> = []
        /// Code given inline: nothing to name.
        var scriptless: Set<String> = []
        /// Options whose value names what runs (`-m module`, `-jar file`).
        var naming: [String: Target] = [:]
        /// Options whose value is the next argument.
        var valued: Set<String> = []

        static func named(_ program: String) -> Interpreter? {
            switch program.prefix(while: { $0.isLetter }) {
            case "python", "pypy":
                return Interpreter(scriptless: ["-c"], naming: ["-m": .module], valued: ["-W", "-X", "-Q"])
            case "node", "nodejs":
                return Interpreter(
                    scriptless: ["-e", "--eval", "-p", "--print"],
                    valued: ["-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"])
            case "deno", "bun":
                return Interpreter(subcommands: ["run"], scriptless: ["eval", "repl", "-e", "--eval"])
            case "java":
                return Interpreter(
                    positional: .mainClass, naming: ["-jar": .file],
                    valued: ["-cp", "-classpath", "--class-path", "-p", "--module-path"])
            case "ruby", "perl":
                return Interpreter(scriptless: ["-e", "-E"], valued: ["-I", "-r"])
            case "php":
                return Interpreter(scriptless: ["-r", "-a"], valued: ["-c", "-d"])
            case "lua", "luajit":
                return Interpreter(scriptless: ["-e", "-i"], valued: ["-l"])
            case "sh", "bash", "dash", "zsh", "ksh", "mksh":
                return Interpreter(scriptless: ["-c", "-i", "-s"], valued: ["-o", "-O", "+O", "+o"])
            default:
                return nil
            }
        }
    }
}
