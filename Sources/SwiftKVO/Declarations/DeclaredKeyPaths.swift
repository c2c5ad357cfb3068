// A class's observable properties' own key paths, from its name table, without evaluating
// anything. An optimized build gives each key path literal thunks of its own, so accessor
// addresses cannot tell properties apart; key path `==` can. The table counts only when complete
// (every declared property named, with its type); an overridden getter's key path equals no
// inherited entry, so ObservableComponents.swift adds the override's identity.

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
