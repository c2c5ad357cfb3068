import Foundation
import Testing
@testable import SwiftKVO

/// SPEC §2 items 1–11 and 16 through the token-style Swift API.
@Suite(.needsLayout("its registrations")) struct ObservedTests {
    // MARK: 1. Options

    @Test func newOptionCarriesNewValueOnly() throws {
        let account = Account()
        let log = Log<ObservedChange<String>>()
        let token = try account.observe(\.name, options: .new) { _, change in log.append(change) }
        account.name = "a"
        #expect(log.count == 1)
        #expect(log.values[0].newValue == "a")
        #expect(log.values[0].oldValue == nil)
        #expect(log.values[0].kind == .setting)
        #expect(!log.values[0].isPrior)
        token.invalidate()
    }

    @Test func oldOptionCarriesOldValueOnly() throws {
        let account = Account(name: "x")
        let log = Log<ObservedChange<String>>()
        let token = try account.observe(\.name, options: .old) { _, change in log.append(change) }
        account.name = "y"
        #expect(log.values.map(\.oldValue) == ["x"])
        #expect(log.values.map(\.newValue) == [nil])
        token.invalidate()
    }

    @Test func initialIsDeliveredDuringRegistrationWithCurrentValue() throws {
        let account = Account(name: "now")
        let log = Log<ObservedChange<String>>()
        let token = try account.observe(\.name, options: [.initial, .new, .old]) { _, change in
            log.append(change)
        }
        #expect(log.count == 1)
        #expect(log.values[0].isInitial)
        #expect(log.values[0].kind == .setting)
        #expect(log.values[0].newValue == "now")
        #expect(log.values[0].oldValue == nil)  // never old in the initial notification
        account.name = "later"
        #expect(log.count == 2)
        #expect(!log.values[1].isInitial)
        token.invalidate()
    }

    @Test func initialCarriesTheCurrentValueOnlyWhenNewIsAsked() throws {
        // Token and controller boxes choose their delivery function by `.new`:
        // both choices, both kinds of box.
        let account = Account(name: "now")
        let log = Log<String?>()
        let withNew = try account.observe(\.name, options: [.initial, .new]) { _, change in
            log.append(change.newValue)
        }
        let withoutNew = try account.observe(\.name, options: .initial) { _, change in
            log.append(change.newValue)
        }
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        try kvo.observe(account, \.name, options: [.initial, .new]) { _, _, change in log.append(change.newValue) }
        try kvo.observe(account, \.balance, options: .initial) { _, _, change in
            log.append(change.newValue.map(String.init(describing:)))
        }
        #expect(log.values == ["now", nil, "now", nil])
        withNew.invalidate()
        withoutNew.invalidate()
    }

    @Test func priorDeliversOldValueBeforeTheChangeAndNeverTheNewValue() throws {
        let account = Account(name: "a")
        let log = Log<String>()
        let token = try account.observe(\.name, options: [.prior, .old, .new]) { account, change in
            log.append(
                "\(change.isPrior ? "prior" : "post") old=\(change.oldValue ?? "-") new=\(change.newValue ?? "-") stored=\(account.name)"
            )
        }
        account.name = "b"
        #expect(log.values == ["prior old=a new=- stored=a", "post old=a new=b stored=b"])
        token.invalidate()
    }

    @Test func noOptionStillCallsBackWithoutValues() throws {
        let account = Account()
        let log = Log<ObservedChange<Double>>()
        let token = try account.observe(\.balance) { _, change in log.append(change) }
        account.balance = 1
        account.balance = 2
        #expect(log.count == 2)
        #expect(log.values.allSatisfy { $0.oldValue == nil && $0.newValue == nil })
        token.invalidate()
    }

    // MARK: 2. Change kinds

    @Test func arrayMutationsCarryKindIndexesAndAffectedElements() throws {
        let account = Account()
        let log = Log<ObservedChange<[Transaction]>>()
        let token = try account.observe(\.transactions, options: [.old, .new]) { _, change in
            log.append(change)
        }
        let array = account.mutableArray(\.transactions)
        array.append(Transaction(amount: 1))
        array.append(contentsOf: [Transaction(amount: 2), Transaction(amount: 3)])
        array.replace(at: 1, with: Transaction(amount: 20))
        array.remove(at: 0)
        account.transactions = []
        let changes = log.values
        #expect(changes.map(\.kind) == [.insertion, .insertion, .replacement, .removal, .setting])
        #expect(changes[0].indexes == [0])
        #expect(changes[0].newValue == [Transaction(amount: 1)])
        #expect(changes[0].oldValue == nil)  // never old for an insertion
        #expect(changes[1].indexes == [1, 2])
        #expect(changes[2].indexes == [1])
        #expect(changes[2].oldValue == [Transaction(amount: 2)])
        #expect(changes[2].newValue == [Transaction(amount: 20)])
        #expect(changes[3].indexes == [0])
        #expect(changes[3].oldValue == [Transaction(amount: 1)])
        #expect(changes[3].newValue == nil)  // never new for a removal
        #expect(changes[4].indexes == [])
        #expect(changes[4].newValue == [])
        #expect(account.transactions.isEmpty)
        token.invalidate()
    }

    @Test func arrayMutatorOutOfRangeIsANoOp() throws {
        let account = Account()
        let counter = Counter()
        let token = try account.observe(\.transactions) { _, _ in counter.increment() }
        let array = account.mutableArray(\.transactions)
        #expect(array.remove(at: 3) == nil)
        #expect(!array.insert(Transaction(amount: 1), at: 5))
        #expect(!array.replace(at: -1, with: Transaction(amount: 1)))
        #expect(array.removeLast() == nil)
        #expect(counter.count == 0)
        token.invalidate()
    }

    // MARK: 3. Every change notifies

    @Test func objectFirstObservedAfterItsPropertyIsObservedElsewhereIsNotified() throws {
        let watched = Account()
        let quiet = Account()
        let log = Log<String>()
        let first = try watched.observe(\.name, options: .new) { _, c in log.append("watched \(c.newValue!)") }
        quiet.name = "unobserved"  // the sparse path: this object was never observed
        let second = try quiet.observe(\.name, options: .new) { _, c in log.append("quiet \(c.newValue!)") }
        quiet.name = "now observed"
        watched.name = "w"
        #expect(log.values == ["quiet now observed", "watched w"])
        first.invalidate()
        second.invalidate()
    }

    @Test func settingAnEqualValueStillNotifies() throws {
        let account = Account(name: "same")
        let counter = Counter()
        let token = try account.observe(\.name) { _, _ in counter.increment() }
        account.name = "same"
        account.name = "same"
        #expect(counter.count == 2)
        token.invalidate()
    }

    @Test func runawayReentrancyStopsAtTheNestingLimit() throws {
        let account = Account()
        let counter = Counter()
        let token = try account.observe(\.balance) { account, _ in
            counter.increment()
            account.balance += 1  // keeps changing what it observes
        }
        account.balance = 0
        #expect(counter.count >= 1)
        #expect(counter.count <= 1000)
        token.invalidate()
    }

    // MARK: 4. Order

    @Test func observersAreCalledInRegistrationOrderPriorAndPost() throws {
        let account = Account()
        let log = Log<String>()
        let tokens = try (0..<5).map { index in
            try account.observe(\.name, options: .prior) { _, change in
                log.append("\(change.isPrior ? "p" : "d")\(index)")
            }
        }
        account.name = "x"
        #expect(log.values == ["p0", "p1", "p2", "p3", "p4", "d0", "d1", "d2", "d3", "d4"])
        tokens.forEach { $0.invalidate() }
    }

    // MARK: 5. Snapshot rule

    @Test func observerAddedDuringDispatchGetsNothingForThatChange() throws {
        let account = Account()
        let late = Counter()
        let added = Log<ObservationToken>()
        let first = try account.observe(\.name) { account, _ in
            if added.count == 0 {
                added.append(try! account.observe(\.name) { _, _ in late.increment() })
            }
        }
        account.name = "1"
        #expect(late.count == 0)
        account.name = "2"
        #expect(late.count == 1)
        first.invalidate()
        added.values.forEach { $0.invalidate() }
    }

    @Test func observerRemovedDuringDispatchBeforeItsTurnIsNotCalled() throws {
        let account = Account()
        let second = Counter()
        let secondToken = Log<ObservationToken>()
        let first = try account.observe(\.name) { _, _ in
            secondToken.values.forEach { $0.invalidate() }
        }
        secondToken.append(try account.observe(\.name) { _, _ in second.increment() })
        account.name = "x"
        #expect(second.count == 0)
        first.invalidate()
    }

    // MARK: 6. Synchronous delivery, re-entrancy

    @Test func deliveryIsSynchronousOnTheChangingThread() throws {
        let account = Account()
        let thread = Log<UInt>()
        let token = try account.observe(\.name) { _, _ in thread.append(currentThreadID()) }
        account.name = "x"
        #expect(thread.values == [currentThreadID()])
        token.invalidate()
    }

    @Test func callbackMayObserveUnobserveAndChangeValues() throws {
        let account = Account()
        let log = Log<String>()
        let inner = Log<ObservationToken>()
        let token = try account.observe(\.name, options: .new) { account, change in
            log.append("name \(change.newValue!)")
            let t = try! account.observe(\.balance, options: .new) { _, change in
                log.append("balance \(change.newValue!)")
            }
            account.balance = 1
            t.invalidate()
            inner.append(t)
        }
        account.name = "x"
        #expect(log.values == ["name x", "balance 1.0"])
        token.invalidate()
    }

    // MARK: 7. Nested will/did

    @Test func nestedManualWillDidPairsNotifyOncePerPair() throws {
        let account = Account()
        let log = Log<ObservedChange<Int>>()
        let token = try account.observe(\.manualCount, options: [.old, .new]) { _, change in
            log.append(change)
        }
        account.willChangeValue(for: \.manualCount)
        account.willChangeValue(for: \.manualCount)
        account.manualCount = 5
        account.didChangeValue(for: \.manualCount)
        account.manualCount = 6
        account.didChangeValue(for: \.manualCount)
        #expect(log.count == 2)
        #expect(log.values[0].newValue == 5)
        #expect(log.values[0].oldValue == 0)
        #expect(log.values[1].newValue == 6)
        #expect(log.values[1].oldValue == 0)
        token.invalidate()
    }

    // MARK: 8. Removal never crashes

    @Test func doubleInvalidateIsANoOpThatReportsNotFound() throws {
        let account = Account()
        let token = try account.observe(\.name) { _, _ in }
        #expect(token.isValid)
        #expect(token.invalidate())
        #expect(!token.invalidate())
        #expect(!token.isValid)
        #expect(throws: Never.self) { try token.invalidateAndWait() }
    }

    @Test func invalidateAfterObservedObjectDiedReportsNotFound() throws {
        var account: Account? = Account()
        let token = try account!.observe(\.name) { _, _ in }
        account = nil
        #expect(!token.invalidate())
        #expect(!token.isValid)
    }

    @Test func invalidatingAKeyPathChainReportsTheRemovalOnce() throws {
        let document = Document(account: Account())
        let token = try document.observe(\.account.name) { _, _ in }
        #expect(token.invalidate())
        #expect(!token.invalidate())
        let waited = try document.observe(\.account.name) { _, _ in }
        try waited.invalidateAndWait()
        #expect(!waited.invalidate())
    }


    @Test func invalidatingStopsDelivery() throws {
        let account = Account()
        let counter = Counter()
        let token = try account.observe(\.name) { _, _ in counter.increment() }
        account.name = "1"
        token.invalidate()
        account.name = "2"
        #expect(counter.count == 1)
    }

    @Test func tokenDeinitRemovesTheObservation() throws {
        let account = Account()
        let counter = Counter()
        do {
            let token = try account.observe(\.name) { _, _ in counter.increment() }
            account.name = "1"
            _ = token
        }
        account.name = "2"
        #expect(counter.count == 1)
    }

    // MARK: 10. Lifetimes

    @Test func observedObjectDeathRemovesItsObservations() throws {
        let released = Counter()
        var account: Account? = Account()
        let probe = LifetimeProbe(released)
        let token = try account!.observe(\.name) { _, _ in _ = probe }
        _ = consume probe
        account = nil
        flushReleases()
        #expect(released.count == 1)  // the handler's context was released
        _ = token
    }

    @Test func newObjectAtReusedAddressSeesNoOldObservations() throws {
        let counter = Counter()
        var tokens: [ObservationToken] = []
        for _ in 0..<50 {
            let account = Account()
            tokens.append(try account.observe(\.name) { _, _ in counter.increment() })
        }
        // Every observed account died; new ones (likely at reused addresses) must be silent.
        for _ in 0..<50 {
            let account = Account()
            account.name = "x"
        }
        #expect(counter.count == 0)
        tokens.forEach { $0.invalidate() }
    }

    @Test func handlerContextIsReleasedExactlyOnceAfterInvalidate() throws {
        let released = Counter()
        let account = Account()
        do {
            let probe = LifetimeProbe(released)
            let token = try account.observe(\.name) { _, _ in _ = probe }
            token.invalidate()
            token.invalidate()
        }
        flushReleases()
        #expect(released.count == 1)
    }

    // MARK: 11. Strict removal

    @Test func invalidateAndWaitInsideACallbackThrowsWouldDeadlock() throws {
        let account = Account()
        let errors = Log<KVOError>()
        let holder = Log<ObservationToken>()
        let token = try account.observe(\.name) { _, _ in
            guard let token = holder.values.first else { return }
            do { try token.invalidateAndWait() } catch let error as KVOError { errors.append(error) } catch {}
        }
        holder.append(token)
        account.name = "x"
        #expect(errors.values == [.wouldDeadlock])
        #expect(token.isValid)  // nothing was removed
        try? token.invalidateAndWait()
        #expect(!token.isValid)
    }

    @Test func invalidateAndWaitWaitsForACallbackRunningOnAnotherThread() throws {
        let account = Account()
        let inside = Counter()
        let finished = Counter()
        let token = try account.observe(\.balance) { _, _ in
            inside.increment()
            usleep(50_000)
            finished.increment()
        }
        let changer = Thread { account.balance = 1 }
        changer.start()
        while inside.count == 0 { sched_yield() }
        try? token.invalidateAndWait()
        #expect(finished.count == 1)  // the running callback completed before it returned
        while !changer.isFinished { sched_yield() }
    }

    // MARK: 12–14. Dependent keys, chains, manual notification

    @Test func dependentKeyNotifiesWhenASourceChanges() throws {
        let person = Person()
        person.firstName = "Ada"
        person.lastName = "Byron"
        let log = Log<ObservedChange<String>>()
        let token = try person.observe(\.fullName, options: [.old, .new]) { _, change in
            log.append(change)
        }
        person.lastName = "Lovelace"
        person.firstName = "Augusta"
        #expect(log.values.map(\.oldValue) == ["Ada Byron", "Ada Lovelace"])
        #expect(log.values.map(\.newValue) == ["Ada Lovelace", "Augusta Lovelace"])
        token.invalidate()
    }

    @Test func keyPathChainFollowsReplacementOfTheIntermediate() throws {
        let first = Account(name: "first")
        let second = Account(name: "second")
        let document = Document(account: first)
        let log = Log<ObservedChange<String>>()
        let token = try document.observe(\.account.name, options: [.old, .new]) { _, change in
            log.append(change)
        }
        first.name = "first-1"
        document.account = second
        first.name = "ignored"  // no longer on the path
        second.name = "second-1"
        let changes = log.values
        #expect(changes.map(\.kind) == [.setting, .setting, .setting])
        #expect(changes.map(\.oldValue) == ["first", "first-1", "second"])
        #expect(changes.map(\.newValue) == ["first-1", "second", "second-1"])
        #expect(changes.allSatisfy { $0.keyPath == \Document.account.name })
        token.invalidate()
        second.name = "after"
        #expect(log.count == 3)
    }

    @Test func threeLevelChainFollowsEveryLevel() throws {
        let library = Library(document: Document(account: Account(name: "a")))
        let log = Log<String>()
        let token = try library.observe(\.document.account.name, options: .new) { _, change in
            log.append(change.newValue ?? "-")
        }
        library.document.account.name = "b"
        library.document.account = Account(name: "c")
        library.document = Document(account: Account(name: "d"))
        library.document.account.name = "e"
        #expect(log.values == ["b", "c", "d", "e"])
        token.invalidate()
    }

    @Test func manualKeyNotifiesOnlyThroughWillDid() throws {
        let account = Account()
        let log = Log<ObservedChange<Int>>()
        let token = try account.observe(\.manualCount, options: [.old, .new]) { _, change in
            log.append(change)
        }
        account.manualCount = 1  // automatic notification is off
        #expect(log.count == 0)
        account.setManualCount(2)
        account.setManualCount(2)  // unchanged: not announced
        #expect(log.count == 1)
        #expect(log.values[0].oldValue == 1)
        #expect(log.values[0].newValue == 2)
        token.invalidate()
    }

    // MARK: Key identity

    @Test func subclassKeyPathsReachBaseClassProperties() throws {
        let savings = SavingsAccount()
        let log = Log<String>()
        let t1 = try savings.observe(\.name, options: .new) { _, c in log.append("name \(c.newValue!)") }
        let t2 = try savings.observe(\.rate, options: .new) { _, c in log.append("rate \(c.newValue!)") }
        let base: BaseAccount = savings
        base.name = "via base"
        savings.rate = 2
        #expect(log.values == ["name via base", "rate 2.0"])
        t1.invalidate()
        t2.invalidate()
    }

    @Test func baseClassKeyPathObservesASubclassInstanceLikeTheSubclassKeyPath() throws {
        let savings = SavingsAccount()
        let base: BaseAccount = savings
        let viaBase = Log<String>()
        let viaSubclass = Log<String>()
        let t1 = try base.observe(\.name, options: [.old, .new]) { _, c in
            viaBase.append("\(c.oldValue!)→\(c.newValue!)")
        }
        let t2 = try savings.observe(\.name, options: [.old, .new]) { _, c in
            viaSubclass.append("\(c.oldValue!)→\(c.newValue!)")
        }
        #expect(t1.isValid && t2.isValid)
        savings.name = "a"
        base.name = "b"
        savings.rate = 1
        #expect(viaBase.values == ["→a", "a→b"])
        #expect(viaSubclass.values == viaBase.values)
        t1.invalidate()
        t2.invalidate()
    }

    @Test func changeReportsTheObservedKeyPath() throws {
        let account = Account()
        let log = Log<AnyKeyPath>()
        let token = try account.observe(\.balance) { _, change in log.append(change.keyPath) }
        account.balance = 3
        #expect(log.values == [\Account.balance])
        token.invalidate()
    }

    // MARK: 17. Scale

    @Test func oneHundredThousandObserversOnOneKeyRegisterNotifyAndGo() throws {
        let account = Account()
        let counter = Counter()
        var tokens: [ObservationToken] = []
        tokens.reserveCapacity(100_000)
        for _ in 0..<100_000 {
            tokens.append(try account.observe(\.balance) { _, _ in counter.increment() })
        }
        account.balance = 1
        #expect(counter.count == 100_000)
        tokens.removeAll()
        account.balance = 2
        #expect(counter.count == 100_000)
    }

    // MARK: 16. Bad input

    @Test func unobservableKeyPathThrowsAtRegistrationNotACrash() throws {
        let account = Account()
        let called = Counter()
        #expect(throws: KVOError.unsupportedKeyPath) {
            try account.observe(\.plain) { _, _ in called.increment() }
        }
        account.plain = 1
        #expect(called.count == 0)
    }

    @Test func statusesMirrorTheEngine() throws {
        #expect(KVOError.notFound.rawValue == -2)
        #expect(KVOError.wouldDeadlock.description.contains("deadlock"))
        #expect(ObservingOptions.new.rawValue == 1 && ObservingOptions.prior.rawValue == 8)
    }
}

