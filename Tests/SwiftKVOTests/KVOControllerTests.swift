import Foundation
import Testing
@testable import SwiftKVO

/// KVOController's own test suite, ported behaviour by behaviour.
@Suite(.needsLayout("its registrations")) struct KVOControllerTests {
    @Test func initialNewAndOldAreDeliveredWithTheRightValuesExactlyOnce() throws {
        let observer = Observer()
        let account = Account(name: "a")
        let kvo = KVOController(observer: observer)
        let log = Log<ObservedChange<String>>()
        try kvo.observe(account, \.name, options: [.initial, .new, .old]) { _, _, change in
            log.append(change)
        }
        #expect(log.count == 1)
        #expect(log.values[0].isInitial && log.values[0].newValue == "a" && log.values[0].oldValue == nil)
        account.name = "b"
        #expect(log.count == 2)
        #expect(log.values[1].oldValue == "a" && log.values[1].newValue == "b")
    }

    @Test func blockReceivesObserverAndObject() throws {
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        let same = Log<Bool>()
        try kvo.observe(account, \.name) { o, a, _ in same.append(o === observer && a === account) }
        account.name = "x"
        #expect(same.values == [true])
    }

    @Test func optionsNoneStillCallsBack() throws {
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        let log = Log<ObservedChange<Double>>()
        try kvo.observe(account, \.balance) { _, _, change in log.append(change) }
        account.balance = 1
        #expect(log.count == 1)
        #expect(log.values[0].newValue == nil && log.values[0].oldValue == nil)
    }

    @Test func severalKeyPathsAreEachObservedInOrder() throws {
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        try kvo.observe(account, keyPaths: [\.name, \.balance], options: .new) { _, _, change in
            if change.keyPath == \Account.name {
                log.append("name \(change.newValue as! String)")
            } else if change.keyPath == \Account.balance {
                log.append("balance \(change.newValue as! Double)")
            }
        }
        account.name = "n"
        account.balance = 2
        account.name = "m"
        #expect(log.values == ["name n", "balance 2.0", "name m"])
    }

    @Test func targetActionWithChange() throws {
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        try kvo.observe(account, \.balance, options: .new, action: Observer.balanceDidChange)
        account.balance = 4
        #expect(observer.log.values == ["action 4.0"])
    }

    @Test func targetActionWithoutChange() throws {
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        try kvo.observe(account, \.name, action: Observer.somethingChanged)
        account.name = "x"
        account.name = "y"
        #expect(observer.log.values == ["action", "action"])
    }

    @Test func unobserveOneKeyPathKeepsTheOthers() throws {
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        try kvo.observe(account, \.name) { _, _, _ in log.append("name") }
        try kvo.observe(account, \.balance) { _, _, _ in log.append("balance") }
        kvo.unobserve(account, \.name)
        account.name = "x"
        account.balance = 1
        #expect(log.values == ["balance"])
    }

    @Test func unobserveOneObjectLeavesTheOtherObjectObserved() throws {
        let observer = Observer()
        let a = Account()
        let b = Account()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        try kvo.observe(a, \.name) { _, _, _ in log.append("a") }
        try kvo.observe(b, \.name) { _, _, _ in log.append("b") }
        kvo.unobserve(a)
        a.name = "x"
        b.name = "x"
        #expect(log.values == ["b"])
    }

    @Test func unobserveAllSilencesEverything() throws {
        let observer = Observer()
        let a = Account()
        let b = Account()
        let kvo = KVOController(observer: observer)
        let counter = Counter()
        try kvo.observe(a, \.name) { _, _, _ in counter.increment() }
        try kvo.observe(b, \.balance) { _, _, _ in counter.increment() }
        kvo.unobserveAll()
        a.name = "x"
        b.balance = 1
        #expect(counter.count == 0)
        // And observing again afterwards works.
        try kvo.observe(a, \.name) { _, _, _ in counter.increment() }
        a.name = "y"
        #expect(counter.count == 1)
    }

    @Test func unobserveInsideInitialCallbackStopsDelivery() throws {
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        let counter = Counter()
        try kvo.observe(account, \.name, options: .initial) { _, account, _ in
            counter.increment()
            kvo.unobserve(account, \.name)
        }
        #expect(counter.count == 1)
        account.name = "x"
        #expect(counter.count == 1)
        // The key path can be observed again: the entry is gone.
        #expect(try kvo.observe(account, \.name) { _, _, _ in })
    }

    @Test func unobservingAnOuterRegistrationFromANestedInitialCallbackStopsItAtOnce() throws {
        // The outer observation is still being registered (its initial
        // callback is running) when the nested one's initial callback removes
        // it: the removal must find its token right away, so the change made
        // next, still inside both registrations, does not reach it.
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        let outer = Counter()
        try kvo.observe(account, \.name, options: .initial) { _, account, _ in
            outer.increment()
            guard outer.count == 1 else { return }
            _ = try? kvo.observe(account, \.balance, options: .initial) { _, account, _ in
                #expect(kvo.unobserve(account, \.name))
                account.name = "changed inside"
            }
        }
        #expect(outer.count == 1)
        account.name = "x"
        #expect(outer.count == 1)
    }

    @Test func unobservingTheFirstOfSeveralKeyPathsOfAnObjectKeepsTheOthers() throws {
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        let names = Counter()
        let balances = Counter()
        let counts = Counter()
        try kvo.observe(account, \.name) { _, _, _ in names.increment() }
        try kvo.observe(account, \.balance) { _, _, _ in balances.increment() }
        try kvo.observe(account, \.manualCount) { _, _, _ in counts.increment() }
        #expect(kvo.unobserve(account, \.name))
        #expect(try !kvo.observe(account, \.balance) { _, _, _ in })  // still observed
        account.name = "x"
        account.balance = 1
        account.willChangeValue(for: \.manualCount)
        account.manualCount = 1
        account.didChangeValue(for: \.manualCount)
        #expect(names.count == 0 && balances.count == 1 && counts.count == 1)
        #expect(kvo.unobserve(account, \.manualCount))
        #expect(kvo.unobserve(account) == 1)
        account.balance = 2
        #expect(balances.count == 1)
    }

    @Test func objectsObservedOneAfterAnotherStayObservedUntilEachIsUnobserved() throws {
        // The first object's record sits apart from the others': removing it
        // and observing new objects must keep every other record reachable.
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let accounts = (0..<4).map { Account(name: "\($0)") }
        let counter = Counter()
        for account in accounts.prefix(3) {
            try kvo.observe(account, \.name) { _, _, _ in counter.increment() }
        }
        #expect(kvo.unobserve(accounts[0]) == 1)
        try kvo.observe(accounts[3], \.name) { _, _, _ in counter.increment() }
        #expect(try !kvo.observe(accounts[1], \.name) { _, _, _ in })  // still observed
        for account in accounts { account.name = "changed" }
        #expect(counter.count == 3)
        #expect(kvo.unobserve(accounts[3]) == 1)
        #expect(kvo.unobserveAll() == 2)
        for account in accounts { account.name = "again" }
        #expect(counter.count == 3)
    }

    @Test func deallocatedControllerDeliversNothing() throws {
        let observer = Observer()
        let account = Account()
        let counter = Counter()
        var kvo: KVOController<Observer>? = KVOController(observer: observer)
        try kvo!.observe(account, \.name) { _, _, _ in counter.increment() }
        account.name = "1"
        kvo = nil
        account.name = "2"
        #expect(counter.count == 1)
    }

    @Test func deallocatedObserverIsSkippedAndItsObservationRemoved() throws {
        let subject = CountedSubject()
        let counter = Counter()
        var observer: Observer? = Observer()
        let kvo = KVOController(observer: observer!)
        try kvo.observe(subject, \.value) { _, _, _ in counter.increment() }
        subject.value = 1
        #expect(liveObservations(of: \CountedSubject.value, on: subject) == 1)
        observer = nil
        subject.value = 2  // meets the dead observer: skipped, its removal queued
        flushReleases()
        subject.value = 3
        #expect(counter.count == 1)
        #expect(kvo.observer == nil)
        #expect(liveObservations(of: \CountedSubject.value, on: subject) == 0)
    }

    @Test func deadObserversBlockAndCapturesAreReleasedWhileTheControllerLives() throws {
        let subject = DeathWatched()
        let released = Counter()
        var observer: Observer? = Observer()
        let kvo = KVOController(observer: observer!)
        do {
            let capture = LifetimeProbe(released)
            try kvo.observe(subject, \.name) { _, _, _ in _ = capture }
        }
        observer = nil
        subject.name = "x"
        flushReleases()
        #expect(released.count == 1)
        withExtendedLifetime(kvo) {}
    }

    @Test func deadObserversKeyPathChainIsRemovedWhileTheControllerLives() throws {
        let document = Document(account: Account(name: "a"))
        let released = Counter()
        var observer: Observer? = Observer()
        let kvo = KVOController(observer: observer!)
        do {
            let capture = LifetimeProbe(released)
            try kvo.observe(document, \.account.name) { _, _, _ in _ = capture }
        }
        observer = nil
        document.account.name = "b"  // meets the dead observer
        flushReleases()
        #expect(released.count == 1)
        #expect(!kvo.unobserve(document, \.account.name))  // already gone
        withExtendedLifetime(kvo) {}
    }

    @Test func deadObserversEntryStopsRetainingTheObservedObject() throws {
        let died = Counter()
        var observer: Observer? = Observer()
        let kvo = KVOController(observer: observer!)
        do {
            let account = Account(onDeinit: { died.increment() })
            try kvo.observe(account, \.name) { _, _, _ in }
            observer = nil
            account.name = "x"
        }
        flushReleases()
        #expect(died.count == 1)
        withExtendedLifetime(kvo) {}
    }

    @Test func observingNilObjectThrowsInvalidArgument() throws {
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let account: Account? = nil
        #expect(throws: KVOError.invalidArgument) { try kvo.observe(account, \.name) { _, _, _ in } }
        kvo.unobserve(account, \.name)
        kvo.unobserve(nil)
    }

    @Test func observingTheSameKeyPathTwiceIsANoOp() throws {
        let observer = Observer()
        let account = Account()
        let kvo = KVOController(observer: observer)
        let counter = Counter()
        #expect(try kvo.observe(account, \.name) { _, _, _ in counter.increment() })
        #expect(try !kvo.observe(account, \.name) { _, _, _ in counter.increment() })
        account.name = "x"
        #expect(counter.count == 1)
    }

    @Test func observingAPropertyThroughItsBaseAndSubclassKeyPathsIsOneObservation() throws {
        let observer = Observer()
        let account = SavingsAccount()
        let kvo = KVOController(observer: observer)
        let counter = Counter()
        #expect(try kvo.observe(account, \SavingsAccount.name) { _, _, _ in counter.increment() })
        #expect(
            try !kvo.observe(account as BaseAccount, \BaseAccount.name) { _, _, _ in counter.increment() })
        account.name = "x"
        #expect(counter.count == 1)
    }

    @Test func unobservingThroughTheBaseKeyPathRemovesTheSubclassKeyPathObservation() throws {
        let observer = Observer()
        let account = SavingsAccount()
        let kvo = KVOController(observer: observer)
        let counter = Counter()
        try kvo.observe(account, \SavingsAccount.name) { _, _, _ in counter.increment() }
        kvo.unobserve(account as BaseAccount, \BaseAccount.name)
        account.name = "x"
        #expect(counter.count == 0)
    }

    @Test func unobservingThroughTheSubclassKeyPathRemovesTheBaseKeyPathObservation() throws {
        let observer = Observer()
        let account = SavingsAccount()
        let kvo = KVOController(observer: observer)
        let counter = Counter()
        try kvo.observe(account as BaseAccount, \BaseAccount.name) { _, _, _ in counter.increment() }
        kvo.unobserve(account, \SavingsAccount.name)
        account.name = "x"
        #expect(counter.count == 0)
    }

    @Test func unobserveReportsWhetherItRemovedAnObservation() throws {
        let account = Account()
        let document = Document(account: Account())
        let kvo = KVOController(observer: Observer())
        try kvo.observe(account, \.name) { _, _, _ in }
        try kvo.observe(document, \.account.name) { _, _, _ in }
        #expect(kvo.unobserve(account, \.name))
        #expect(!kvo.unobserve(account, \.name))
        #expect(!kvo.unobserve(account, \.balance))
        #expect(kvo.unobserve(document, \.account.name))
        #expect(!kvo.unobserve(document, \.account.name))
    }

    @Test func unobservingAnObjectReportsHowManyObservationsItRemoved() throws {
        let a = Account()
        let b = Account()
        let kvo = KVOController(observer: Observer())
        try kvo.observe(a, keyPaths: [\.name, \.balance]) { _, _, _ in }
        try kvo.observe(b, \.name) { _, _, _ in }
        #expect(kvo.unobserve(a) == 2)
        #expect(kvo.unobserve(a) == 0)
        #expect(kvo.unobserveAll() == 1)
        #expect(kvo.unobserveAll() == 0)
    }

    @Test func unobservingAfterTheObserverDiedReportsNotFound() throws {
        let subject = DeathWatched()
        var observer: Observer? = Observer()
        let kvo = KVOController(observer: observer!)
        try kvo.observe(subject, \.value) { _, _, _ in }
        try kvo.observe(subject, \.name) { _, _, _ in }
        observer = nil
        subject.value = 1  // meets the dead observer: its removal is queued
        flushReleases()
        #expect(!kvo.unobserve(subject, \.value))
        // Never reached by a change, the other observation is still registered.
        #expect(kvo.unobserveAll() == 1)
    }

    @Test func retainsObservedByDefault() throws {
        let observer = Observer()
        let died = Counter()
        let kvo = KVOController(observer: observer)
        do {
            let account = Account(onDeinit: { died.increment() })
            try kvo.observe(account, \.name) { _, _, _ in }
        }
        #expect(died.count == 0)
        kvo.unobserveAll()
        #expect(died.count == 1)
    }

    @Test func nonRetainingControllerSurvivesObservedObjectDeath() throws {
        let observer = Observer()
        let died = Counter()
        let counter = Counter()
        let kvo = KVOController(observer: observer, retainsObserved: false)
        do {
            let account = Account(onDeinit: { died.increment() })
            try kvo.observe(account, \.name) { _, _, _ in counter.increment() }
            account.name = "x"
        }
        #expect(died.count == 1)
        // New objects (possibly at the same address) are unaffected and observable.
        for _ in 0..<20 {
            let account = Account()
            account.name = "y"
            #expect(try kvo.observe(account, \.name) { _, _, _ in counter.increment() })
            account.name = "z"
        }
        #expect(counter.count == 21)
        kvo.unobserveAll()
    }

    @Test func controllerObservesKeyPathChains() throws {
        let observer = Observer()
        let document = Document(account: Account(name: "a"))
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        try kvo.observe(document, \.account.name, options: .new) { _, _, change in
            log.append(change.newValue ?? "-")
        }
        document.account.name = "b"
        document.account = Account(name: "c")
        kvo.unobserve(document, \.account.name)
        document.account.name = "d"
        #expect(log.values == ["b", "c"])
    }

    @Test func controllerNotRetainingForgetsDeadObjects() throws {
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer, retainsObserved: false)
        do {
            let holder = AtkHolder()
            try kvo.observe(holder, keyPath: "owner.label") { _, _, _ in }
            try kvo.observe(holder, \.owner) { _, _, _ in }
            #expect(kvo.observedObjects.count == 1)
        }
        #expect(kvo.observedObjects.isEmpty)
        #expect(kvo.unobserveAll() == 0)
    }

    @Test func reentrantUnobserveAndReregisterFromCallback() throws {
        let owner = AtkOwner()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        let recorder = Recorder<String>()
        try kvo.observe(owner, keyPath: "label", options: [.prior, .new]) { _, o, change in
            recorder.add(change.isPrior ? "prior" : "post")
            if change.isPrior {
                // Unobserve by typed key path, then re-register by name, mid-dispatch.
                _ = kvo.unobserve(o, \.label)
                _ = try? kvo.observe(o, keyPath: "label", options: .new) { _, _, _ in recorder.add("new") }
            }
        }
        owner.label = "a"
        // The post-change dispatch starts after the re-registration: it gets "a".
        #expect(recorder.all == ["prior", "new"])
        owner.label = "b"
        #expect(recorder.all == ["prior", "new", "new"])
        _ = kvo.unobserveAll()
    }
}

