// Which key path components are observable properties of a class, known without evaluating
// anything. A component's identity is the word key path `==` compares. The class's name table
// (DeclaredKeyPaths.swift) gives the identity of each property it lists, so any other component
// of the class is none: what is observable is what is declared. A subclass's override of a getter
// is a component of its own, read from the vtable (AccessorOverrides.swift); where that cannot be
// told, the component is `unknown` and the registry reads it once under the probe.

/// What the registry knows of one component, before evaluating anything.
enum ComponentVerdict {
    /// One of the class's observable properties (or an inherited one).
    case property
    /// Known not to be one: a computed property, a subscript, an override.
    case notProperty
    /// Not known: whether the class overrides a listed property's getter
    /// could not be told.
    case unknown
}

enum ObservableComponents {
    /// A property whose accessor identity was reported or declared.
    struct Known {
        let name: String
        let declaringClass: ObjectIdentifier
    }

    private struct State {
        /// Every property identity declared so far, process-wide.
        var known: [KeyPathComponentID: Known] = [:]
        /// Classes whose name table gives their observable properties' identities.
        var tabled: [ObjectIdentifier: Set<KeyPathComponentID>] = [:]
        /// Classes checked and found without a usable table.
        var untabled: Set<ObjectIdentifier> = []
    }

    private static let state = LockedState(State())

    /// Whether `id` is an observable property of `owner` (registration
    /// path): one its table lists, or `owner`'s override of one.
    static func verdict(of id: KeyPathComponentID, in owner: Any.Type) -> ComponentVerdict {
        guard let ids = identities(of: owner) else { return .unknown }
        return ids.contains(id) ? .property : .notProperty
    }

    /// The name of the property `id` identifies, when known: reported, or
    /// declared by the table of `owner` (read for it if it was not yet).
    static func name(of id: KeyPathComponentID, in owner: Any.Type? = nil) -> String? {
        if let name = state.withLock({ $0.known[id]?.name }) { return name }
        guard let owner, identities(of: owner) != nil else { return nil }
        return state.withLock { $0.known[id]?.name }
    }

    /// The identities of the observable properties `owner`'s table lists,
    /// with its overrides of their getters; `nil` when there is no table,
    /// or an override cannot be told.
    private static func identities(of owner: Any.Type) -> Set<KeyPathComponentID>? {
        let id = ObjectIdentifier(owner)
        if let ids = state.withLock({ $0.tabled[id] }) { return ids }
        guard let table = tableIdentities(of: owner) else { return nil }
        state.withLock { state in
            state.known.merge(table.known) { first, _ in first }
            state.tabled[id] = table.ids
        }
        return table.ids
    }

    /// The identities the name table of `owner` declares.
    private static func tableIdentities(
        of owner: Any.Type
    ) -> (ids: Set<KeyPathComponentID>, known: [KeyPathComponentID: Known])? {
        if state.withLock({ $0.untabled.contains(ObjectIdentifier(owner)) }) { return nil }
        guard let entries = DeclaredKeyPaths.entries(of: owner) else {
            state.withLock { _ = $0.untabled.insert(ObjectIdentifier(owner)) }
            return nil
        }
        var ids = Set<KeyPathComponentID>()
        var known: [KeyPathComponentID: Known] = [:]
        for entry in entries {
            let declaration = entry.declaration
            guard let link = KeyPathShape.singleLink(of: entry.keyPath),
                let overrideID = overrideIdentity(of: link.id, declaredBy: declaration.declaringClass, in: owner)
            else { return nil }
            ids.insert(link.id)
            known[link.id] = Known(
                name: declaration.name, declaringClass: ObjectIdentifier(declaration.declaringClass))
            if let overrideID { ids.insert(overrideID) }
        }
        return (ids, known)
    }

    /// The identity of `owner`'s override of the getter of the property
    /// `property` that `declaring` declares: `.some(nil)` when `owner` does
    /// not override it, `nil` when that cannot be told.
    private static func overrideIdentity(
        of property: KeyPathComponentID, declaredBy declaring: AnyClass, in owner: Any.Type
    ) -> KeyPathComponentID?? {
        guard let ownerClass = owner as? AnyClass else { return .some(nil) }
        switch AccessorOverrides.getter(of: property, declaredBy: declaring, in: ownerClass) {
        case .none: return .some(nil)
        case .overridden(let identity): return .some(KeyPathComponentID(value: identity, kind: 0))
        case .unknown: return AccessorOverrides.exist(in: ownerClass, of: declaring) ? nil : .some(nil)
        }
    }
}
