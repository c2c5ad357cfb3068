// KVOControllerPortPeer.swift — Facebook's KVOController, its design ported
// to Swift as faithfully as Linux allows (there is no Objective-C KVO to sit
// on, so the port's shared controller also plays Apple KVO's part: the
// object → key path → observances table that a setter's notification reads).
//
// What is kept from FBKVOController.m:
// - A per-observer controller holding its observer weakly, with its own mutex
//   and an object → infos map; observing the same key path of the same object
//   twice is a no-op.
// - One shared controller with one mutex-protected table keyed by object and
//   key path, plus the set of live infos (`_infos`).
// - On a notification: the observances are copied under the lock and called
//   after unlocking ("unlock prior to callout"); for each one the info is
//   looked up again in the live set under the mutex, the weak controller and
//   then the weak observer are strongified, and a fresh change dictionary
//   ([String: Any]: kind, new value, key path) is built for the block.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CBenchFloor

/// A pthread mutex, as FBKVOController uses.
final class PortMutex: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
    @inline(__always)
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// NSKeyValueObservingOptions' two value bits.
struct PortOptions: OptionSet, Sendable {
    let rawValue: Int
    static let new = PortOptions(rawValue: 1)
    static let old = PortOptions(rawValue: 2)
}

/// The change dictionary's keys (NSKeyValueChangeKey and FBKVONotificationKeyPathKey).
enum PortChangeKey {
    static let kind = "kind"
    static let new = "new"
    static let old = "old"
    static let keyPath = "FBKVONotificationKeyPathKey"
}

typealias PortBlock = (_ observer: AnyObject, _ object: AnyObject, _ change: [String: Any]) -> Void

/// _FBKVOInfo: one observation by one controller.
final class PortInfo: @unchecked Sendable {
    weak var controller: PortController?
    let keyPath: String
    let options: PortOptions
    let block: PortBlock
    init(controller: PortController, keyPath: String, options: PortOptions, block: @escaping PortBlock) {
        self.controller = controller
        self.keyPath = keyPath
        self.options = options
        self.block = block
    }
}

/// _FBKVOSharedController plus the observance table Apple KVO would keep.
final class PortSharedController: @unchecked Sendable {
    static let shared = PortSharedController()

    private let mutex = PortMutex()
    /// object → key path → observances, in registration order.
    private var table: [ObjectIdentifier: [String: [PortInfo]]] = [:]
    /// The live infos (`_infos`, an NSHashTable in the original).
    private var infos: Set<ObjectIdentifier> = []

    func observe(_ object: AnyObject, info: PortInfo) {
        mutex.withLock {
            table[ObjectIdentifier(object), default: [:]][info.keyPath, default: []].append(info)
            infos.insert(ObjectIdentifier(info))
        }
    }

    func unobserve(_ object: AnyObject, info: PortInfo) {
        mutex.withLock {
            let id = ObjectIdentifier(object)
            // Searched from the end: the newest observation is the one most often removed.
            // Mutated in place, so the list is not copied unless a notification holds it.
            if let index = table[id]?[info.keyPath]?.lastIndex(where: { $0 === info }) {
                table[id]![info.keyPath]!.remove(at: index)
                if table[id]![info.keyPath]!.isEmpty {
                    table[id]![info.keyPath] = nil
                    if table[id]!.isEmpty { table[id] = nil }
                }
            }
            infos.remove(ObjectIdentifier(info))
        }
    }

    /// What a setter triggers: observeValueForKeyPath:ofObject:change:context: for each observance.
    func notify(_ object: AnyObject, keyPath: String, old: Any, new: Any) {
        let observances = mutex.withLock { table[ObjectIdentifier(object)]?[keyPath] } ?? []
        for info in observances {
            // Look the context up among the live infos, under the lock.
            let live = mutex.withLock { infos.contains(ObjectIdentifier(info)) }
            guard live, let controller = info.controller, let observer = controller.observer else {
                continue
            }
            var change: [String: Any] = [PortChangeKey.kind: 1, PortChangeKey.keyPath: keyPath]
            if info.options.contains(.new) { change[PortChangeKey.new] = new }
            if info.options.contains(.old) { change[PortChangeKey.old] = old }
            info.block(observer, object, change)
        }
    }
}

/// FBKVOController: owned by (and holding weakly) one observer.
final class PortController: @unchecked Sendable {
    weak var observer: AnyObject?
    private let mutex = PortMutex()
    /// object → its infos (the original's NSMapTable, retaining the observed object).
    private var objectInfos: [ObjectIdentifier: (object: AnyObject, infos: [PortInfo])] = [:]