@Suite(.needsLayout("its registrations")) struct ManualCollectionNotificationTests {
    @Test func manualCollectionChangesCarryKindIndexesAndAffectedElements() throws {
        let account = Account()
        account.transactions = [Transaction(amount: 1), Transaction(amount: 2)]
        let log = Log<ObservedChange<[Transaction]>>()
        let token = try account.observe(\.transactions, options: [.old, .new, .prior]) { _, change in
            log.append(change)
        }
        account.willChange(.replacement, at: [1], for: \.transactions)
        account.transactions[1].amount = 20  // a setting of its own
        account.didChange(.replacement, at: [1], for: \.transactions)
        let changes = log.values
        // prior(replacement), prior(setting), setting, replacement
        #expect(changes.map(\.kind) == [.replacement, .setting, .setting, .replacement])
        #expect(changes[0].isPrior && changes[0].oldValue == [Transaction(amount: 2)])
        #expect(changes[3].indexes == [1])
        #expect(changes[3].oldValue == [Transaction(amount: 2)])
        #expect(changes[3].newValue == [Transaction(amount: 20)])
        token.invalidate()
    }

    @Test func manualCollectionChangeWithBadIndexesDoesNotCrash() throws {
        let account = Account()
        let counter = Counter()
        let token = try account.observe(\.transactions, options: [.old, .new]) { _, change in
            #expect(change.oldValue == nil)
            counter.increment()
        }
        account.willChange(.removal, at: [7, -1], for: \.transactions)
        account.didChange(.removal, at: [7, -1], for: \.transactions)
        account.didChange(.insertion, at: [3], for: \.transactions)  // unpaired
        #expect(counter.count == 2)
        token.invalidate()
    }
}

