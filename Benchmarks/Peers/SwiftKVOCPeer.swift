// SwiftKVOCPeer.swift — SwiftKVO's C API called directly from Swift:
// ckvo_observe with a C callback (cbench_ckvo_callback, which ticks like
// every other callback), and a setter that stores the value and announces it
// with ckvo_did_change, passing old and new value pointers as a user's setter
// would. Each observation has its own context pointer (the engine treats the
// same owner, object, key, callback and context as a duplicate).

import CBenchFloor
import CKVOCore

struct SwiftKVOCPeer: FixtureFactories {
    let id = "swiftkvo-c"
    let title = "SwiftKVO C API (ckvo_*)"
    let fanOutIsThreadSafe = true

    /// A hub, a key, and objects: each object is one heap Int whose address is
    /// its identity. `set` may run on several threads at once (the engine's
    /// dispatch is lock-free); the Int stores then race, as two unsynchronized
    /// writers of one property do.
    final class World: @unchecked Sendable {
        let hub: OpaquePointer
        let key: ckvo_key_t
        let objects: UnsafeMutablePointer<Int>
        let objectCount: Int

        init(objects: Int) {
            hub = ckvo_hub_create()!
            key = ckvo_key_intern(hub, "value", nil)
            precondition(key != 0)
            objectCount = objects
            self.objects = .allocate(capacity: max(objects, 1))
            self.objects.initialize(repeating: 0, count: max(objects, 1))
        }

        /// One observation of object `object` with a context unique within the hub.
        @discardableResult
        func observe(object: Int, context: Int) -> ckvo_token_t {
            var token = ckvo_token_t()
            let status = ckvo_observe(
                hub, objects + object, key, ckvo_options_t(CKVO_OPTION_NEW), nil,
                cbench_ckvo_callback, UnsafeMutableRawPointer(bitPattern: context), nil, &token)
            precondition(status == CKVO_OK, "ckvo_observe: \(String(cString: ckvo_strerror(status.rawValue)))")
            return token
        }

        /// The setter: store, then announce with old and new values.
        @inline(__always)
        func set(object: Int, _ newValue: Int) {
            let storage = objects + object
            var old = storage.pointee
            var new = newValue
            storage.pointee = newValue
            withUnsafePointer(to: &old) { old in
                withUnsafePointer(to: &new) { new in
                    var change = ckvo_change_t(
                        object: UnsafeRawPointer(storage), old_value: old, new_value: new,
                        indexes: nil, index_count: 0, key: key, kind: CKVO_KIND_SETTING,
                        is_prior: false, is_initial: false)
                    _ = ckvo_did_change(hub, &change)
                }
            }
        }

        func destroy() {
            _ = ckvo_hub_destroy(hub)
            objects.deallocate()
        }
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
        let world = World(objects: 1)
        let observers: Int
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { observers > 0 }
        init(observers: Int) {
            self.observers = observers
            unitsPerIteration = max(observers, 1)
            for i in 0..<observers { world.observe(object: 0, context: i + 1) }
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { world.set(object: 0, i) }
        }
        func tearDown() { world.destroy() }
    }

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
        let world: World
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects: Int) {
            world = World(objects: subjects)
            for i in 0..<subjects { world.observe(object: i, context: 1) }
        }
        func run(_ iterations: Int) {
            var index = cursor
            let count = world.objectCount
            for i in 0..<iterations {
                world.set(object: index, i)
                index += 1
                if index == count { index = 0 }
            }
            cursor = index
        }
        func tearDown() { world.destroy() }
    }

    /// One churn pair: observe the fan-out's object with a context of its own, then
    /// unobserve by token.
    struct Churn: ChurnPair {
        let world: World
        func observeAndUnobserve() {
            let token = world.observe(object: 0, context: -1)
            _ = ckvo_unobserve(world.hub, token)
        }
    }

    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        let fanOut = FanOut(observers: observers)
        let world = fanOut.world
        return ChurnFixture(on: fanOut, pair: Churn(world: world), concurrentDispatcher: concurrentDispatcher) {
            world.set(object: 0, 1)
        }
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        let world = World(objects: perObject ? observations : 1)
        defer { world.destroy() }
        return measureHeap(observations: observations) {
            for i in 0..<observations {
                if perObject {
                    world.observe(object: i, context: 1)
                } else {
                    world.observe(object: 0, context: i + 1)
                }
            }
        } release: {}
    }
}

