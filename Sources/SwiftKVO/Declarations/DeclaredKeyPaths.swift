//
// DeclaredKeyPaths.swift — a class's observable properties' own key paths,
// known from its name table without evaluating anything.
//
// A key path component names its accessor only by the address of a thunk,
// and an optimized build gives each key path literal thunks of its own, so
// addresses cannot tell which component is which property. Key path `==`
// can: it compares the components' identities. A class whose
// `observableKeyPaths` names every one of its observable properties (as
// `@KeyValueObservable` writes it) declares their key paths: each entry
// `"balance": \Wallet.balance` whose name is a declared `@Observed`/
// `@ObservedArray`/`@ObservedSet` field and whose value type is that field's.
// A one-link key path of such a class equal to none of them is no observable
// property of it (a computed property, a subscript), and is refused before
// any getter runs.
//
// The table counts only when it is complete (every declared property named).
// An overridden getter is a key path of its own, which no inherited entry
// equals: ObservableComponents.swift adds the override's identity, read from
// the class's vtable.

enum DeclaredKeyPaths {
    private static let cache = LockedState([ObjectIdentifier: [AnyKeyPath]?]())

    /// The key paths of every observable property of `type`, rooted where
    /// declared, when its name table declares them all; `nil` when it does
    /// not (no table, or a partial one).
    static func keyPaths(of type: Any.Type) -> [AnyKeyPath]? {
        guard let observable = type as? any KeyValueObservable.Type, let typeClass = type as? AnyClass
        else { return nil }
        if let cached = cache.withLock({ $0[ObjectIdentifier(type)] }) { return cached }
        let found = read(observable, typeClass)
        cache.withLock { $0[ObjectIdentifier(type)] = found }
        return found
    }

    private static func read(_ observable: any KeyValueObservable.Type, _ typeClass: AnyClass) -> [AnyKeyPath]? {
        let declarations = ObservableDeclarations.of(typeClass)
        guard !declarations.isEmpty else { return nil }
        let table = observable.observableKeyPaths
        var keyPaths: [AnyKeyPath] = []
        for declaration in declarations {
            guard let keyPath = table[declaration.name],
                type(of: keyPath).valueType == declaration.valueType,
                let rerooted = KeyPathRegistry.rerooted(keyPath, at: typeClass),
                KeyPathShape.singleLink(of: keyPath)?.isOptionalChained == false
            else { return nil }
            keyPaths.append(rerooted)
        }
        return keyPaths
    }
}
