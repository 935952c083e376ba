import Foundation
import NIOSSL
import PostgresNIO

/// Where the fleet's database is, from `STPD_DATABASE_URL`, and how to reach it:
/// - `postgresql://USER@/DB?host=/run/postgresql` (or `%2Frun%2Fpostgresql` as the host):
///   the server's Unix socket in that directory (`.s.PGSQL.PORT`), no TLS;
/// - `postgresql://USER@HOST[:PORT]/DB`: TCP, always with TLS, verified against the system's
///   roots (`sslrootcert=FILE` adds a CA, `sslmode=verify-ca` skips the host name check).
/// The password never comes from the URL (it would show in `ps` and the unit): a URL with one
/// is refused; it comes from a file or a systemd credential (`password`).
public struct PostgresLocation: Sendable, CustomStringConvertible {
    public var user: String
    public var database: String
    public var port: Int
    public enum Endpoint: Sendable, Equatable {
        case socket(directory: String)
        case tls(host: String, rootCertificate: String?, verifyHost: Bool)
    }
    public var endpoint: Endpoint
    public var password: String?

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    public init(url: String, password: String?) throws {
        guard let components = URLComponents(string: url), ["postgresql", "postgres"].contains(components.scheme)
        else { throw Invalid(description: "not a postgresql:// URL") }
        if components.password != nil {
            throw Invalid(description: "the URL holds a password: give it in a file or a credential instead")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let known: Set = ["host", "sslmode", "sslrootcert", "port"]
        if let unknown = query.keys.first(where: { !known.contains($0) }) {
            throw Invalid(description: "unknown URL parameter \(unknown)")
        }
        user = components.user ?? NSUserName()
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? user : path
        port = components.port ?? query["port"].flatMap(Int.init) ?? 5432
        let host = query["host"] ?? components.host.flatMap { $0.removingPercentEncoding } ?? ""
        if host.hasPrefix("/") {
            endpoint = .socket(directory: host)
        } else if host.isEmpty {
            throw Invalid(description: "no host: give host=/socket/directory or a host name")
        } else {
            let mode = query["sslmode"] ?? "verify-full"
            guard ["require", "verify-ca", "verify-full"].contains(mode) else {
                throw Invalid(description: "sslmode=\(mode): over TCP the connection must use TLS")
            }
            // "require" is libpq's name for encryption; stpd verifies the server all the same.
            endpoint = .tls(host: host, rootCertificate: query["sslrootcert"], verifyHost: mode != "verify-ca")
        }
        self.password = password
    }

    /// The URL without secrets (it never holds the password): for daemon.status and the log.
    public var description: String {
        switch endpoint {
        case .socket(let directory):
            "postgresql://\(user)@/\(database)?host=\(directory)&port=\(port)"
        case .tls(let host, _, _):
            "postgresql://\(user)@\(host):\(port)/\(database)"
        }
    }

    var configuration: PostgresClient.Configuration {
        get throws {
            var configuration: PostgresClient.Configuration
            switch endpoint {
            case .socket(let directory):
                configuration = PostgresClient.Configuration(
                    unixSocketPath: "\(directory)/.s.PGSQL.\(port)", username: user, password: password,
                    database: database)
            case .tls(let host, let rootCertificate, let verifyHost):
                var tls = TLSConfiguration.makeClientConfiguration()
                if let rootCertificate {
                    tls.trustRoots = .file(rootCertificate)
                }
                tls.certificateVerification = verifyHost ? .fullVerification : .noHostnameVerification
                configuration = PostgresClient.Configuration(
                    host: host, port: port, username: user, password: password, database: database,
                    tls: .require(tls))
            }
            configuration.options.connectTimeout = .seconds(5)
            configuration.options.maximumConnections = 16
            return configuration
        }
    }
}