// MARK: - Measurements only the C API has

extension SwiftKVOCPeer {
    /// `ckvo_has_observers` on a key nobody observes (a guarded setter's fast path).
    final class HasObserversUnobserved: Fixture, @unchecked Sendable {
        let world = World(objects: 1)
        let unitsPerIteration = 1
        var unitsAreCallbacks: Bool { false }
        var hits = 0
        init() {
            // The hub is not empty: another key on the same object is observed.
            let other = ckvo_key_intern(world.hub, "other", nil)
            var token = ckvo_token_t()
            _ = ckvo_observe(
                world.hub, world.objects, other, 0, nil, cbench_ckvo_callback, nil, nil, &token)
        }
        func run(_ iterations: Int) {
            let hub = world.hub, key = world.key, object = UnsafeRawPointer(world.objects)
            var hits = 0
            for _ in 0..<iterations where ckvo_has_observers(hub, object, key) { hits += 1 }
            self.hits &+= hits
        }
        func tearDown() { world.destroy() }
    }

    /// Seconds to register `count` observers on one key (and, separately, to remove them).
    static func registerMany(_ count: Int) -> (registerSeconds: Double, unobserveSeconds: Double) {
        let world = World(objects: 1)
        defer { world.destroy() }
        var tokens: [ckvo_token_t] = []
        tokens.reserveCapacity(count)
        let t0 = nowNanoseconds()
        for i in 0..<count { tokens.append(world.observe(object: 0, context: i + 1)) }
        let t1 = nowNanoseconds()
        for token in tokens { _ = ckvo_unobserve(world.hub, token) }
        let t2 = nowNanoseconds()
        return (Double(t1 - t0) / 1e9, Double(t2 - t1) / 1e9)
    }
}

// MARK: - Sparse observation and one object per thread

extension SwiftKVOCPeer {
    /// One object in a hundred observed (when `observed`); the setter announces every set of
    /// the unobserved ones, as the no-observer row's does.
    final class Sparse: Fixture, @unchecked Sendable {
        let world: World
        let unobserved: [Int]
        var cursor = 0
        let unitsPerIteration = 1
        var unitsAreCallbacks: Bool { false }
        init(subjects count: Int, observed: Bool) {
            world = World(objects: count)
            unobserved = SparseWorkload.unobservedIndexes(count)
            for index in 0..<count where observed && SparseWorkload.isObserved(index) {
                world.observe(object: index, context: 1)
            }
        }
        func run(_ iterations: Int) {
            var index = cursor
            for i in 0..<iterations {
                world.set(object: unobserved[index], i)
                index += 1
                if index == unobserved.count { index = 0 }
            }
            cursor = index
        }
        func tearDown() { world.destroy() }
    }

    /// One object per thread, each observed with the same callback and contexts.
    final class OwnObjectsFixture: ThreadIndexedFixture, @unchecked Sendable {
        let world: World
        let unitsPerIteration: Int
        init(observers: Int, threads: Int) {
            world = World(objects: threads * OwnObjects.spacing)
            unitsPerIteration = observers
            for thread in 0..<threads {
                for i in 0..<observers { world.observe(object: OwnObjects.index(ofThread: thread), context: i + 1) }
            }
        }
        func run(_ iterations: Int, thread: Int) {
            let object = OwnObjects.index(ofThread: thread)
            for i in 0..<iterations { world.set(object: object, i) }
        }
        func tearDown() { world.destroy() }
    }

    func makeSparse(subjects: Int, observed: Bool) -> (any Fixture)? {
        Sparse(subjects: subjects, observed: observed)
    }

    func makeContentionOwnObjects(observers: Int, threads: Int) -> (any ThreadIndexedFixture)? {
        OwnObjectsFixture(observers: observers, threads: threads)
    }
}
