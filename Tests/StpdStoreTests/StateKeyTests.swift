import Foundation
import StpdStore
import Testing

/// Where the state key comes from and how its file is guarded.
@Suite("StateKey")
struct StateKeyTests {
    func withDirectory(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stpd-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try body(dir.path)
    }

    func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test func createdOnceOwnerOnlyThenReused() throws {
        try withDirectory { dir in
            let first = try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: false)
            #expect(first.source == .created(path: "\(dir)/state-key"))
            #expect(first.warnings.isEmpty)
            #expect(try mode("\(dir)/state-key") == 0o600)
            let text = try String(contentsOfFile: "\(dir)/state-key", encoding: .utf8)
            #expect(text.count == 65 && text.hasSuffix("\n"))
            let second = try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: true)
            #expect(second.source == .file(path: "\(dir)/state-key"))
            #expect(second.sealer.keyID == first.sealer.keyID)
            let sealed = try first.sealer.seal("{}", for: "x")
            #expect(try second.sealer.open(sealed, for: "x") == "{}")
            // No temporary file is left behind.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["state-key"])
        }
    }

    @Test func aNewKeyBesideAnExistingDatabaseIsWorthAWarning() throws {
        try withDirectory { dir in
            let key = try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: true)
            #expect(key.warnings.count == 1)
            #expect(key.warnings.first?.contains("cannot be read") == true)
        }
    }

    @Test func theCredentialComesFirst() throws {
        try withDirectory { dir in
            let credentials = "\(dir)/credentials"
            try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
            let hex = String(repeating: "ab", count: 32)
            try "\(hex)\n".write(toFile: "\(credentials)/state-key", atomically: true, encoding: .utf8)
            let key = try StateKey.load(stateDirectory: dir, credentialsDirectory: credentials, databaseExists: false)
            #expect(key.source == .credential(path: "\(credentials)/state-key"))
            #expect(!FileManager.default.fileExists(atPath: "\(dir)/state-key"), "no file is created beside it")
            // 32 raw bytes are the same key as their 64 hex digits.
            try Data(repeating: 0xab, count: 32).write(to: URL(fileURLWithPath: "\(credentials)/state-key"))
            let raw = try StateKey.load(stateDirectory: dir, credentialsDirectory: credentials, databaseExists: false)
            #expect(raw.sealer.keyID == key.sealer.keyID)
            // A different key file beside the database is reported, not used.
            try String(repeating: "cd", count: 32).write(toFile: "\(dir)/state-key", atomically: true, encoding: .utf8)
            let both = try StateKey.load(stateDirectory: dir, credentialsDirectory: credentials, databaseExists: true)
            #expect(both.sealer.keyID == key.sealer.keyID)
            #expect(both.warnings.count == 1)
        }
    }

    @Test func aWideModeIsNarrowedWithAWarning() throws {
        try withDirectory { dir in
            _ = try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: false)
            chmod("\(dir)/state-key", 0o644)
            let key = try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: true)
            #expect(key.warnings == ["\(dir)/state-key had mode 0644; it is 0600 again"])
            #expect(try mode("\(dir)/state-key") == 0o600)
        }
    }

    @Test func whatIsNotAKeyFileIsRefusedNamingIt() throws {
        try withDirectory { dir in
            let path = "\(dir)/state-key"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            #expect(throws: StateKeyError(path: path, reason: "it is a directory")) {
                try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: false)
            }
            try FileManager.default.removeItem(atPath: path)

            try "short".write(toFile: "\(dir)/elsewhere", atomically: true, encoding: .utf8)
            symlink("\(dir)/elsewhere", path)
            let link = #expect(throws: StateKeyError.self) {
                try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: false)
            }
            #expect(link?.reason.contains("symbolic link") == true)
            try FileManager.default.removeItem(atPath: path)

            try "not a key".write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o600)
            let short = #expect(throws: StateKeyError.self) {
                try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: false)
            }
            #expect(short?.description.contains(path) == true)
            #expect(short?.description.contains("not a key") == false, "the content is never quoted")
        }
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give the file to another uid"))
    func aKeyFileOfAnotherUserIsRefused() throws {
        try withDirectory { dir in
            _ = try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: false)
            chown("\(dir)/state-key", 1001, 1001)
            let error = #expect(throws: StateKeyError.self) {
                try StateKey.load(stateDirectory: dir, credentialsDirectory: nil, databaseExists: true)
            }
            #expect(error?.reason.contains("uid 1001") == true)
        }
    }
}