/// Observed only by the one test that counts its engine observations: the
/// count is the key's, across objects, and tests run in parallel.
final class CountedSubject: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \CountedSubject.value] }
    @Observed var value = 0
}

/// Observed by the tests of dead observers.
final class DeathWatched: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \DeathWatched.value, "name": \DeathWatched.name] }
    @Observed var value = 0
    @Observed var name = ""
}

/// How many engine observations of `keyPath`'s property exist, on any object
/// (the key's probe counter: exact once removals were flushed).
func liveObservations<Root: KeyValueObservable, Value>(
    of keyPath: KeyPath<Root, Value>, on object: Root
) -> Int {
    let resolved = try! KeyPathRegistry.resolve(keyPath, on: object)
    return Int(Engine.probe(of: resolved.key).raw.pointee.observations)
}

@MainActor
final class MainActorViewModel {
    var received: [Double] = []
    var pings = 0
    var continuation: CheckedContinuation<Void, Never>?

    func balanceDidChange(_ change: ObservedChange<Double>) {
        MainActor.assertIsolated()
        received.append(change.newValue ?? -1)
        if received.count == 3 { continuation?.resume(); continuation = nil }
    }

    func ping() {
        MainActor.assertIsolated()
        pings += 1
    }
}

/// A global actor other than the main actor, visible outside the test module.
@globalActor public actor PublicTestActor {
    public static let shared = PublicTestActor()
}