@Suite(.needsLayout("its registrations")) struct KeyIdentityTests {
    @Test func genericClassSpecializationsAreObservedIndependently() throws {
        let ints = Box(1)
        let strings = Box("a")
        let log = Log<String>()
        let t1 = try ints.observe(\.value, options: [.old, .new]) { _, c in
            log.append("int \(c.oldValue!)→\(c.newValue!)")
        }
        let t2 = try strings.observe(\.value, options: [.old, .new]) { _, c in
            log.append("string \(c.oldValue!)→\(c.newValue!)")
        }
        ints.value = 2
        strings.value = "b"
        #expect(log.values == ["int 1→2", "string a→b"])
        t1.invalidate()
        t2.invalidate()
    }

    @Test func dependentKeyDeliversPriorNotifications() throws {
        let person = Person()
        person.firstName = "A"
        person.lastName = "B"
        let log = Log<String>()
        let token = try person.observe(\.fullName, options: [.prior, .old, .new]) { _, c in
            log.append("\(c.isPrior ? "prior" : "post") \(c.oldValue ?? "-") \(c.newValue ?? "-")")
        }
        person.firstName = "C"
        #expect(log.values == ["prior A B -", "post A B C B"])
        token.invalidate()
    }

    @Test func computedPropertyReadingOneObservedPropertyIsRefused() throws {
        let person = Person()
        let log = Log<String>()
        #expect(throws: KVOError.unsupportedKeyPath) {
            try person.observe(\.upperFirst, options: [.old, .new]) { _, c in
                log.append("\(c.oldValue ?? "-")→\(c.newValue ?? "-")")
            }
        }
        let controller = KVOController(observer: Observer())
        #expect(throws: KVOError.unsupportedKeyPath) {
            try controller.observe(person, \.upperFirst) { _, _, _ in log.append("controller") }
        }
        person.firstName = "x"
        #expect(log.values.isEmpty)
    }

    @Test func undeclaredComputedPropertyReadingTwoObservedPropertiesIsRefused() throws {
        let person = Person()
        let log = Log<String>()
        #expect(throws: KVOError.unsupportedKeyPath) {
            try person.observe(\.greeting, options: [.old, .new]) { _, c in
                log.append("\(c.oldValue ?? "-")→\(c.newValue ?? "-")")
            }
        }
        let controller = KVOController(observer: Observer())
        #expect(throws: KVOError.unsupportedKeyPath) {
            try controller.observe(person, \.greeting) { _, _, _ in log.append("controller") }
        }
        person.lastName = "C"
        #expect(log.values.isEmpty)
    }

    @Test func computedPropertyAtTheEndOfAChainIsRefused() throws {
        let document = Document(account: Account(name: "a"))
        let log = Log<String>()
        #expect(throws: KVOError.unsupportedKeyPath) {
            try document.observe(\.account.upperName, options: [.old, .new]) { _, c in
                log.append("\(c.oldValue ?? "-")→\(c.newValue ?? "-")")
            }
        }
        document.account.name = "b"
        #expect(log.values.isEmpty)
    }

    @Test func dependentKeyThroughASubclassKeyPathDeliversWhatTheBaseKeyPathDoes() throws {
        let employee = Employee()
        employee.firstName = "A"
        employee.lastName = "B"
        let viaBase = Log<String>()
        let viaSubclass = Log<String>()
        let base: Contact = employee
        let t1 = try base.observe(\.fullName, options: [.prior, .old, .new]) { _, c in
            viaBase.append("\(c.isPrior ? "prior " : "")\(c.oldValue ?? "-")→\(c.newValue ?? "-")")
        }
        let t2 = try employee.observe(\.fullName, options: [.prior, .old, .new]) { _, c in
            viaSubclass.append("\(c.isPrior ? "prior " : "")\(c.oldValue ?? "-")→\(c.newValue ?? "-")")
        }
        #expect(t2.isValid)
        employee.lastName = "C"
        employee.title = "not a source"
        #expect(viaBase.values == ["prior A B→-", "A B→A C"])
        #expect(viaSubclass.values == viaBase.values)
        t1.invalidate()
        t2.invalidate()
    }

    @Test func valuesOfAnUnsupportedKeyPathThrowsAtTheCall() throws {
        let account = Account()
        #expect(throws: KVOError.unsupportedKeyPath) { try account.values(for: \.plain) }
    }
}

