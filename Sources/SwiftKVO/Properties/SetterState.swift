/// An `@Observed` / `@ObservedArray` wrapper's cached setter state, one word:
/// flag bits, and once resolved the address of the property's immortal
/// ``PropertyKey`` in the other bits. The setter's fast path reads the word,
/// the property's probe through it and the probe's counter: three loads, no
/// call, no reference counting.
@usableFromInline
enum SetterState {
    /// The property was resolved: the other bits are its `PropertyKey`.
    @usableFromInline static let resolved: UInt64 = 1 << 0
    /// Automatic notification is off for this property.
    @usableFromInline static let manual: UInt64 = 1 << 1
    /// Some dependent key is computed from this property.
    @usableFromInline static let hasDependents: UInt64 = 1 << 2
    /// The flag bits: below a heap object's alignment (at least a pointer's).
    @usableFromInline static let flags: UInt64 = 0x7

    /// The resolved state of `property`, without further flags.
    static func resolvedState(of property: PropertyKey) -> UInt64 {
        let address = UInt64(UInt(bitPattern: Unmanaged.passUnretained(property).toOpaque()))
        precondition(address & flags == 0, "SwiftKVO: misaligned PropertyKey")
        return address | resolved
    }

    /// The property of a resolved state (the registry keeps it alive forever).
    @inlinable @inline(__always)
    static func property(_ state: UInt64) -> Unmanaged<PropertyKey> {
        Unmanaged.fromOpaque(
            UnsafeRawPointer(bitPattern: UInt(truncatingIfNeeded: state & ~flags)).unsafelyUnwrapped)
    }

    /// The engine key of a resolved state.
    @inlinable @inline(__always)
    static func key(_ state: UInt64) -> EngineKey {
        property(state)._withUnsafeGuaranteedRef { $0.key }
    }

    /// The key's probe of a resolved state.
    @inlinable @inline(__always)
    static func probe(_ state: UInt64) -> EngineProbe {
        property(state)._withUnsafeGuaranteedRef { $0.probe }
    }

    /// The setter state of the property `Object` stores as `Storage` at
    /// `offset`: the slow path of the first set of a property of one object.
    @usableFromInline
    static func resolve<Object: KeyValueObservable, Storage: NotifyingStorage>(
        _ object: Object, storage: Storage.Type, offset: Int
    ) -> UInt64 {
        let property = PropertyRegistry.property(
            declaredBy: Object.self, storage: Storage.self, offset: offset)
        var state = resolvedState(of: property)
        if Dependencies.hasDependents(of: property.key, on: object) {
            state |= hasDependents
        }
        return state
    }
}
