// A class's observable properties' own key paths, from its name table, without evaluating
// anything. An optimized build gives each key path literal thunks of its own, so accessor
// addresses cannot tell properties apart; key path `==` can. An entry counts when its name is a
// stored observable wrapper of the class with the entry's value type; the others (dependent keys,
// anything else) are not properties. An overridden getter's key path equals no inherited entry,
// so ObservableComponents.swift adds the override's identity.

enum DeclaredKeyPaths {
    /// One table entry that is an observable property.
    struct Entry {
        /// The entry's key path, rerooted at the class whose table it is.
        let keyPath: AnyKeyPath
        /// The wrapper it names.
        let declaration: ObservableDeclaration
    }

    private static let cache = LockedState([ObjectIdentifier: [Entry]?]())

    /// The entries of `type`'s name table that are observable properties;
    /// `nil` when `type` has no table.
    static func entries(of type: Any.Type) -> [Entry]? {
        guard let observable = type as? any KeyValueObservable.Type, let typeClass = type as? AnyClass
        else { return nil }
        if let cached = cache.withLock({ $0[ObjectIdentifier(type)] }) { return cached }
        let found = read(observable, typeClass)
        cache.withLock { $0[ObjectIdentifier(type)] = found }
        return found
    }

    private static func read(_ observable: any KeyValueObservable.Type, _ typeClass: AnyClass) -> [Entry]? {
        let table = observable.observableKeyPaths
        guard !table.isEmpty else { return nil }
        return ObservableDeclarations.of(typeClass).compactMap { declaration in
            guard let keyPath = table[declaration.name],
                type(of: keyPath).valueType == declaration.valueType,
                let rerooted = KeyPathRegistry.rerooted(keyPath, at: typeClass),
                KeyPathShape.singleLink(of: keyPath)?.isOptionalChained == false
            else { return nil }
            return Entry(keyPath: rerooted, declaration: declaration)
        }
    }
}
