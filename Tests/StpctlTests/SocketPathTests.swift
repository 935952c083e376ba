import StpctlKit
import Testing

@Suite struct SocketPathTests {
    let user: UInt32 = 1000
    let everything = ["STPD_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/1000"]
    let present: (String) -> Bool = { _ in true }
    let absent: (String) -> Bool = { _ in false }

    @Test func theOptionWinsOverEverything() {
        #expect(SocketPath.resolve(explicit: "/flag.sock", environment: everything, uid: user) == "/flag.sock")
        #expect(SocketPath.resolve(explicit: "/flag.sock", environment: everything, uid: 0) == "/flag.sock")
    }

    @Test func theEnvironmentVariableComesNext() {
        #expect(SocketPath.resolve(explicit: nil, environment: everything, uid: user) == "/env.sock")
        #expect(SocketPath.resolve(explicit: nil, environment: everything, uid: 0) == "/env.sock")
    }

    @Test func aUserGetsTheRuntimeDirectoryWhenItsSocketExists() {
        let env = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        var asked: [String] = []
        let path = SocketPath.resolve(explicit: nil, environment: env, uid: user) {
            asked.append($0)
            return true
        }
        #expect(path == "/run/user/1000/stpd.sock")
        #expect(asked == ["/run/user/1000/stpd.sock"])
    }

    // As the Python, Node and Go clients do: no per-user instance, so the system one.
    @Test func aUserWithoutAPerUserSocketGetsTheSystemOne() {
        let env = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(SocketPath.resolve(explicit: nil, environment: env, uid: user, exists: absent) == "/run/stpd/stpd.sock")
        #expect(
            SocketPath.resolve(explicit: nil, environment: [:], uid: user, exists: present) == "/run/stpd/stpd.sock")
        #expect(
            SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": ""], uid: user, exists: present)
                == "/run/stpd/stpd.sock")
    }

    // Where stpd binds as root, even when root's session has a runtime directory.
    @Test func rootGetsTheSystemSocket() {
        #expect(SocketPath.resolve(explicit: nil, environment: [:], uid: 0) == "/run/stpd/stpd.sock")
        #expect(
            SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/0"], uid: 0, exists: present)
                == "/run/stpd/stpd.sock")
    }

    @Test func emptyValuesCountAsUnset() {
        let env = ["STPD_SOCKET": "", "XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(
            SocketPath.resolve(explicit: "", environment: env, uid: user, exists: present) == "/run/user/1000/stpd.sock"
        )
    }
}
