import StpctlKit
import Testing

@Suite struct SocketPathTests {
    let user: UInt32 = 1000
    let everything = ["STPD_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/1000"]

    @Test func theOptionWinsOverEverything() throws {
        #expect(try SocketPath.resolve(explicit: "/flag.sock", environment: everything, uid: user) == "/flag.sock")
        #expect(try SocketPath.resolve(explicit: "/flag.sock", environment: everything, uid: 0) == "/flag.sock")
    }

    @Test func theEnvironmentVariableComesNext() throws {
        #expect(try SocketPath.resolve(explicit: nil, environment: everything, uid: user) == "/env.sock")
        #expect(try SocketPath.resolve(explicit: nil, environment: everything, uid: 0) == "/env.sock")
    }

    @Test func aUserGetsTheRuntimeDirectory() throws {
        let env = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(try SocketPath.resolve(explicit: nil, environment: env, uid: user) == "/run/user/1000/stpd.sock")
    }

    // Where stpd binds as root, even when root's session has a runtime directory.
    @Test func rootGetsTheSystemSocket() throws {
        #expect(try SocketPath.resolve(explicit: nil, environment: [:], uid: 0) == "/run/stpd/stpd.sock")
        #expect(
            try SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/0"], uid: 0)
                == "/run/stpd/stpd.sock")
    }

    @Test func emptyValuesCountAsUnset() throws {
        let env = ["STPD_SOCKET": "", "XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(try SocketPath.resolve(explicit: "", environment: env, uid: user) == "/run/user/1000/stpd.sock")
    }

    @Test func withNothingToGoOnItIsAUsageErrorPointingAtTheOption() {
        #expect {
            try SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": ""], uid: user)
        } throws: { error in
            guard case .usage(let message)? = error as? StpctlFailure else { return false }
            return message.contains("--socket")
        }
    }
}
