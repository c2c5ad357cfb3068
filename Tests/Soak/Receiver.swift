// Receiver.swift — what a Swift handler closure captures, and what it checks
// on every call.
//
// The library releases a handler (and so its receiver) after the observation
// was removed and no notification can still be running it; the receiver's
// deinit tells its record. (Released at all is checked; released twice would be
// an over-release of the closure, which crashes.) On each call it checks, besides the
// record's sequence accounting:
//   - the change is of the subject it observes, not another object that now
//     lives at the same address (a subject's observations go when it dies);
//   - it runs on the thread announcing the change (csoak_trace_note finds that
//     thread's trace) — initial notifications, delivered during registration,
//     are the exception;
//   - kind, indexes, old and new values are what the options asked for and the
//     change number says;
//   - an observer passed to a KVOController block or hub block has not begun
//     to die.

import CSoakSupport
import SwiftKVO

final class Receiver: Sendable {
    let record: DeliveryRecord

    init(_ record: DeliveryRecord) {
        self.record = record
    }

    deinit { record.released() }

    /// A change of a subject's `value`.
    func value(_ subject: Subject, _ change: ObservedChange<Stamp>) {
        record.handle { checkValue(subject, change) }
    }

    private func checkValue(_ subject: Subject, _ change: ObservedChange<Stamp>) {
        guard isObserved(subject) else { return }
        let number = subject.ledger.value.started
        if change.isInitial {
            record.deliveredInitial()
            verdict.check(
                change.kind == .setting && !change.isPrior && change.oldValue == nil
                    && change.newValue == (record.options.contains(.new) ? Stamp(number: number) : nil),
                "\(record.describe): wrong initial notification \(change) (current value \(number))")
            return
        }
        guard isTraced(prior: change.isPrior) else { return }
        let wantsNew = record.options.contains(.new) && !change.isPrior
        verdict.check(
            change.kind == .setting && change.indexes.isEmpty
                && change.newValue == (wantsNew ? Stamp(number: number) : nil)
                && change.oldValue == (record.options.contains(.old) ? Stamp(number: number - 1) : nil),
            "\(record.describe): wrong change \(change) for change \(number)")
        record.delivered(number, prior: change.isPrior)
    }

    /// A change of a subject's `items` (Mutator makes each one insert, remove or replace one
    /// element carrying the change number, or set the array to just that number).
    func items(_ subject: Subject, _ change: ObservedChange<[UInt64]>) {
        record.handle { checkItems(subject, change) }
    }

    private func checkItems(_ subject: Subject, _ change: ObservedChange<[UInt64]>) {
        guard isObserved(subject) else { return }
        let number = subject.ledger.items.started
        if change.isInitial {
            record.deliveredInitial()
            verdict.check(
                change.kind == .setting && !change.isPrior && change.oldValue == nil
                    && (change.newValue != nil) == record.options.contains(.new),
                "\(record.describe): wrong initial notification \(change)")
            return
        }
        guard isTraced(prior: change.isPrior) else { return }
        let wantsNew = record.options.contains(.new) && !change.isPrior && change.kind != .removal
        let wantsOld = record.options.contains(.old) && change.kind != .insertion
        let indexesRight = change.kind == .setting ? change.indexes.isEmpty : change.indexes.count == 1
        let oldRight =
            switch (wantsOld, change.kind) {
            case (false, _): change.oldValue == nil
            case (true, .setting): change.oldValue != nil
            default: change.oldValue?.count == 1
            }
        verdict.check(
            indexesRight && oldRight && change.newValue == (wantsNew ? [number] : nil),
            "\(record.describe): wrong change \(change) for change \(number)")
        record.delivered(number, prior: change.isPrior)
    }

    /// A post of the shared name; `observer` is the hub's (weakly held) observer, if any.
    func post(_ observer: SoakObserver?, _ note: HubNotification) {
        record.handle { checkPost(observer, note) }
    }

    private func checkPost(_ observer: SoakObserver?, _ note: HubNotification) {
        if let observer { checkAlive(observer) }
        guard isTraced(prior: false) else { return }
        let number = note.userInfo["number"] as? UInt64
        switch record.source {
        case .sequence(let sequence):
            guard let subject = note.object as? Subject else {
                verdict.fail("\(record.describe): a post from \(String(describing: note.object)), not its subject")
                return
            }
            guard isObserved(subject) else { return }
            verdict.check(
                number == sequence.started,
                "\(record.describe): a post carrying \(String(describing: number)) during post \(sequence.started)")
            record.delivered(sequence.started, prior: false)
        case .allPosts:
            verdict.check(number != nil, "\(record.describe): a post without its number")
            record.deliveredPost()
        }
    }

    /// Checks that a KVOController block or hub block's observer has not begun to die.
    func checkAlive(_ observer: SoakObserver) {
        verdict.check(observer.isAlive, "\(record.describe): called with an observer whose deinit had begun")
    }

    private func isObserved(_ subject: Subject) -> Bool {
        guard subject.ledger === record.ledger else {
            verdict.fail(
                "\(record.describe): delivered a change of another subject (an address reused after its death?)")
            return false
        }
        return true
    }

    private func isTraced(prior: Bool) -> Bool {
        guard csoak_trace_note(SwiftTrace.entry(record.id, prior: prior)) else {
            verdict.fail("\(record.describe): delivered on a thread that was not announcing a change")
            return false
        }
        return true
    }
}
