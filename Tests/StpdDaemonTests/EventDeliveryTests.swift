import Foundation
import JSONRPC
import StpdCore
import StpdProtocol
import Testing

@testable import StpdDaemon

/// The `event` notification frames: encoded once per event for every subscriber (issue 12's
/// fan-out), yet each the notification the contract describes, with its own subscription id.
@Suite struct EventFramesTests {
    let event = Event(
        seq: 42, time: Date(timeIntervalSince1970: 1_700_000_000.25), type: "debug.test", objectId: "dbg_1",
        objectKind: "debug", ownerUID: 0, object: ["id": "dbg_1", "n": 3, "note": "a \"quoted\" line\n"])

    func decoded(_ frame: [UInt8]) throws -> JSONValue {
        #expect(frame.last == UInt8(ascii: "\n"))
        #expect(frame.dropLast().contains(UInt8(ascii: "\n")) == false, "one line")
        return try JSONCoding.decode(JSONValue.self, from: Data(frame.dropLast()))
    }

    @Test func aFrameIsTheEventNotificationOfItsSubscription() throws {
        let frames = EventFrames()
        let frame = frames.frame(event, head: EventFrames.head(subscription: "sub_abc"))
        let expected = try JSONCoding.value(
            of: Request(
                id: nil, method: "event",
                params: try JSONCoding.value(
                    of: Notifications.EventParams(subscription: "sub_abc", record: EventRecord(event)))))
        #expect(try decoded(Array(frame.readableBytesView)) == expected)
        #expect(frames.frameSize(event, head: EventFrames.head(subscription: "sub_abc")) == frame.readableBytes)
    }

    @Test func anEventIsEncodedOnceForEverySubscriber() throws {
        let frames = EventFrames()
        let ids = (0..<1000).map { "sub_\($0)" }
        for id in ids {
            let params = try decoded(
                Array(frames.frame(event, head: EventFrames.head(subscription: id)).readableBytesView))[
                    "params"]
            #expect(params?["subscription"] == .string(id))
            #expect(params?["seq"] == 42)
        }
        #expect(frames.encodedCount == 1)
        _ = frames.frame(
            Event(seq: 43, time: event.time, type: "t", objectId: "o", objectKind: "k", ownerUID: 0, object: [:]),
            head: EventFrames.head(subscription: "sub_0"))
        #expect(frames.encodedCount == 2)
    }

    /// The cache keeps recent events only.
    @Test func theCacheIsBounded() {
        let frames = EventFrames(capacity: 4)
        let head = EventFrames.head(subscription: "s")
        for seq in Int64(1)...10 {
            _ = frames.frame(
                Event(seq: seq, time: event.time, type: "t", objectId: "o", objectKind: "k", ownerUID: 0, object: [:]),
                head: head)
        }
        _ = frames.frame(
            Event(seq: 1, time: event.time, type: "t", objectId: "o", objectKind: "k", ownerUID: 0, object: [:]),
            head: head)
        #expect(frames.encodedCount == 11, "seq 1 was evicted and encoded again")
    }
}

/// `STPD_MAX_WAITS_PER_CONNECTION` and `STPD_MAX_WAITS_PER_UID`: defaults, sources and ranges.
@Suite struct WaitLimitSettingsTests {
    let environment = ["HOME": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent"]

    @Test func defaults() throws {
        let c = try DaemonConfiguration.resolve(flags: [:], environment: environment)
        #expect(c.waitLimits.perConnection == 16)
        #expect(c.waitLimits.perUID == 256)
    }

    @Test func flagsAndEnvironmentSetThem() throws {
        let c = try DaemonConfiguration.resolve(
            flags: ["STPD_MAX_WAITS_PER_CONNECTION": "1"],
            environment: environment.merging(["STPD_MAX_WAITS_PER_UID": "100000"]) { a, _ in a })
        #expect(c.waitLimits.perConnection == 1)
        #expect(c.waitLimits.perUID == 100_000)
        #expect(
            DaemonConfiguration.keys.contains { $0.key == "STPD_MAX_WAITS_PER_UID" && $0.flag == "--max-waits-per-uid" }
        )
    }

    @Test(arguments: [
        ("STPD_MAX_WAITS_PER_CONNECTION", "0"), ("STPD_MAX_WAITS_PER_CONNECTION", "1001"),
        ("STPD_MAX_WAITS_PER_CONNECTION", "-1"), ("STPD_MAX_WAITS_PER_UID", "100001"), ("STPD_MAX_WAITS_PER_UID", "x"),
    ])
    func outOfRangeValuesAreRefusedNamingTheSetting(key: String, value: String) {
        #expect {
            try DaemonConfiguration.resolve(flags: [key: value], environment: environment)
        } throws: { error in
            "\(error)".contains(key) && "\(error)".contains("from 1 to")
        }
    }
}
