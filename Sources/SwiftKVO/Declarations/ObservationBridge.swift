// A SwiftKVO class that Swift's Observation module can observe too (opt-in per class): its
// wrappers' accessors call the class's `ObservationRegistrar` (`access`, `willSet`, `didSet`).
// Whether a class is bridged is a static property of its conformance, the constant `false` in the
// specialized accessors of every other class, so they pay nothing (`make perf-check` holds the
// no-observer setter). One assignment: SwiftKVO's prior notifications, Observation's `willSet`,
// the store, Observation's `didSet`, SwiftKVO's notifications, all on the assigning thread: nothing
// runs between `willSet` and the store, as with `@Observable`.

import Observation

/// A ``KeyValueObservable`` class that Swift's `Observation` module can also
/// observe: `withObservationTracking` and the `Observations` sequence see its
/// `@Observed`, `@ObservedArray` and `@ObservedSet` properties change.
///
/// ```swift
/// final class Account: ObservationBridged {
///     let kvoRegistrar = KVORegistrar()
///     let observationRegistrar = ObservationRegistrar()
///     @Observed var name = ""
/// }
///
/// withObservationTracking { _ = account.name } onChange: { print("will change") }
/// let token = try account.observe(\.name, options: .new) { _, change in … }
/// ```
///
/// What each system guarantees when both observe one object:
/// - Observation calls `onChange` once, from `willSet`, before the value
///   changes, on the assigning thread, and then stops tracking (track again to
///   hear of the next change); it carries no values. An `Observations`
///   sequence yields the new value later, on its consumer's task, and may
///   coalesce several changes into one. It reads the value again on its
///   consumer's isolation once a change begins: assign on that isolation
///   too (for example, both on the main actor), or a read may land between
///   `willSet` and the store and yield the old value, and the sequence then
///   misses the final value. Nothing of SwiftKVO's runs in that window, so
///   a bridged class misses it no more often than an `@Observable` one (in
///   the package's measurement, one or three assignments from another thread with a
///   `.prior` observer working 200 µs: 0 of 125 runs missed it, and 3 of
///   125 for `@Observable`; 9 of 50 did when Observation's `willSet` came
///   before the prior notifications).
/// - SwiftKVO calls its observers synchronously on the assigning thread,
///   after the store (and, with `.prior`, before it), for every change, with
///   old and new values, kinds and indexes.
/// - Order for one assignment: SwiftKVO's prior notifications,
///   Observation's `willSet`, the store, Observation's `didSet`, SwiftKVO's
///   notifications.
/// - A collection mutation through ``KeyValueObservable/mutableSet(_:)``
///   tells Observation of a change of the whole property; there
///   Observation's `willSet` still comes before SwiftKVO's prior
///   notifications, so the window described above is wider for it.
///
/// Classes that do not conform pay nothing for this.
public protocol ObservationBridged: KeyValueObservable, Observable {
    /// The object's Observation registrar: declare it as
    /// `let observationRegistrar = ObservationRegistrar()`.
    var observationRegistrar: ObservationRegistrar { get }
}

extension KeyValueObservable {
    /// Whether the class is ``ObservationBridged`` (`false`: folded away in
    /// the accessors of every class that is not).
    @inlinable @inline(__always)
    public static var isObservationBridged: Bool { false }
}

extension ObservationBridged {
    /// `true`: the accessors call the Observation registrar.
    @inlinable @inline(__always)
    public static var isObservationBridged: Bool { true }
}

/// The calls a bridged class's accessors make into Observation. The key path
/// comes as a closure, instantiated only here (see Observed's accessors).
@usableFromInline
enum ObservationBridge {
    @usableFromInline
    enum Call {
        case access, willSet, didSet
    }

    /// Makes `call` on the registrar of `object`, a bridged class, for the
    /// property at `keyPath` (typed as the class itself, opened from its
    /// metatype: `Subject` is `Object`).
    @usableFromInline @inline(never)
    static func make<Object: KeyValueObservable, Value>(
        _ call: Call, _ object: Object, _ keyPath: () -> ReferenceWritableKeyPath<Object, Value>
    ) {
        guard let bridged = Object.self as? any ObservationBridged.Type else { return }
        func open<Subject: ObservationBridged>(_: Subject.Type) {
            let subject = unsafeDowncast(object, to: Subject.self)
            guard let typed = keyPath() as? KeyPath<Subject, Value> else { return }
            switch call {
            case .access: subject.observationRegistrar.access(subject, keyPath: typed)
            case .willSet: subject.observationRegistrar.willSet(subject, keyPath: typed)
            case .didSet: subject.observationRegistrar.didSet(subject, keyPath: typed)
            }
        }
        open(bridged)
    }
}