@Suite(.needsLayout("its registrations")) struct ChainSpellingTests {
    @Test func chainThroughAnExistentialIntermediateIsRefused() {
        // A protocol requirement is not a declared observable property: the
        // conforming type may compute it (SPEC §2 item 17).
        let holder = NamedHolder(item: Account(name: "a"))
        #expect(throws: KVOError.unsupportedKeyPath) {
            try holder.observe(\.item.name, options: [.old, .new]) { _, _ in }
        }
    }

    @Test func forceUnwrappedChainIsRefusedAndSuggestsOptionalChaining() throws {
        let folder = Folder()
        folder.account = Account(name: "a")
        let log = Log<String>()
        #expect(throws: KVOError.forceUnwrappedKeyPath) {
            try folder.observe(\.account!.name, options: .new) { _, change in
                log.append(change.newValue ?? "-")
            }
        }
        #expect(KVOError.forceUnwrappedKeyPath.description.contains("?."))
        folder.account = nil  // nothing registered: no observer reads through the nil link
        #expect(log.values.isEmpty)
    }

    @Test func forceUnwrappedChainThroughANilLinkIsRefusedWithoutTrapping() throws {
        let folder = Folder()
        #expect(throws: KVOError.forceUnwrappedKeyPath) {
            try folder.observe(\.account!.name) { _, _ in }
        }
        let controller = KVOController(observer: Observer())
        #expect(throws: KVOError.forceUnwrappedKeyPath) {
            try controller.observe(folder, \.account!.name) { _, _, _ in }
        }
    }

    @Test func optionalChainFollowsALinkThatBecomesNil() throws {
        let folder = Folder()
        folder.account = Account(name: "a")
        let log = Log<String>()
        let token = try folder.observe(\.account?.name, options: [.old, .new]) { _, change in
            log.append("\(change.oldValue.flatMap { $0 } ?? "nil")→\(change.newValue.flatMap { $0 } ?? "nil")")
        }
        folder.account = nil
        folder.account = Account(name: "b")
        #expect(log.values == ["a→nil", "nil→b"])
        token.invalidate()
    }

    @Test func invalidatingAChainWhoseRootDiedReportsNotFound() throws {
        var document: Document? = Document(account: Account(name: "a"))
        let token = try document!.observe(\.account.name) { _, _ in }
        #expect(token.isValid)
        document = nil
        #expect(!token.isValid)
        #expect(!token.invalidate())
    }
}

@Suite(.needsLayout("its registrations")) struct OptionalChainTests {
    @Test func optionalChainFollowsTheLinkAppearingAndDisappearing() throws {
        let folder = Folder()
        let account = Account(name: "a")
        let log = Log<String>()
        let token = try folder.observe(\.account?.name, options: [.old, .new]) { _, change in
            let old = change.oldValue.map { $0 ?? "nil" } ?? "-"
            let new = change.newValue.map { $0 ?? "nil" } ?? "-"
            log.append("\(change.kind) \(old)→\(new)")
        }
        #expect(token.isValid)
        folder.account = account
        account.name = "b"
        folder.account = nil
        account.name = "c"  // no longer on the path
        #expect(log.values == ["setting nil→a", "setting a→b", "setting b→nil"])
        token.invalidate()
    }
}
