//
// PropertyKey.swift — the identity of an `@Observed` / `@ObservedArray`
// property (SPEC §2 item 17).
//
// A property is its declaration: the class that declares it and where that
// class stores its wrapper (the byte offset the compiler gives the stored
// property). Both are what the compiler already knows at every access — the
// wrapper's `_enclosingInstance` accessors receive the declaring class as
// their `Object` parameter and the storage key path, whose field offset
// folds to a constant. Two stored properties of one class never share an
// offset, and a subclass keeps its base class's offsets, so:
//   - two properties never share a key, whatever built their wrappers;
//   - one property never has two keys, whichever initializer (or none)
//     assigned its wrapper;
//   - `\Derived.name` and `\Base.name` reach the one key of `Base.name`.
// The engine key's name starts with the declaring class's metatype address
// and the offset, so two classes that print alike (private or local classes
// of one name) never share a key either; the class and value type names
// follow only as a bounded, readable prefix (EngineKeyName.swift), so no
// declaration — however long its types' names — makes a name the engine
// refuses.
//
// Interning can then fail only when the engine is out of memory. The
// property still gets its (immortal) `PropertyKey`, with key 0: its setters
// store without notifying (key 0's probe reads no observers) and never trap,
// and registering an observation of it throws `KVOError.outOfMemory`
// (`Engine.observe`).
//
// Interning takes the registry's lock only to look up and file entries; the
// engine is called outside it (`ckvo_key_intern` is a writer call), so no
// lock of this layer is ever held across a call into the engine.

/// The canonical identity of one `@Observed` / `@ObservedArray` property:
/// interned once per declaration, never freed. A resolved wrapper's setter
/// state points at it (see ``SetterState``).
@usableFromInline
final class PropertyKey: @unchecked Sendable {  // immutable after init
    /// The engine key.
    @usableFromInline
    let key: EngineKey
    /// The key's probe: the setters' inline no-observer check.
    @usableFromInline
    let probe: EngineProbe
    /// The wrapped value's type: the only type a change of this key carries.
    let valueType: Any.Type
    /// For `@ObservedArray` and `@ObservedSet` properties: raw access to the storage
    /// (a `StorageAccess<Declaring, Storage>`).
    let storageAccess: AnyObject?
    /// The class that declares the property.
    let declaringClass: AnyClass?
    /// The property's name, as declared (`balance` for `@Observed var balance`).
    let name: String

    fileprivate init(
        key: EngineKey, valueType: Any.Type, storageAccess: AnyObject?, declaringClass: AnyClass,
        offset: Int
    ) {
        self.key = key
        self.declaringClass = declaringClass
        self.name =
            ObservableDeclarations.of(declaringClass).first {
                $0.declaringClass == declaringClass && $0.offset == offset
            }?.name ?? "+\(offset)"
        self.probe = Engine.probe(of: key)
        self.valueType = valueType
        self.storageAccess = storageAccess
    }
}

/// The process-wide table of properties.
enum PropertyRegistry {
    private struct Declaration: Hashable {
        let declaringClass: ObjectIdentifier
        let offset: Int
    }

    private static let properties = LockedState([Declaration: PropertyKey]())

    /// The property whose wrapper `Storage` the class `Object` stores at
    /// `offset`. The engine key is interned outside the lock; two threads
    /// racing on a new property intern the same name (the same key) and keep
    /// the first entry filed.
    static func property<Object: KeyValueObservable, Storage: NotifyingStorage>(
        declaredBy _: Object.Type, storage _: Storage.Type, offset: Int
    ) -> PropertyKey {
        let declaration = Declaration(declaringClass: ObjectIdentifier(Object.self), offset: offset)
        if let existing = properties.withLock({ $0[declaration] }) { return existing }
        let key = Engine.intern(
            EngineKeyName.property(declaredBy: Object.self, offset: offset, valueType: Storage.Value.self))
        let property = PropertyKey(
            key: key, valueType: Storage.Value.self,
            storageAccess: Storage.storageAccess(in: Object.self, offset: offset),
            declaringClass: Object.self, offset: offset)
        EngineKeyDescriptions.file(key, name: property.name)
        return properties.withLock { properties in
            if let existing = properties[declaration] { return existing }
            properties[declaration] = property
            return property
        }
    }
}
