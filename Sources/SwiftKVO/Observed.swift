/// Makes a stored property of a ``KeyValueObservable`` class observable.
///
/// ```swift
/// final class Account: KeyValueObservable {
///     let kvoRegistrar = KVORegistrar()
///     @Observed var name = ""
///     @Observed var balance = 0.0
/// }
/// ```
///
/// Every assignment notifies the property's observers, also when the new value
/// equals the old one (KVO semantics): prior observers first (before the store),
/// then every observer after the store, synchronously on the assigning thread,
/// in registration order.
///
/// ## Cost
/// An assignment while the property is observed on no object costs one
/// relaxed load (the engine key's probe) besides the store: no call into the
/// engine. Otherwise it announces will (only if some observer asked for
/// ``ObservingOptions/prior``) and did with pointers to the old and new values
/// on the stack: no heap allocation per notification.
///
/// ## Thread safety
/// The observation machinery is thread-safe, but the stored value is a plain
/// stored property: concurrent assignments (or an assignment concurrent with a
/// read) of the *same* property of the *same* object need your own
/// synchronization, as for any Swift property.
///
/// ## Manual notification
/// `@Observed(notifiesAutomatically: false)` stores without notifying; announce
/// changes yourself with ``KeyValueObservable/willChangeValue(for:)`` and
/// ``KeyValueObservable/didChangeValue(for:)`` (e.g. only when a value really changed).
@propertyWrapper
public struct Observed<Value> {
    @usableFromInline
    var storage: Value

    /// ``SetterState``: flags and, once resolved, the property (its engine
    /// key and the key's probe).
    @usableFromInline
    var state: UInt64

    /// Where the property is declared: its identity (see KeyPathRegistry.swift).
    @usableFromInline
    let site: PropertySite

    /// An observable property with automatic notification.
    ///
    /// The source-location parameters identify the property; leave them to
    /// their defaults.
    @inlinable
    public init(
        wrappedValue: Value, fileID: StaticString = #fileID, line: UInt = #line,
        column: UInt = #column
    ) {
        self.storage = wrappedValue
        self.state = 0
        self.site = PropertySite(file: fileID, line: line, column: column)
    }

    /// An observable property; with `notifiesAutomatically: false` assignments
    /// never notify and the owner announces changes itself.
    @inlinable
    public init(
        wrappedValue: Value, notifiesAutomatically: Bool, fileID: StaticString = #fileID,
        line: UInt = #line, column: UInt = #column
    ) {
        self.storage = wrappedValue
        self.state = notifiesAutomatically ? 0 : SetterState.manual
        self.site = PropertySite(file: fileID, line: line, column: column)
    }

    /// Unavailable: `@Observed` works only on properties of classes that conform to
    /// ``KeyValueObservable``.
    @available(*, unavailable, message: "@Observed is only available on properties of classes conforming to KeyValueObservable")
    public var wrappedValue: Value {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// The wrapped property's accessors, with access to the enclosing object.
    @inlinable
    public static subscript<Object: KeyValueObservable>(
        _enclosingInstance object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Observed<Value>>
    ) -> Value {
        // Always inlined, so the key path literals the compiler passes fold
        // into direct stored-property accesses (no key path runtime, no
        // allocation). Nothing here may pass a key path on as a value: that
        // would make every access instantiate it. (The probe gets the wrapped
        // key path through a closure that captures nothing but the literal,
        // so it is instantiated only when the probe calls it.)
        @inline(__always) get {
            if Probe.isActive {
                let mode = Probe.currentMode
                if mode != 0 {
                    Probe.record(
                        object, site: object[keyPath: storageKeyPath].site,
                        state: object[keyPath: storageKeyPath].state, valueType: Value.self,
                        offset: -1, keyPath: { wrappedKeyPath })
                }
            }
            return object[keyPath: storageKeyPath].storage
        }
        @inline(__always) set {
            let state = object[keyPath: storageKeyPath].state
            // Fast path: resolved, automatic, no dependents, nobody observing
            // the key on any object (the key's probe: one load, no call).
            if state & SetterState.flags == SetterState.resolved,
                !Engine.hasObservers(SetterState.probe(state))
            {
                object[keyPath: storageKeyPath].storage = newValue
                return
            }
            // The wrapper's offset folds to a constant; the slow path is
            // outlined so the fast path needs no stack frame.
            notifyingSet(object, Engine.offset(of: storageKeyPath, in: object), newValue, state: state)
        }
    }
}

extension Observed: Sendable where Value: Sendable {}

extension Observed: NotifyingStorage {}
