#if Relay
// Replicated property assignments, with and without the state table: what
// recording each value in the table (an upsert in the same statement as the
// NOTIFY) costs an assignment. Two relays replicate 64 integer properties
// (one object each); a receipt is the receiver's observer seeing the value,
// which is the sender's clock when it assigned.
import Foundation
import SwiftKVO
import SwiftKVORelay
import Synchronization

final class BenchValue: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["t": \BenchValue.t] }
    @Observed var t = 0
}

final class PropertyContender: Contender {
    static let properties = 64

    let name: String
    let receipts = Receipts()
    let sender: Relay
    let receiver: Relay
    /// Assigned on the sender; mirrored on the receiver.
    private let sent: [BenchValue]
    private let mirrored: [BenchValue]
    private let tokens: [ObservationToken]
    private let posted = Atomic<Int>(0)
    private let next = Atomic<Int>(0)
    private let tasks: [Task<Void, Never>]

    /// - Parameter stateTable: Where the values are recorded; nil: nowhere.
    init(name: String, channel: String, stateTable: RelayStateTable?, setup: Setup) async throws {
        self.name = name
        let channel = try RelayChannel(channel)
        func relay() throws -> Relay {
            var configuration = RelayConfiguration(postgres: setup.connection, channel: channel, logger: setup.logger)
            configuration.stateTable = stateTable
            return try Relay(configuration: holdingABurst(configuration))
        }
        sender = try relay()
        receiver = try relay()
        sent = (0..<Self.properties).map { _ in BenchValue() }
        mirrored = (0..<Self.properties).map { _ in BenchValue() }
        for index in 0..<Self.properties {
            try sender.replicate(\.t, of: sent[index], as: "bench.value.\(index)")
            try receiver.replicate(\.t, of: mirrored[index], as: "bench.value.\(index)")
        }
        let receipts = receipts
        tokens = try mirrored.map { value in
            try value.observe(\.t, options: .new) { _, change in
                receipts.received(sentAt: UInt64(change.newValue ?? 0))
            }
        }
        tasks = [sender, receiver].map { relay in Task { await relay.run() } }
        try await sender.waitUntilListening()
        try await receiver.waitUntilListening()
    }

    /// The next property, round the 64.
    private var nextValue: BenchValue {
        sent[next.add(1, ordering: .relaxed).oldValue % Self.properties]
    }

    func send(sentAt: UInt64) async throws {
        sent[0].t = Int(sentAt)
        posted.add(1, ordering: .relaxed)
    }

    func sendBurst(_ count: Int) async throws {
        for _ in 0..<count { nextValue.t = Int(nanoseconds()) }
        posted.add(count, ordering: .relaxed)
    }

    /// Waits until the sender's statements carrying every assignment so far completed.
    func settle() async {
        let target = posted.load(ordering: .relaxed)
        while sender.statistics.sent < target { try? await Task.sleep(for: .microseconds(20)) }
    }
}
#endif
