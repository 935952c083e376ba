import JSONRPC

/// The methods of the `daemon` namespace and `rpc.discover`.
public enum Discover: RPCMethod {
    public typealias Params = NoParams
    public typealias Result = JSONValue
    public static let name = "rpc.discover"
    public static let summary = "Returns this contract: the OpenRPC document of every method, error and event."
    public static let paramsSchema = JSONSchema.empty
    public static let resultSchema = JSONSchema.object(
        ["openrpc": .string, "info": JSONSchema(["type": "object"]), "methods": JSONSchema(["type": "array"])],
        required: ["openrpc", "info", "methods"], additionalProperties: true,
        description: "An OpenRPC 1.3 document.")
}

public enum Ping: RPCMethod {
    public typealias Params = NoParams
    public struct Result: Codable, Sendable, Hashable {
        public var pong: Bool
        public var version: String
        public init(version: String) {
            self.pong = true
            self.version = version
        }
    }
    public static let name = "daemon.ping"
    public static let summary = "Checks that the daemon answers."
    public static let paramsSchema = JSONSchema.empty
    public static let resultSchema = JSONSchema.object(
        ["pong": JSONSchema(["const": true]), "version": .string("stpd's version")],
        required: ["pong", "version"])
}

public enum DaemonStatusMethod: RPCMethod {
    public typealias Params = NoParams
    public typealias Result = DaemonStatus
    public static let name = "daemon.status"
    public static let summary =
        "Reports the daemon's version, process, uptime, how it was started, its socket and its store."
    public static let paramsSchema = JSONSchema.empty
    public static let resultSchema = JSONSchema.ref("DaemonStatus")
}

public enum DaemonMetrics: RPCMethod {
    public typealias Params = NoParams
    public struct Result: Codable, Sendable, Hashable {
        public var text: String
        public var contentType: String
        public init(text: String, contentType: String) {
            self.text = text
            self.contentType = contentType
        }
    }
    public static let name = "daemon.metrics"
    public static let summary = "Returns the daemon's counters, gauges and histograms as Prometheus text."
    public static let description: String? = """
        Requests by method and outcome, request latency, connections, subscribers, subscribers \
        dropped, events appended, Stripe calls by endpoint, status and attempt, polls running, \
        redirect sessions by status and the store's size, in the Prometheus text exposition format \
        (what node_exporter's textfile collector reads). Counters count since the daemon started. \
        Label values come from fixed sets (declared methods, error codes, endpoints), never from \
        what a client sends.
        """
    public static let paramsSchema = JSONSchema.empty
    public static let resultSchema = JSONSchema.object(
        [
            "text": .string("The metrics, one sample per line, with # HELP and # TYPE lines"),
            "contentType": JSONSchema(
                ["const": "text/plain; version=0.0.4", "description": "The exposition format's media type"]),
        ],
        required: ["text", "contentType"])
}

public struct DaemonStatus: Codable, Sendable, Hashable {
    public enum Activation: String, Codable, Sendable {
        /// systemd passed the listening socket (socket activation).
        case socket
        /// stpd bound its socket itself.
        case bound
    }

    public var version: String
    public var pid: Int32
    public var startedAt: String
    public var uptimeSeconds: Double
    public var activation: Activation
    public var socketPath: String
    public var stateDirectory: String
    public var connections: Int
    public var subscriptions: Int
    public var store: StoreStatus
    /// Present when the daemon is one of a fleet on a shared PostgreSQL database.
    public var fleet: FleetStatus?
    /// The loopback return's listener (`returnURL: "loopback"`); never a token.
    public var loopback: LoopbackStatus?

    public struct LoopbackStatus: Codable, Sendable, Hashable {
        /// Whether it listens on 127.0.0.1 now.
        public var listening: Bool
        /// The port new loopback returns name, while it listens.
        public var port: Int?
        /// Loopback sessions waiting on this daemon's listener.
        public var waiting: Int
        public init(listening: Bool, port: Int?, waiting: Int) {
            self.listening = listening
            self.port = port
            self.waiting = waiting
        }
    }

    public struct FleetStatus: Codable, Sendable, Hashable {
        /// This daemon's name in the fleet (`STPD_INSTANCE`, else host and socket path).
        public var instance: String
        /// The database, without credentials.
        public var database: String
        /// The background work leased to this daemon (`poll:…`).
        public var leases: [String]
        /// Whether the last operation on the database reached it.
        public var databaseUp: Bool
        /// When it last came up or went down (RFC 3339); absent before the first operation.
        public var databaseSince: String?
        /// How many times the database was reached again after it was down.
        public var reconnects: Int
        /// The last database failure: operation, SQLSTATE and message.
        public var lastDatabaseError: String?
        /// The fleet's live instances, each with how many leases on work it holds (empty while
        /// the database is down).
        public var instances: [String: Int]
        /// Events committed to the database that this daemon has not yet published to its
        /// subscribers (absent while the database is down).
        public var followerLag: Int64?

