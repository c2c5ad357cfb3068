/// Makes a stored property of a ``KeyValueObservable`` class observable.
///
/// ```swift
/// final class Account: KeyValueObservable {
///     let kvoRegistrar = KVORegistrar()
///     static var observableKeyPaths: [String: AnyKeyPath] { ["name": \Account.name, "balance": \Account.balance] }
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
    /// key and the key's probe). The property itself is the declaration this
    /// wrapper is stored in (see PropertyKey.swift), not anything the
    /// initializer is given: a wrapper may be built anywhere.
    @usableFromInline
    var state: UInt64

    /// An observable property with automatic notification.
    @inlinable
    public init(wrappedValue: Value) {
        self.storage = wrappedValue
        self.state = 0
    }

    /// An observable property; with `notifiesAutomatically: false` assignments
    /// never notify and the owner announces changes itself.
    @inlinable
    public init(wrappedValue: Value, notifiesAutomatically: Bool) {
        self.storage = wrappedValue
        self.state = notifiesAutomatically ? 0 : SetterState.manual
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
        @inline(__always) get { Self.value(in: object, wrapped: wrappedKeyPath, storage: storageKeyPath) }
        @inline(__always) set { Self.assign(newValue, in: object, wrapped: wrappedKeyPath, storage: storageKeyPath) }
    }
}

extension Observed: Sendable where Value: Sendable {}

extension Observed: NotifyingStorage {}