/// A global actor other than the main actor, internal to the test module.
@globalActor actor InternalTestActor {
    static let shared = InternalTestActor()
}

/// An observer whose actions are isolated to custom global actors. Each
/// action checks that it runs on its actor, then counts the call.
final class CustomActorViewModel: Sendable {
    let calls = Counter()

    @PublicTestActor func publicActorBalanceDidChange(_ change: ObservedChange<Double>) {
        PublicTestActor.shared.assertIsolated()
        calls.increment()
    }

    @PublicTestActor func publicActorPing() {
        PublicTestActor.shared.assertIsolated()
        calls.increment()
    }

    @InternalTestActor func internalActorBalanceDidChange(_ change: ObservedChange<Double>) {
        InternalTestActor.shared.assertIsolated()
        calls.increment()
    }

    @InternalTestActor func internalActorPing() {
        InternalTestActor.shared.assertIsolated()
        calls.increment()
    }

    @InternalTestActor func internalActorCount(_ change: ObservedChange<String>) -> Int {
        InternalTestActor.shared.assertIsolated()
        calls.increment()
        return calls.count
    }
}

@Suite(.needsLayout("its registrations")) struct KVOControllerIsolationTests {
    @Test func actionsIsolatedToOtherGlobalActorsAreRefusedAndNeverRunOffTheirActor() throws {
        let viewModel = CustomActorViewModel()
        let account = Account()
        let kvo = KVOController(observer: viewModel)
        typealias Model = CustomActorViewModel
        #expect(throws: KVOError.isolatedAction) { try kvo.observe(account, \.balance, options: .new, action: Model.publicActorBalanceDidChange) }
        #expect(throws: KVOError.isolatedAction) { try kvo.observe(account, \.balance, action: Model.publicActorPing) }
        #expect(throws: KVOError.isolatedAction) { try kvo.observe(account, \.balance, options: .new, action: Model.internalActorBalanceDidChange) }
        #expect(throws: KVOError.isolatedAction) { try kvo.observe(account, \.name, action: Model.internalActorPing) }
        #expect(throws: KVOError.isolatedAction) { try kvo.observe(account, \.name, options: .new, action: Model.internalActorCount) }
        #expect(throws: KVOError.isolatedAction) { try kvo.observe(account, \.name, action: { model in model.internalActorPing }) }
        // Refused: nothing was registered, so no change calls an action on this thread.
        account.balance = 1
        account.name = "changed"
        #expect(viewModel.calls.count == 0)
        #expect(kvo.unobserveAll() == 0)
    }

    @Test func nonisolatedActionReturningAValueRunsSynchronously() throws {
        final class Tally: Sendable {
            let counter = Counter()
            func record(_ change: ObservedChange<Double>) -> Int {
                counter.increment()
                return counter.count
            }
        }
        let tally = Tally()
        let account = Account()
        let kvo = KVOController(observer: tally)
        #expect(try kvo.observe(account, \.balance, options: .new, action: Tally.record))
        account.balance = 2
        #expect(tally.counter.count == 1)
    }


    @MainActor
    @Test func mainActorTargetActionIsDeliveredOnTheMainActorInOrder() async throws {
        let viewModel = MainActorViewModel()
        let account = Account()
        let kvo = KVOController(observer: viewModel)
        try kvo.observe(account, \.balance, options: .new, action: MainActorViewModel.balanceDidChange)
        #expect(try kvo.observe(account, \.name, action: MainActorViewModel.ping))
        await withCheckedContinuation { continuation in
            viewModel.continuation = continuation
            let thread = Thread {
                account.name = "first"
                for value in [1.0, 2.0, 3.0] { account.balance = value }
            }
            thread.start()
        }
        #expect(viewModel.received == [1, 2, 3])
        #expect(viewModel.pings == 1)  // hops keep order: it ran before the first balance
        await Task.yield()
        _ = kvo
    }
}