    init(observer: AnyObject) { self.observer = observer }

    deinit { unobserveAll() }

    func observe(_ object: AnyObject, keyPath: String, options: PortOptions, block: @escaping PortBlock) {
        let info = PortInfo(controller: self, keyPath: keyPath, options: options, block: block)
        let added: Bool = mutex.withLock {
            let id = ObjectIdentifier(object)
            var entry = objectInfos[id] ?? (object, [])
            if entry.infos.contains(where: { $0.keyPath == keyPath }) { return false }
            entry.infos.append(info)
            objectInfos[id] = entry
            return true
        }
        if added { PortSharedController.shared.observe(object, info: info) }
    }

    func unobserve(_ object: AnyObject, keyPath: String) {
        let removed: PortInfo? = mutex.withLock {
            let id = ObjectIdentifier(object)
            guard var entry = objectInfos[id],
                let index = entry.infos.firstIndex(where: { $0.keyPath == keyPath })
            else { return nil }
            let info = entry.infos.remove(at: index)
            objectInfos[id] = entry.infos.isEmpty ? nil : entry
            return info
        }
        if let removed { PortSharedController.shared.unobserve(object, info: removed) }
    }

    func unobserveAll() {
        let all = mutex.withLock {
            let all = objectInfos.values
            objectInfos.removeAll()
            return Array(all)
        }
        for entry in all {
            for info in entry.infos { PortSharedController.shared.unobserve(entry.object, info: info) }
        }
    }
}

struct KVOControllerPortPeer: FixtureFactories {
    let id = "kvocontroller-port"
    let title = "KVOController's design in Swift (mutex, change dict)"
    let fanOutIsThreadSafe = true

    static let keyPath = "value"

    /// The observed object: its setter announces the change as KVO would.
    final class Subject: @unchecked Sendable {
        var value = 0 {
            didSet {
                PortSharedController.shared.notify(
                    self, keyPath: KVOControllerPortPeer.keyPath, old: oldValue, new: value)
            }
        }
    }

    /// An observer owning its controller, as `self.kvoController` does.
    final class Observer: @unchecked Sendable {
        let work = BenchObserver()
        private(set) lazy var kvo = PortController(observer: self)

        func observe(_ subject: Subject) {
            kvo.observe(subject, keyPath: KVOControllerPortPeer.keyPath, options: .new) {
                observer, _, _ in
                observerDidChange(unsafeDowncast(observer, to: Observer.self).work)
            }
        }
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
        let subject = Subject()
        var observers: [Observer] = []
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { !observers.isEmpty }
        init(observers count: Int) {
            unitsPerIteration = max(count, 1)
            for _ in 0..<count {
                let observer = Observer()
                observer.observe(subject)
                observers.append(observer)
            }
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { subject.value = i }
        }
        func tearDown() { for observer in observers.reversed() { observer.kvo.unobserveAll() } }
    }

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
        let subjects: [Subject]
        var observers: [Observer] = []
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects count: Int) {
            subjects = (0..<count).map { _ in Subject() }
            for subject in subjects {
                let observer = Observer()
                observer.observe(subject)
                observers.append(observer)
            }
        }
        func run(_ iterations: Int) {
            var index = cursor
            for i in 0..<iterations {
                subjects[index].value = i
                index += 1
                if index == subjects.count { index = 0 }
            }
            cursor = index
        }
        func tearDown() { for observer in observers.reversed() { observer.kvo.unobserveAll() } }
    }

    /// One churn pair: the churn observer's controller observes the fan-out's subject, then
    /// unobserves it.
    struct Churn: ChurnPair {
        let subject: Subject
        let observer = Observer()
        func observeAndUnobserve() {
            observer.observe(subject)
            observer.kvo.unobserve(subject, keyPath: KVOControllerPortPeer.keyPath)
        }
    }

    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        let fanOut = FanOut(observers: observers)
        let subject = fanOut.subject
        return ChurnFixture(on: fanOut, pair: Churn(subject: subject), concurrentDispatcher: concurrentDispatcher) {
            subject.value = 1
        }
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        measureObservations(observations, perObject: perObject, observer: Observer.init, subject: Subject.init) {
            subject, observer in observer.observe(subject)
        } release: { _, observers, _ in
            for observer in observers.reversed() { observer.kvo.unobserveAll() }
        }
    }
}
