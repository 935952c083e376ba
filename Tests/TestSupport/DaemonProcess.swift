import Foundation
import Synchronization

/// A child process started by a test, with its output kept in a file (a pipe nobody reads
/// could fill up and stall the child) and its exit observable without polling.
public final class ChildProcess: Sendable {
    public enum Exit: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        public var description: String {
            switch self {
            case .exited(let status): return "exited with status \(status)"
            case .signalled(let signal): return "killed by signal \(signal)"
            }
        }
    }

    public let pid: Int32
    public let outputPath: String
    private let process: Process
    private let exitStatus: ExitBox
    private let exited: Gate

    /// Shared with the termination handler, which runs before `init` has necessarily returned.
    private final class ExitBox: Sendable {
        let value = Mutex<Exit?>(nil)
    }

    public init(executable: String, arguments: [String], environment: [String: String], outputPath: String) throws {
        guard FileManager.default.createFile(atPath: outputPath, contents: nil),
            let output = FileHandle(forWritingAtPath: outputPath)
        else { throw TestSupportError.unexpected("cannot create \(outputPath)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        let status = ExitBox()
        let exited = Gate()
        process.terminationHandler = { finished in
            let exit: Exit =
                finished.terminationReason == .uncaughtSignal
                ? .signalled(finished.terminationStatus) : .exited(finished.terminationStatus)
            status.value.withLock { $0 = exit }
            exited.open()
        }
        try process.run()
        try? output.close()
        self.exitStatus = status
        self.exited = exited
        self.process = process
        self.outputPath = outputPath
        pid = process.processIdentifier
    }

    /// What the child wrote to stdout and stderr so far (for failure messages).
    public var output: String {
        (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "(no output)"
    }

    public var exit: Exit? { exitStatus.value.withLock { $0 } }

    public func signal(_ signal: Int32) {
        if exit == nil { kill(pid, signal) }
    }

    /// Waits for the child to exit; a test that needs a bound adds `.timeLimit` to itself.
    public func waitForExit() async -> Exit {
        await exited.wait()
        return exit ?? .signalled(-1)
    }
}

/// Where `swift build --build-tests` put the package's executables: next to the test bundle
/// (`.build/<triple>/debug`). `STPD_BIN_DIR` overrides it, as for the Python suite.
public func builtExecutable(_ name: String) throws -> String {
    var directories: [String] = []
    if let explicit = ProcessInfo.processInfo.environment["STPD_BIN_DIR"] { directories.append(explicit) }
    if let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        directories.append((me as NSString).deletingLastPathComponent)
    }
    if let argument = CommandLine.arguments.first {
        let absolute = argument.hasPrefix("/") ? argument : FileManager.default.currentDirectoryPath + "/" + argument
        directories.append((absolute as NSString).deletingLastPathComponent)
    }
    for directory in directories {
        let candidate = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw TestSupportError.unexpected(
        "no \(name) executable in \(directories); run `swift build --build-tests` first (or set STPD_BIN_DIR)")
}

/// A real `stpd` process on a private socket and state directory, started the way systemd
/// would start it with `Type=notify`: ready once it sends `READY=1`.
public final class StpdInstance: Sendable {
    public let directory: TemporaryDirectory
    public let socketPath: String
    public let stateDirectory: String
    public let notify: NotifySocket
    public let process: ChildProcess

    /// Starts stpd and waits for `READY=1`. The environment is scrubbed of anything that could
    /// change how it starts (systemd's socket passing, a user config file, STPD_* settings).
    public static func launch(extraArguments: [String] = [], extraEnvironment: [String: String] = [:]) async throws
        -> StpdInstance
    {
        let executable = try builtExecutable("stpd")
        let directory = try TemporaryDirectory(prefix: "stpd-e2e")
        do {
            let instance = try StpdInstance(
                executable: executable, directory: directory, extraArguments: extraArguments,
                extraEnvironment: extraEnvironment)
            do {
                try await instance.notify.waitFor("READY=1")
            } catch {
                instance.process.signal(SIGKILL)
                throw TestSupportError.unexpected(
                    "stpd did not become ready (\(error)); its output:\n\(instance.process.output)")
            }
            return instance
        } catch {
            directory.remove()
            throw error
        }
    }

    private init(
        executable: String, directory: TemporaryDirectory, extraArguments: [String], extraEnvironment: [String: String]
    ) throws {
        self.directory = directory
        socketPath = directory.appending("s.sock")
        stateDirectory = directory.appending("state")
        notify = try NotifySocket(path: directory.appending("notify"))
        var environment = ProcessInfo.processInfo.environment.filter { key, _ in
            !key.hasPrefix("STPD_") && !key.hasPrefix("LISTEN_")
                && !["NOTIFY_SOCKET", "JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID", "STATE_DIRECTORY"].contains(
                    key)
        }
        environment["NOTIFY_SOCKET"] = notify.path
        environment["XDG_CONFIG_HOME"] = directory.appending("config")
        environment.merge(extraEnvironment) { _, new in new }
        process = try ChildProcess(
            executable: executable,
            arguments: ["--socket", socketPath, "--state-dir", stateDirectory] + extraArguments,
            environment: environment,
            outputPath: directory.appending("output.log"))
    }

    /// SIGTERM, then waits for the exit.
    public func terminate() async -> ChildProcess.Exit {
        process.signal(SIGTERM)
        return await process.waitForExit()
    }

    /// Kills the process if it still runs and removes its directory.
    public func cleanUp() async {
        if process.exit == nil {
            process.signal(SIGKILL)
            _ = await process.waitForExit()
        }
        directory.remove()
    }
}

/// Launches stpd, runs `body`, and always cleans up (kills a process still running, removes
/// the directory), whether `body` returns or throws.
public func withStpd<R: Sendable>(
    extraArguments: [String] = [], extraEnvironment: [String: String] = [:],
    _ body: @Sendable (StpdInstance) async throws -> R
) async throws -> R {
    let instance = try await StpdInstance.launch(extraArguments: extraArguments, extraEnvironment: extraEnvironment)
    let result: Result<R, any Error>
    do { result = .success(try await body(instance)) } catch { result = .failure(error) }
    await instance.cleanUp()
    return try result.get()
}
