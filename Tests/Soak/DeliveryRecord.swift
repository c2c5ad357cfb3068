// DeliveryRecord.swift — what one Swift-layer observation received, checked
// once it can receive nothing more.
//
// Range accounting, for an observation of one subject's change sequence (its
// value, its items or its posts; changes made by one thread at a time):
//   a = the first change begun after the registration returned (registration
//       holds the subject, so no change is in flight): earlier ones must not
//       be delivered;
//   b = the last change finished before the removal began: changes a...b must
//       each be delivered exactly once;
//   z = the last change begun before the removal returned, or before the
//       observer's deinit began: later ones must not be delivered.
// For an observation that ends with its observer's death, b is taken when the
// graveyard is about to drop the observer: its last reference may go then or
// later, and weak references read nil from that moment, before its deinit runs.
// Deliveries arrive in sequence order, so every call is checked to carry the
// number after the previous one (nothing missed in between, nothing twice),
// and at the end: first >= a, last <= z, and when a <= b, first <= a and
// last >= b. Prior notifications are a second range checked the same way.
//
// Count accounting, for an observation of every sender's posts (posted by many
// threads at once): it received at least the posts that began after its
// registration returned and finished before its removal began, and at most
// those that finished after its registration began and began before its
// removal returned. Duplicates within one post are caught by the poster's trace.
//
// The record is checked when both have happened: the observation ended (end,
// or its observer died) and the handler closure was released (Receiver's
// deinit) — after which no callback can run. A record never checked by the
// end of the round means a handler was never released.

import SwiftKVO
import Synchronization

/// Posts of the shared name by every sender: begun and finished counts.
final class PostCounter: Sendable {
    private let begun = Atomic<UInt64>(0)
    private let done = Atomic<UInt64>(0)

    var started: UInt64 { begun.load(ordering: .sequentiallyConsistent) }
    var finished: UInt64 { done.load(ordering: .sequentiallyConsistent) }

    func begin() { begun.add(1, ordering: .sequentiallyConsistent) }
    func end() { done.add(1, ordering: .sequentiallyConsistent) }
}

final class DeliveryRecord: Sendable {
    enum Source: Sendable {
        /// One subject's change sequence: range accounting.
        case sequence(ChangeSequence)
        /// Every sender's posts: count accounting.
        case allPosts(PostCounter)
    }

    /// Deliveries of one kind (changes, or prior notifications) in arrival order.
    private final class Received: Sendable {
        let first = Atomic<UInt64>(0)
        let last = Atomic<UInt64>(0)
        let count = Atomic<UInt64>(0)

        /// Notes change `number`; returns the previous one (0: none).
        func note(_ number: UInt64) -> UInt64 {
            let previous = last.exchange(number, ordering: .sequentiallyConsistent)
            if previous == 0 { first.store(number, ordering: .sequentiallyConsistent) }
            count.add(1, ordering: .sequentiallyConsistent)
            return previous
        }
    }

    let id: UInt64
    /// What it is, for messages: "token observation of value", ...
    let what: String
    let source: Source
    let options: ObservingOptions
    /// The observed subject's ledger (nil for every sender).
    let ledger: SubjectLedger?

    private let mustFrom = Atomic<UInt64>(0)
    private let mayFrom = Atomic<UInt64>(0)
    private let mustThrough = Atomic<UInt64>(0)
    private let mayThrough = Atomic<UInt64>(0)
    private let droppedAt = Atomic<UInt64>(0)
    private let ended = Atomic<Bool>(false)
    private let strictlyEnded = Atomic<Bool>(false)
    private let inside = Atomic<Int>(0)
    private let arrivals = Atomic<Int>(0)
    private let changes = Received()
    private let priors = Received()
    private let initials = Atomic<Int>(0)

    /// A record for an observation about to be registered (while holding its subject).
    init(_ what: String, source: Source, options: ObservingOptions = [], ledger: SubjectLedger?) {
        self.id = observationIDs.next()
        self.what = what
        self.source = source
        self.options = options
        self.ledger = ledger
        if case .allPosts(let posts) = source { mayFrom.store(posts.finished, ordering: .sequentiallyConsistent) }
        recordPopulation.enter()
    }

    /// Call right after the registration returned (still holding the subject).
    func registered() {
        switch source {
        case .sequence(let sequence): mustFrom.store(sequence.started + 1, ordering: .sequentiallyConsistent)
        case .allPosts(let posts): mustFrom.store(posts.started, ordering: .sequentiallyConsistent)
        }
    }

    /// The record in failure messages.
    var describe: String { "Swift: \(what) \(id) (options \(options.rawValue))" }

    // MARK: Deliveries

    /// Every eighth observation's handler lingers a little (about a microsecond), so that
    /// removals often meet a handler still running on another thread: invalidateAndWait
    /// must then wait for it.
    private static let lingerEvery: UInt64 = 8

