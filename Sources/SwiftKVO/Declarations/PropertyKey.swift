// A property's identity (SPEC §2.17) is its declaration: the declaring class and the byte offset
// of its wrapper, which the compiler knows at every access (the wrapper's accessors get the class
// as `Object` and a storage key path whose offset folds to a constant). Two stored properties
// never share an offset and a subclass keeps its base's, so two properties never share a key, one
// never has two, and `\Derived.name` reaches the key of `Base.name`. Interning fails only out of
// memory: the property then gets key 0, whose setters store without notifying and whose
// registrations throw `outOfMemory`. The registry's lock is never held across an engine call.

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
