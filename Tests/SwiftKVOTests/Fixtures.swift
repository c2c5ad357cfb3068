import Synchronization
@testable import SwiftKVO

struct Transaction: Equatable, Sendable, CustomStringConvertible {
    var amount: Double
    var description: String { "T(\(amount))" }
}

/// The SPEC §4 example type. `@unchecked Sendable` only so tests can capture it
/// in `@Sendable` handlers; tests never race on its stored values.
final class Account: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["name": \Account.name, "balance": \Account.balance, "transactions": \Account.transactions, "manualCount": \Account.manualCount] }
    @Observed var name = ""
    @Observed var balance = 0.0
    @ObservedArray var transactions: [Transaction] = []
    @Observed(notifiesAutomatically: false) var manualCount = 0
    var plain = 0
    /// Computed from `name`: not observable, nor at the end of a chain.
    var upperName: String { name.uppercased() }
    let onDeinit: (@Sendable () -> Void)?

    init(name: String = "", onDeinit: (@Sendable () -> Void)? = nil) {
        self.onDeinit = onDeinit
        self.name = name
    }

    deinit { onDeinit?() }

    /// Manual notification: notify only when the value really changes.
    func setManualCount(_ value: Int) {
        guard value != manualCount else { return }
        willChangeValue(for: \.manualCount)
        manualCount = value
        didChangeValue(for: \.manualCount)
    }
}

class BaseAccount: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["name": \BaseAccount.name] }
    @Observed var name = ""
}

final class SavingsAccount: BaseAccount, @unchecked Sendable {
    override class var observableKeyPaths: [String: AnyKeyPath] {
        super.observableKeyPaths.merging(["rate": \SavingsAccount.rate]) { $1 }
    }
    @Observed var rate = 0.0
}

final class Person: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["firstName": \Person.firstName, "lastName": \Person.lastName] }
    @Observed var firstName = ""
    @Observed var lastName = ""
    var fullName: String { "\(firstName) \(lastName)" }
    /// Computed from one observed property, not declared: not observable.
    var upperFirst: String { firstName.uppercased() }
    /// Computed from two observed properties, not declared: not observable.
    var greeting: String { "Hello \(firstName) \(lastName)" }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\Person.fullName: [\Person.firstName, \Person.lastName]]
    }
}

/// A base class declaring a dependent key, for subclass key paths.
class Contact: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["firstName": \Contact.firstName, "lastName": \Contact.lastName] }
    @Observed var firstName = ""
    @Observed var lastName = ""
    var fullName: String { "\(firstName) \(lastName)" }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\Contact.fullName: [\Contact.firstName, \Contact.lastName]]
    }
}

final class Employee: Contact, @unchecked Sendable {
    override class var observableKeyPaths: [String: AnyKeyPath] {
        super.observableKeyPaths.merging(["title": \Employee.title]) { $1 }
    }
    @Observed var title = ""
}

final class Document: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["account": \Document.account, "title": \Document.title] }
    @Observed var account: Account
    @Observed var title = ""

    init(account: Account) { self.account = account }
}

final class Library: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["document": \Library.document] }
    @Observed var document: Document

    init(document: Document) { self.document = document }
}

/// A thread-safe log of values. (The library's pthread lock, not
/// `Synchronization.Mutex`, whose synchronization ThreadSanitizer does not
/// see on Linux: it would report races between the log's users.)
final class Log<Element>: @unchecked Sendable {
    private let storage = LockedState<[Element]>([])

    func append(_ element: Element) { storage.withLock { $0.append(element) } }
    var values: [Element] { storage.withLock { $0 } }
    var count: Int { storage.withLock { $0.count } }
}

/// A thread-safe record of values, appended from callbacks on any thread.
final class Recorder<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func add(_ item: T) { lock.lock(); items.append(item); lock.unlock() }
    var all: [T] { lock.lock(); defer { lock.unlock() }; return items }
    var count: Int { lock.lock(); defer { lock.unlock() }; return items.count }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

/// Counts its deinitializations (to prove contexts are released exactly once).
final class LifetimeProbe: Sendable {
    let counter: Counter
    init(_ counter: Counter) { self.counter = counter }
    deinit { counter.increment() }
}

/// A plain observer object.
final class Observer: @unchecked Sendable {
    let log = Log<String>()
    let onDeinit: (@Sendable () -> Void)?
    init(onDeinit: (@Sendable () -> Void)? = nil) { self.onDeinit = onDeinit }
    deinit { onDeinit?() }

    func balanceDidChange(_ change: ObservedChange<Double>) {
        log.append("action \(change.newValue.map { "\($0)" } ?? "nil")")
    }

    func somethingChanged() { log.append("action") }
}

/// Waits until every removed observation has been released.
func flushReleases() {
    _ = Engine.flush()
}

/// A barrier for concurrency tests: releases its threads together.
final class StartBarrier: @unchecked Sendable {
    private let remaining: Atomic<Int>
    init(parties: Int) { remaining = Atomic(parties) }
    func arriveAndWait() {
        remaining.subtract(1, ordering: .acquiringAndReleasing)
        while remaining.load(ordering: .acquiring) > 0 { sched_yield() }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Runs `body(index)` on `count` fresh threads, released together, and waits for all.
func runConcurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let barrier = StartBarrier(parties: count)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            barrier.arriveAndWait()
            body(index)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
}

/// A generic observable class: one declaration, several specializations.
final class Box<Value>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Box.value] }
    @Observed var value: Value
    init(_ value: Value) { self.value = value }
}

/// Something with a name, held as an existential by `NamedHolder`.
protocol Named: AnyObject {
    var name: String { get }
}

extension Account: Named {}

final class NamedHolder: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["item": \NamedHolder.item] }
    @Observed var item: any Named
    init(item: any Named) { self.item = item }
}

final class Folder: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["account": \Folder.account] }
    @Observed var account: Account? = nil
}
