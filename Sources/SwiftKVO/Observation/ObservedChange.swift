/// What kind of change happened.
///
/// A top-level type (not nested in the generic ``ObservedChange``) so it can be
/// named without a value type.
public enum ChangeKind: Int, Hashable, Sendable, CustomStringConvertible {
    /// The value was set (replaced as a whole).
    case setting = 1
    /// Elements were inserted at ``ObservedChange/indexes``.
    case insertion = 2
    /// Elements were removed from ``ObservedChange/indexes``.
    case removal = 3
    /// Elements at ``ObservedChange/indexes`` were replaced.
    case replacement = 4

    /// The kind's name.
    public var description: String {
        switch self {
        case .setting: "setting"
        case .insertion: "insertion"
        case .removal: "removal"
        case .replacement: "replacement"
        }
    }
}

/// One change, as an observer receives it.
///
/// A small value: values are copied out of the announcer's storage only when
/// the observation asked for them (``ObservingOptions/old``,
/// ``ObservingOptions/new``); building one allocates nothing for a setting.
///
/// For the collection kinds of an ``ObservedArray`` property the values are the
/// *affected elements*, as in Apple KVO: `oldValue` holds the removed or
/// replaced elements, `newValue` the inserted or replacing ones, in the order of
/// ``indexes``.
public struct ObservedChange<Value> {
    /// What happened.
    @inlinable
    public var kind: ChangeKind { ChangeKind(rawValue: Int(_bits & 0x7)) ?? .setting }
    /// The old value, if the observation asked for `.old` (never for an insertion
    /// or the initial notification).
    public let oldValue: Value?
    /// The new value, if the observation asked for `.new` (never in a prior
    /// notification or for a removal).
    public let newValue: Value?
    /// The affected indexes of a collection change, ascending; empty for a setting.
    @inlinable
    public var indexes: [Int] { _indexes ?? [] }
    @usableFromInline
    let _indexes: [Int]?
    /// Whether this is the notification before the change (``ObservingOptions/prior``).
    @inlinable
    public var isPrior: Bool { _bits & 0x8 != 0 }
    /// Whether this is the notification delivered at registration (``ObservingOptions/initial``).
    @inlinable
    public var isInitial: Bool { _bits & 0x10 != 0 }

    /// Kind (low 3 bits), prior (0x8), initial (0x10): one byte keeps the
    /// change small.
    @usableFromInline
    let _bits: UInt8

    @usableFromInline
    let _keyPath: Unmanaged<AnyKeyPath>

    /// The observed key path that changed (with several key paths observed at
    /// once, the one that fired). Key paths are kept alive for the life of the
    /// process by SwiftKVO's key registry, so reading this is always safe.
    @inlinable
    public var keyPath: AnyKeyPath { _keyPath.takeUnretainedValue() }

    @inlinable
    init(
        kind: ChangeKind, oldValue: Value?, newValue: Value?, indexes: [Int]?, isPrior: Bool,
        isInitial: Bool, keyPath: Unmanaged<AnyKeyPath>
    ) {
        self._bits = UInt8(truncatingIfNeeded: kind.rawValue) | (isPrior ? 0x8 : 0) | (isInitial ? 0x10 : 0)
        self.oldValue = oldValue
        self.newValue = newValue
        self._indexes = indexes?.isEmpty == false ? indexes : nil
        self._keyPath = keyPath
    }

    /// The change the engine delivers, for a property whose values are
    /// `Value` (`newValue`: already read, e.g. the initial value). Reads the
    /// C change once; no allocation for a setting.
    @inlinable @inline(__always)
    init(delivered change: EngineChange, newValue: Value?, keyPath: Unmanaged<AnyKeyPath>) {
        self._bits = change.changeBits
        self.oldValue = change.oldValue(as: Value.self)
        self.newValue = newValue
        self._indexes = change.indexes
        self._keyPath = keyPath
    }

    /// A change that is not ``EngineChange/isPlain`` (initial, or with
    /// indexes) of `keyPath` on `object`. For an initial notification that
    /// asked for the new value, reads it now, after the observation was
    /// installed (the engine has no getter for Swift keys). Out of line: off
    /// the delivery fast path.
    @inlinable @inline(never)
    init<Object>(
        delivered change: EngineChange, of object: Object, keyPath: KeyPath<Object, Value>,
        readsInitialValue: Bool, unmanagedKeyPath: Unmanaged<AnyKeyPath>
    ) {
        var newValue = change.newValue(as: Value.self)
        if readsInitialValue, case .none = newValue, change.isInitial {
            newValue = object[keyPath: keyPath]
        }
        self.init(delivered: change, newValue: newValue, keyPath: unmanagedKeyPath)
    }

    /// A change that ``EngineChange/isPlain``: its values as the engine
    /// passed them, no indexes. Builds nothing that needs releasing.
    @inlinable @inline(__always)
    init(plain change: EngineChange, keyPath: Unmanaged<AnyKeyPath>) {
        self._bits = change.changeBits
        self.oldValue = change.oldValue(as: Value.self)
        self.newValue = change.newValue(as: Value.self)
        self._indexes = nil
        self._keyPath = keyPath
    }

    /// The same change with its values mapped (e.g. to `Any`).
    @inlinable
    func map<Other>(_ transform: (Value) -> Other) -> ObservedChange<Other> {
        ObservedChange<Other>(
            kind: kind, oldValue: oldValue.map(transform), newValue: newValue.map(transform),
            indexes: _indexes, isPrior: isPrior, isInitial: isInitial, keyPath: _keyPath)
    }
}

extension ObservedChange: @unchecked Sendable where Value: Sendable {}

extension ObservedChange: CustomStringConvertible {
    /// A readable summary of the change.
    public var description: String {
        var parts = ["kind: \(kind)"]
        if isPrior { parts.append("prior") }
        if isInitial { parts.append("initial") }
        if let oldValue { parts.append("old: \(oldValue)") }
        if let newValue { parts.append("new: \(newValue)") }
        if !indexes.isEmpty { parts.append("indexes: \(indexes)") }
        return "ObservedChange(\(parts.joined(separator: ", ")))"
    }
}