    /// Runs a handler's checks, counted as running while they do.
    func handle(_ body: () -> Void) {
        inside.add(1, ordering: .sequentiallyConsistent)
        body()
        if id % Self.lingerEvery == 0 {
            for _ in 0..<1_000 { _ = inside.load(ordering: .relaxed) }
        }
        inside.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Notes delivery of change `number` (a prior notification when `prior`).
    func delivered(_ number: UInt64, prior: Bool) {
        checkNotStrictlyEnded()
        let previous = (prior ? priors : changes).note(number)
        verdict.check(
            previous == 0 || number == previous + 1,
            "\(describe): received \(prior ? "prior notification" : "change") \(number) right after \(previous)")
    }

    /// Notes delivery of one post (count accounting).
    func deliveredPost() {
        checkNotStrictlyEnded()
        changes.count.add(1, ordering: .sequentiallyConsistent)
    }

    /// Notes an initial notification.
    func deliveredInitial() {
        initials.add(1, ordering: .sequentiallyConsistent)
    }

    private func checkNotStrictlyEnded() {
        verdict.check(
            !strictlyEnded.load(ordering: .sequentiallyConsistent),
            "\(describe): handler entered after invalidateAndWait returned")
    }

    // MARK: End

    /// Ends the observation: `removal` removes it; `strict` when the removal waits for
    /// handlers still running (no handler may be entered after it returns).
    func end(strict: Bool = false, _ removal: () -> Void) {
        Self.end([self], strict: strict, removal)
    }

    /// Ends several observations removed by one call.
    static func end(_ records: [DeliveryRecord], strict: Bool = false, _ removal: () -> Void) {
        let before = records.map(\.finishedNow)
        removal()
        for (record, mustThrough) in zip(records, before) {
            if strict {
                record.strictlyEnded.store(true, ordering: .sequentiallyConsistent)
                verdict.check(
                    record.inside.load(ordering: .sequentiallyConsistent) == 0,
                    "\(record.describe): handler still running after invalidateAndWait returned")
            }
            record.close(mustThrough: mustThrough, mayThrough: record.startedNow)
        }
    }

    /// Its observer's last reference is about to be dropped: changes finished by now were made
    /// while the observer lived, so they must have been delivered.
    func observerDropping() {
        droppedAt.store(finishedNow, ordering: .sequentiallyConsistent)
    }

    /// Its observer's deinit began: nothing later reaches its handler (weak references to it
    /// already read nil; they do from the moment its last reference went, slightly earlier).
    /// No-op if already ended.
    func endWithObserver() {
        close(mustThrough: droppedAt.load(ordering: .sequentiallyConsistent), mayThrough: startedNow)
    }

    /// The handler closure was released (Receiver's deinit).
    func released() {
        arrive()
    }

    private var startedNow: UInt64 {
        switch source {
        case .sequence(let sequence): sequence.started
        case .allPosts(let posts): posts.started
        }
    }

    private var finishedNow: UInt64 {
        switch source {
        case .sequence(let sequence): sequence.finished
        case .allPosts(let posts): posts.finished
        }
    }

    private func close(mustThrough: UInt64, mayThrough: UInt64) {
        guard !ended.exchange(true, ordering: .sequentiallyConsistent) else { return }
        self.mustThrough.store(mustThrough, ordering: .sequentiallyConsistent)
        self.mayThrough.store(mayThrough, ordering: .sequentiallyConsistent)
        arrive()
    }

    private func arrive() {
        if arrivals.add(1, ordering: .sequentiallyConsistent).newValue == 2 { check() }
    }

    // MARK: Check

    private func check() {
        let initialCount = initials.load(ordering: .sequentiallyConsistent)
        verdict.check(
            initialCount == (options.contains(.initial) ? 1 : 0),
            "\(describe): \(initialCount) initial notifications")
        let received = changes.count.load(ordering: .sequentiallyConsistent)
        let receivedPriors = priors.count.load(ordering: .sequentiallyConsistent)
        let deliveries = Int(received + receivedPriors) + initialCount
        switch source {
        case .sequence(let sequence) where sequence !== ledger?.posts: Tally.shared.add(.swiftCallbacks, deliveries)
        default: Tally.shared.add(.hubDeliveries, deliveries)
        }
        switch source {
        case .sequence:
            checkRange(changes, "changes")
            if options.contains(.prior) {
                checkRange(priors, "prior notifications")
            } else {
                verdict.check(receivedPriors == 0, "\(describe): \(receivedPriors) prior notifications, not asked for")
            }
        case .allPosts:
            let registeredAt = mustFrom.load(ordering: .sequentiallyConsistent)
            let finishedAtRemoval = mustThrough.load(ordering: .sequentiallyConsistent)
            let least = finishedAtRemoval > registeredAt ? finishedAtRemoval - registeredAt : 0
            let most =
                mayThrough.load(ordering: .sequentiallyConsistent) - mayFrom.load(ordering: .sequentiallyConsistent)
            verdict.check(
                received >= least && received <= most,
                "\(describe): received \(received) posts, expected between \(least) and \(most)")
        }
        recordPopulation.leave()
    }

    private func checkRange(_ range: Received, _ label: String) {
        let a = mustFrom.load(ordering: .sequentiallyConsistent)
        let b = mustThrough.load(ordering: .sequentiallyConsistent)
        let z = mayThrough.load(ordering: .sequentiallyConsistent)
        let count = range.count.load(ordering: .sequentiallyConsistent)
        let first = range.first.load(ordering: .sequentiallyConsistent)
        let last = range.last.load(ordering: .sequentiallyConsistent)
        let got = count == 0 ? "none" : "\(first)...\(last) (\(count))"
        if count > 0 {
            verdict.check(count == last - first + 1, "\(describe): \(label) \(got) are not each delivered once")
            verdict.check(first >= a, "\(describe): \(label) \(got) include ones made before it registered (\(a)...)")
            verdict.check(last <= z, "\(describe): \(label) \(got) include ones begun after its removal (...\(z))")
        }
        if a <= b {
            Tally.shared.add(.subjectRanges)
            verdict.check(
                count > 0 && first <= a && last >= b,
                "\(describe): \(label) \(got), but \(a)...\(b) were made while it was registered")
        }
    }
}
