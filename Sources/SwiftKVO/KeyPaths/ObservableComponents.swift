// Which key path components are observable properties of a class, known without evaluating
// anything. A component's identity is the word key path `==` compares. A complete name table
// (DeclaredKeyPaths.swift) gives every property's identity, so any other component of the class
// is none; without one, each wrapper's getter reports its property's identity under the probe,
// and once all have, the class counts as tabled. A subclass's override of a getter is a component
// of its own, read from the vtable (AccessorOverrides.swift). A component neither source knows is
// `unknown`: the registry then reads it once under the probe, the one evaluation left.

/// What the registry knows of one component, before evaluating anything.
enum ComponentVerdict {
    /// One of the class's observable properties (or an inherited one).
    case property
    /// Known not to be one: a computed property, a subscript, an override.
    case notProperty
    /// Not known yet (a class with no complete table).
    case unknown
}

enum ObservableComponents {
    /// A property whose accessor identity was reported or declared.
    struct Known {
        let name: String
        let declaringClass: ObjectIdentifier
    }

    private struct State {
        /// Every property identity learned so far, process-wide.
        var known: [KeyPathComponentID: Known] = [:]
        /// Classes whose complete name table gives every observable
        /// property's identity.
        var tabled: [ObjectIdentifier: Set<KeyPathComponentID>] = [:]
        /// Classes without one whose wrappers have all reported theirs.
        var reported: [ObjectIdentifier: Set<KeyPathComponentID>] = [:]
        /// Classes checked and found without a usable table.
        var untabled: Set<ObjectIdentifier> = []
    }

    private static let state = LockedState(State())

    /// Whether `id` is an observable property of `owner` (registration path).
    ///
    /// - Parameter reports: Whether wrappers' reports may complete what a
    ///   missing table does not say. They decide exactly as reading the key
    ///   path would, without running its getter, where there is an object to
    ///   read; where there is none (past a nil link), only a table decides,
    ///   so that the outcome never depends on what was read before.
    static func verdict(
        of id: KeyPathComponentID, in owner: Any.Type, reports: Bool = true
    ) -> ComponentVerdict {
        if let ids = completeIdentities(of: owner, reports: reports) {
            return ids.contains(id) ? .property : .notProperty
        }
        return state.withLock { state in
            guard let known = state.known[id], KeyPathRegistry.isSubclass(owner, of: known.declaringClass)
            else { return .unknown }
            return .property
        }
    }

    /// The name of the property `id` identifies, when known: reported, or
    /// declared by the table of `owner` (read for it if it was not yet).
    static func name(of id: KeyPathComponentID, in owner: Any.Type? = nil) -> String? {
        if let name = state.withLock({ $0.known[id]?.name }) { return name }
        guard let owner, completeIdentities(of: owner, reports: false) != nil else { return nil }
        return state.withLock { $0.known[id]?.name }
    }

    /// Files what the wrappers read under the probe reported.
    static func learn(_ records: [ProbeRecord]) {
        let reported = records.compactMap { record -> (KeyPathComponentID, Known)? in
            guard let link = KeyPathShape.singleLink(of: record.keyPath),
                let declaring = record.property.declaringClass
            else { return nil }
            return (link.id, Known(name: record.property.name, declaringClass: ObjectIdentifier(declaring)))
        }
        guard !reported.isEmpty else { return }
        state.withLock { $0.known.merge(reported) { first, _ in first } }
    }

    /// The identities of every observable property of `owner`, when all are
    /// known; `nil` otherwise.
    private static func completeIdentities(of owner: Any.Type, reports: Bool) -> Set<KeyPathComponentID>? {
        let id = ObjectIdentifier(owner)
        if let ids = state.withLock({ $0.tabled[id] ?? (reports ? $0.reported[id] : nil) }) { return ids }
        if let table = tableIdentities(of: owner) {
            state.withLock { state in
                state.known.merge(table.known) { first, _ in first }
                state.tabled[id] = table.ids
            }
            return table.ids
        }
        return reports ? reportedIdentities(of: owner) : nil
    }

    /// The identities the name table of `owner` declares, when complete.
    private static func tableIdentities(
        of owner: Any.Type
    ) -> (ids: Set<KeyPathComponentID>, known: [KeyPathComponentID: Known])? {
        if state.withLock({ $0.untabled.contains(ObjectIdentifier(owner)) }) { return nil }
        guard let keyPaths = DeclaredKeyPaths.keyPaths(of: owner) else {
            state.withLock { _ = $0.untabled.insert(ObjectIdentifier(owner)) }
            return nil
        }
        var ids = Set<KeyPathComponentID>()
        var known: [KeyPathComponentID: Known] = [:]
        for (keyPath, declaration) in zip(keyPaths, ObservableDeclarations.of(owner)) {
            guard let link = KeyPathShape.singleLink(of: keyPath),
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

    /// The identities the wrappers of `owner` have reported, when every one
    /// of its declared wrappers has (with the identities of the getters
    /// `owner` overrides, components of their own no report names).
    private static func reportedIdentities(of owner: Any.Type) -> Set<KeyPathComponentID>? {
        guard let ownerClass = owner as? AnyClass else { return nil }
        let declarations = ObservableDeclarations.of(ownerClass)
        guard !declarations.isEmpty else { return nil }
        let reported: [KeyPathComponentID]? = state.withLock { state in
            var reported: [KeyPathComponentID] = []
            for declaration in declarations {
                let declaring = ObjectIdentifier(declaration.declaringClass)
                guard
                    let id = state.known.first(where: {
                        $0.value.declaringClass == declaring && $0.value.name == declaration.name
                    })?.key
                else { return nil }
                reported.append(id)
            }
            return reported
        }
        guard let reported else { return nil }
        var ids = Set(reported)
        for (id, declaration) in zip(reported, declarations) {
            guard let overrideID = overrideIdentity(of: id, declaredBy: declaration.declaringClass, in: owner)
            else { return nil }
            if let overrideID { ids.insert(overrideID) }
        }
        state.withLock { $0.reported[ObjectIdentifier(owner)] = ids }
        return ids
    }
}
