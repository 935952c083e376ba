import Foundation

/// The files stpd takes settings and secrets from (the config file, the Stripe key file, the
/// database password file) are trusted only when nobody but root and stpd's own user can change
/// what they say, as OpenSSH requires of its files (StrictModes). stpd refuses to start on:
/// - a file writable by group or others, or owned by another user;
/// - a file reached through a symbolic link owned by another user;
/// - a file under a directory another user owns, or one group or others may write to, unless it
///   is sticky (as `/tmp` is: there nobody can replace or remove what is not theirs).
///
/// The walk checks each directory from `/` down and each link it follows, then the file is
/// opened and checked through its descriptor (`fstat`), so what is read is what was checked.
/// A device or pipe (`--config /dev/null`, a shell's `<(...)`) is judged by its owner alone:
/// writing to it does not change what is read from it.
enum FileTrust {
    enum Failure: Error {
        /// The file or the way to it can be changed by someone else.
        case untrusted(String)
        case unreadable(String)
    }

    /// Opens `path` for reading once the way to it and the file itself pass.
    static func open(_ path: String) throws(Failure) -> FileHandle {
        if let problem = walkProblem(path) { throw .untrusted(problem) }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .unreadable(String(cString: strerror(errno)))
        }
        var info = stat()
        guard fstat(handle.fileDescriptor, &info) == 0 else {
            try? handle.close()
            throw .unreadable(String(cString: strerror(errno)))
        }
        if let problem = fileProblem(info) {
            try? handle.close()
            throw .untrusted(problem)
        }
        return handle
    }

    static func trusted(_ uid: uid_t) -> Bool { uid == 0 || uid == geteuid() }

    private static func fileProblem(_ info: stat) -> String? {
        guard trusted(info.st_uid) else { return "it belongs to uid \(info.st_uid), neither root nor stpd's uid" }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG, info.st_mode & 0o022 != 0 else { return nil }
        return "its mode 0\(String(info.st_mode & 0o7777, radix: 8)) lets \(writers(info.st_mode)) change it"
    }

    private static func directoryProblem(_ path: String, _ info: stat) -> String? {
        guard trusted(info.st_uid) else {
            return "it is in \(path), which belongs to uid \(info.st_uid), neither root nor stpd's uid"
        }
        guard info.st_mode & 0o022 != 0, info.st_mode & S_ISVTX == 0 else { return nil }
        return "it is in \(path), whose mode 0\(String(info.st_mode & 0o7777, radix: 8)) lets "
            + "\(writers(info.st_mode)) replace it"
    }

    private static func writers(_ mode: mode_t) -> String {
        mode & 0o002 != 0 ? "any user" : "its group"
    }

    /// Follows the path from `/`, one entry at a time, as the kernel would.
    private static func walkProblem(_ path: String) -> String? {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var pending = absolute.split(separator: "/").map(String.init)
        var current: [String] = []
        var links = 0
        var info = stat()
        guard lstat("/", &info) == 0 else { return nil }
        if let problem = directoryProblem("/", info) { return problem }
        while !pending.isEmpty {
            let name = pending.removeFirst()
            if name == "." || name.isEmpty { continue }
            if name == ".." {
                _ = current.popLast()
                continue
            }
            let next = "/" + (current + [name]).joined(separator: "/")
            guard lstat(next, &info) == 0 else { return nil }
            switch info.st_mode & S_IFMT {
            case S_IFLNK:
                guard trusted(info.st_uid) else {
                    return "it is reached through the symbolic link \(next), which belongs to uid \(info.st_uid)"
                }
                links += 1
                guard links <= 40, let target = try? FileManager.default.destinationOfSymbolicLink(atPath: next)
                else { return nil }
                if target.hasPrefix("/") { current = [] }
                pending = target.split(separator: "/").map(String.init) + pending
            case S_IFDIR:
                current.append(name)
                if !pending.isEmpty, let problem = directoryProblem(next, info) { return problem }
            default:
                current.append(name)
            }
        }
        return nil
    }
}
