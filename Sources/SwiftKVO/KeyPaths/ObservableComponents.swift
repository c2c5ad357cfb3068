// Which key path components are observable properties of a class, known without evaluating
// anything. A component's identity is the word key path `==` compares. The class's name table
// (DeclaredKeyPaths.swift) gives the identity of each property it lists, so any other component
// of the class is none: what is observable is what is declared. A subclass's override of a listed
// getter is a component of its own, read from the vtable (AccessorOverrides.swift); one that
// cannot be told is not an observable property unless the subclass's table lists it.

enum ObservableComponents {
    private struct State {
        /// The names of the property identities declared so far, process-wide.
        var names: [KeyPathComponentID: String] = [:]
        /// Each class's observable identities (empty: no table).
        var identities: [ObjectIdentifier: Set<KeyPathComponentID>] = [:]
    }

    private static let state = LockedState(State())

    /// Whether `id` is an observable property of `owner` (registration
    /// path): one its table lists, or `owner`'s override of one. Decided
    /// from the table alone; `false` for a class without one.
    static func isProperty(_ id: KeyPathComponentID, of owner: Any.Type) -> Bool {
        identities(of: owner).contains(id)
    }

    /// The name of the property `id` identifies, when its owner's table (read
    /// for `owner` if it was not yet) declares it.
    static func name(of id: KeyPathComponentID, in owner: Any.Type) -> String? {
        if let name = state.withLock({ $0.names[id] }) { return name }
        _ = identities(of: owner)
        return state.withLock { $0.names[id] }
    }

    /// The identities of the observable properties `owner`'s table lists,
    /// with its overrides of their getters where those can be told.
    private static func identities(of owner: Any.Type) -> Set<KeyPathComponentID> {
        let key = ObjectIdentifier(owner)
        if let ids = state.withLock({ $0.identities[key] }) { return ids }
        var ids = Set<KeyPathComponentID>()
        var names: [KeyPathComponentID: String] = [:]
        for entry in DeclaredKeyPaths.entries(of: owner) ?? [] {
            guard let link = KeyPathShape.singleLink(of: entry.keyPath) else { continue }
            ids.insert(link.id)
            names[link.id] = entry.declaration.name
            if let overrideID = overrideIdentity(of: link.id, declaredBy: entry.declaration.declaringClass, in: owner) {
                ids.insert(overrideID)
            }
        }
        state.withLock { state in
            state.names.merge(names) { first, _ in first }
            state.identities[key] = ids
        }
        return ids
    }

    /// The identity of `owner`'s override of the getter of the property
    /// `property` that `declaring` declares; `nil` when `owner` does not
    /// override it, or that cannot be told.
    private static func overrideIdentity(
        of property: KeyPathComponentID, declaredBy declaring: AnyClass, in owner: Any.Type
    ) -> KeyPathComponentID? {
        guard let ownerClass = owner as? AnyClass,
            case .overridden(let identity) = AccessorOverrides.getter(of: property, declaredBy: declaring, in: ownerClass)
        else { return nil }
        return KeyPathComponentID(value: identity, kind: 0)
    }
}
