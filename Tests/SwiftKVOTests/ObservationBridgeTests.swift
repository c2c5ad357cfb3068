import Foundation
import Observation
import Synchronization
import Testing

@testable import SwiftKVO

// Swift Observation interop (SPEC §4): a bridged class is seen by
// `withObservationTracking` and `Observations`; one that is not bridged is not,
// and pays nothing.

private final class Thermostat: ObservationBridged, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["target": \Thermostat.target, "readings": \Thermostat.readings, "zones": \Thermostat.zones] }
    let observationRegistrar = ObservationRegistrar()
    @Observed var target = 20.0
    @ObservedArray var readings: [Double] = []
    @ObservedSet var zones: Set<String> = []
}

private final class Plain: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["target": \Plain.target] }
    @Observed var target = 20.0
}

@Suite(.needsLayout("its registrations")) struct ObservationBridgeTests {
    @Test func withObservationTrackingSeesAnObservedPropertyChange() {
        let thermostat = Thermostat()
        let changes = Counter()
        withObservationTracking {
            _ = thermostat.target
        } onChange: {
            changes.increment()
        }
        thermostat.target = 21
        thermostat.target = 22  // tracking ends after the first change
        #expect(changes.count == 1)
    }

    @Test func collectionPropertiesAreTrackedToo() {
        let thermostat = Thermostat()
        let changes = Counter()
        withObservationTracking {
            _ = thermostat.readings
            _ = thermostat.zones
        } onChange: {
            changes.increment()
        }
        thermostat.mutableSet(\.zones).insert("hall")
        #expect(changes.count == 1)
        let again = Counter()
        withObservationTracking { _ = thermostat.readings } onChange: { again.increment() }
        thermostat.readings.append(1)
        #expect(again.count == 1)
    }

    @Test func bothSystemsHearOneAssignmentInTheDocumentedOrder() throws {
        let thermostat = Thermostat()
        let log = Log<String>()
        withObservationTracking { _ = thermostat.target } onChange: {
            log.append("observation willSet \(thermostat.target)")
        }
        let token = try thermostat.observe(\.target, options: [.prior, .new]) { _, change in
            log.append(change.isPrior ? "kvo prior" : "kvo \(change.newValue ?? 0)")
        }
        thermostat.target = 23
        // Observation's willSet right before the store, SwiftKVO's prior
        // notifications before it: nothing runs between willSet and the store.
        #expect(log.values == ["kvo prior", "observation willSet 20.0", "kvo 23.0"])
        token.invalidate()
    }

    // Observations reads its closure again on the iterating isolation once a
    // change begins (willSet): the change must be made on that isolation too,
    // or the read can land between willSet and the store and see the old value
    // (1 run in 8 did, when this test mutated from a task of its own).
    @MainActor
    @Test(.timeLimit(.minutes(1))) func observationsSequenceYieldsNewValues() async {
        let thermostat = Thermostat()
        let values = Observations { thermostat.target }
        var iterator = values.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first == 20)
        Task { @MainActor in thermostat.target = 25 }
        var seen = first
        while seen != 25, let next = await iterator.next() { seen = next }
        #expect(seen == 25)
    }

    @Test func aClassThatIsNotBridgedIsNotTracked() {
        let plain = Plain()
        let changes = Counter()
        withObservationTracking { _ = plain.target } onChange: { changes.increment() }
        plain.target = 30
        #expect(changes.count == 0)
        #expect(Plain.isObservationBridged == false)
        #expect(Thermostat.isObservationBridged)
    }

    @Test func bridgedObservationTrackingWithConcurrentMutation() throws {
        let bridged = AtkBridged()
        let fired = Atomic<Int>(0)
        for _ in 0..<50 {
            withObservationTracking {
                _ = bridged.count
                _ = bridged.tags
            } onChange: {
                fired.add(1, ordering: .relaxed)
            }
        }
        let kvoDelivered = Atomic<Int>(0)
        let token = try bridged.observe(\.count) { _, _ in kvoDelivered.add(1, ordering: .relaxed) }
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            for j in 0..<250 {
                lock.lock()
                if j % 2 == 0 { bridged.count += 1 } else { bridged.mutableSet(\.tags).insert(i * 1000 + j) }
                lock.unlock()
                withObservationTracking { _ = bridged.count } onChange: { fired.add(1, ordering: .relaxed) }
            }
        }
        #expect(kvoDelivered.load(ordering: .relaxed) == 500)
        #expect(fired.load(ordering: .relaxed) >= 50)
        _ = token.invalidate()
    }

    @Test func bridgedSetMutatorNotifiesObservation() {
        let bridged = AtkBridged()
        let fired = Atomic<Int>(0)
        withObservationTracking { _ = bridged.tags } onChange: { fired.add(1, ordering: .relaxed) }
        bridged.mutableSet(\.tags).insert(1)
        #expect(fired.load(ordering: .relaxed) == 1)
    }

    @Test func bridgedSubclassOfBridgedBase() {
        let object = AtkBridgedSub()
        let fired = Atomic<Int>(0)
        withObservationTracking { _ = object.count; _ = object.extra } onChange: { fired.add(1, ordering: .relaxed) }
        object.extra = 3
        #expect(fired.load(ordering: .relaxed) == 1)
        withObservationTracking { _ = object.count } onChange: { fired.add(1, ordering: .relaxed) }
        object.count = 3
        #expect(fired.load(ordering: .relaxed) == 2)
    }
}

final class AtkBridged: ObservationBridged, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["count": \AtkBridged.count, "tags": \AtkBridged.tags] }
    let observationRegistrar = ObservationRegistrar()
    @Observed var count = 0
    @ObservedSet var tags: Set<Int> = []
}

class AtkBridgedBase: ObservationBridged, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["count": \AtkBridgedBase.count] }
    let observationRegistrar = ObservationRegistrar()
    @Observed var count = 0
}

final class AtkBridgedSub: AtkBridgedBase, @unchecked Sendable {
    override class var observableKeyPaths: [String: AnyKeyPath] {
        super.observableKeyPaths.merging(["extra": \AtkBridgedSub.extra]) { $1 }
    }
    @Observed var extra = 0
}