        public init(
            instance: String, database: String, leases: [String], databaseUp: Bool, databaseSince: String?,
            reconnects: Int, lastDatabaseError: String?, instances: [String: Int], followerLag: Int64?
        ) {
            self.instance = instance
            self.database = database
            self.leases = leases
            self.databaseUp = databaseUp
            self.databaseSince = databaseSince
            self.reconnects = reconnects
            self.lastDatabaseError = lastDatabaseError
            self.instances = instances
            self.followerLag = followerLag
        }
    }

    public struct StoreStatus: Codable, Sendable, Hashable {
        public var path: String
        public var sizeBytes: Int64
        public var latestSeq: Int64
        public var oldestSeq: Int64
        /// Objects taken out of use because they no longer decode (logged when it happened).
        public var setAside: Int
        public init(path: String, sizeBytes: Int64, latestSeq: Int64, oldestSeq: Int64, setAside: Int) {
            self.path = path
            self.sizeBytes = sizeBytes
            self.latestSeq = latestSeq
            self.oldestSeq = oldestSeq
            self.setAside = setAside
        }
    }

    public init(
        version: String, pid: Int32, startedAt: String, uptimeSeconds: Double, activation: Activation,
        socketPath: String, stateDirectory: String, connections: Int, subscriptions: Int, store: StoreStatus,
        fleet: FleetStatus? = nil, loopback: LoopbackStatus? = nil
    ) {
        self.fleet = fleet
        self.loopback = loopback
        self.version = version
        self.pid = pid
        self.startedAt = startedAt
        self.uptimeSeconds = uptimeSeconds
        self.activation = activation
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.connections = connections
        self.subscriptions = subscriptions
        self.store = store
    }

    static let schema = JSONSchema.object(
        [
            "version": .string("stpd's version"),
            "pid": .integer("Process id"),
            "startedAt": .string("When this process started (RFC 3339)", format: "date-time"),
            "uptimeSeconds": .number("Seconds since this process started", minimum: 0),
            "activation": .enumeration(
                ["socket", "bound"], "`socket`: systemd passed the listening socket; `bound`: stpd bound it itself"),
            "socketPath": .string("Path of the listening socket"),
            "stateDirectory": .string("Where durable state is kept"),
            "connections": .integer("Open client connections, this one included", minimum: 0),
            "subscriptions": .integer("Live event subscriptions", minimum: 0),
            "store": .object(
                [
                    "path": .string("The SQLite database file; in a fleet, the database's URL without credentials"),
                    "sizeBytes": .integer("Bytes on disk, write-ahead log included", minimum: 0),
                    "latestSeq": .integer("Seq of the last event appended (0: none yet)", minimum: 0),
                    "oldestSeq": .integer("Oldest seq still kept (retention drops older ones)", minimum: 1),
                    "setAside": .integer(
                        "Objects set aside because they no longer decode (each logged when it happened)", minimum: 0),
                ], required: ["path", "sizeBytes", "latestSeq", "oldestSeq", "setAside"]),
            "fleet": .object(
                [
                    "instance": .string("This daemon's name in the fleet (STPD_INSTANCE, else host:socket path)"),
                    "database": .string("The shared PostgreSQL database, as a URL without credentials"),
                    "leases": .array(of: .string("A lease name"), "The background work this daemon holds the lease of"),
                    "databaseUp": .boolean("Whether the last operation on the database reached it"),
                    "databaseSince": .string(
                        "When the database last came up or went down (RFC 3339); absent before the first operation",
                        format: "date-time"),
                    "reconnects": .integer(
                        "How many times the database was reached again after it was down", minimum: 0),
                    "lastDatabaseError": .string("The last database failure: operation, SQLSTATE and message"),
                    "instances": JSONSchema(
                        [
                            "type": "object", "additionalProperties": ["type": "integer", "minimum": 0],
                            "description":
                                "The fleet's live instances by name, each with how many leases on work it holds (empty while the database is down)",
                        ]),
                    "followerLag": .integer(
                        "Events committed to the database this daemon has not yet published to its subscribers (absent while the database is down)",
                        minimum: 0),
                ], required: ["instance", "database", "leases", "databaseUp", "reconnects", "instances"],
                description: "Only when the daemon shares a PostgreSQL database with others (STPD_DATABASE_URL)"),
            "loopback": .object(
                [
                    "listening": .boolean("Whether the loopback return's listener is up on 127.0.0.1"),
                    "port": .integer("The port new loopback returns name, while it listens", minimum: 1),
                    "waiting": .integer("Loopback sessions waiting for their customer on this daemon", minimum: 0),
                ], required: ["listening", "waiting"],
                description:
                    "The loopback return (returnURL \"loopback\"): up only while a session waits, and for STPD_LOOPBACK_GRACE after"
            ),
        ],
        required: [
            "version", "pid", "startedAt", "uptimeSeconds", "activation", "socketPath", "stateDirectory",
            "connections", "subscriptions", "store",
        ])
}
