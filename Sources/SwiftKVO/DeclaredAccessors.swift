//
// DeclaredAccessors.swift — the accessors of a class's observable
// properties, known from its name table without evaluating anything.
//
// A key path component names its accessor by address (KeyPathShape.swift),
// but nothing in the metadata ties an address to a property: the registry
// learns which accessor is which wrapper by reading a key path once
// (KeyPathProbe.swift), and reading a computed property runs its getter.
// A class whose `observableKeyPaths` names every one of its observable
// properties (as `@KeyValueObservable` writes it) declares the answer
// instead: each entry `"balance": \Wallet.balance` whose name is a declared
// `@Observed`/`@ObservedArray`/`@ObservedSet` field and whose value type is
// that field's is that property's own key path, and its one component's
// address is that property's accessor. For such a class a component whose
// accessor is not one of these is no observable property of it, and is
// refused before any getter runs.
//
// The table counts only when it is complete (every declared property named),
// the class overrides no accessor it inherits (an override has an accessor
// of its own, which no inherited entry names) and no class involved is
// generic (each use of a generic class's key path instantiates components
// with accessors of their own). Otherwise the registry falls back to
// reading the key path once under the probe.

enum DeclaredAccessors {
    private static let cache = LockedState([ObjectIdentifier: Set<UInt>?]())

    /// The accessors of every observable property of `type`, when its name
    /// table declares them all; `nil` when it does not (no table, a partial
    /// one, or overridden accessors).
    static func of(_ type: Any.Type) -> Set<UInt>? {
        guard let observable = type as? any KeyValueObservable.Type, let typeClass = type as? AnyClass
        else { return nil }
        if let cached = cache.withLock({ $0[ObjectIdentifier(type)] }) { return cached }
        let found = read(observable, typeClass)
        cache.withLock { $0[ObjectIdentifier(type)] = found }
        return found
    }

    private static func read(_ observable: any KeyValueObservable.Type, _ typeClass: AnyClass) -> Set<UInt>? {
        let declarations = ObservableDeclarations.of(typeClass)
        guard !declarations.isEmpty else { return nil }
        if AccessorOverrides.isGeneric(typeClass)
            || declarations.contains(where: {
                AccessorOverrides.isGeneric($0.declaringClass)
                    || AccessorOverrides.exist(in: typeClass, of: $0.declaringClass)
            })
        {
            return nil
        }
        let table = observable.observableKeyPaths
        var accessors = Set<UInt>()
        for declaration in declarations {
            guard let keyPath = table[declaration.name],
                type(of: keyPath).valueType == declaration.valueType,
                KeyPathRegistry.rerooted(keyPath, at: typeClass) != nil,
                let link = KeyPathShape.singleLink(of: keyPath), !link.isOptionalChained
            else { return nil }
            accessors.insert(link.accessor)
        }
        return accessors
    }
}
