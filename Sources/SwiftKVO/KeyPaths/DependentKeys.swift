// Keys computed from other keys (SPEC §2.12). A dependent key has an engine key of its own; its
// sources are checked when it is first observed, and what each denotes is filed then. A setter
// whose state has `hasDependents` asks which keys made so far are computed from its key — from
// the filed sources, never evaluating one — and announces will/did for them around its change,
// transitively, as Apple KVO does. A cycle is refused at registration, so setters never follow
// one. Keys are interned outside the lock: a dependent key's name is a function of its
// declaration, so threads racing on one declaration intern one key.

import Synchronization

/// A dependent key: its engine key and how to read it. Interned, never freed.
@usableFromInline
class DependentKey: @unchecked Sendable {
    let key: EngineKey
    /// The key's probe: whether anybody observes it at all, in one load.
    let probe: EngineProbe
    let keyPath: AnyKeyPath
    /// The type of the values its changes carry.
    let valueType: Any.Type

    init(key: EngineKey, keyPath: AnyKeyPath, valueType: Any.Type) {
        self.key = key
        self.probe = Engine.probe(of: key)
        self.keyPath = keyPath
        self.valueType = valueType
    }

    /// Prior notification; returns (observed, old value).
    func willChange(_ object: AnyObject) -> (Bool, Any?) { (false, nil) }

    /// Post-change notification.
    func didChange(_ object: AnyObject, observed: Bool, old: Any?) {}
}

final class TypedDependentKey<Root, Value>: DependentKey, @unchecked Sendable {
    let typedKeyPath: KeyPath<Root, Value>

    init(key: EngineKey, keyPath: KeyPath<Root, Value>) {
        self.typedKeyPath = keyPath
        super.init(key: key, keyPath: keyPath, valueType: Value.self)
    }

    private func read(_ object: AnyObject) -> Value? {
        (object as? Root)?[keyPath: typedKeyPath]
    }

    override func willChange(_ object: AnyObject) -> (Bool, Any?) {
        let address = Engine.address(object)
        guard Engine.hasObservers(probe) else { return (false, nil) }
        let old = read(object)
        if Engine.hasPriorObservers(probe) {
            Engine.announce(
                prior: true, object: address, key: key, kind: .setting, old: old, new: nil,
                indexes: [])
        }
        return (true, old)
    }

    override func didChange(_ object: AnyObject, observed: Bool, old: Any?) {
        let address = Engine.address(object)
        guard observed || Engine.hasObservers(probe) else { return }
        Engine.announce(
            prior: false, object: address, key: key, kind: .setting, old: old as? Value,
            new: read(object), indexes: [])
    }
}

/// Opens an `AnyKeyPath` to its typed root and value.
private protocol DependentKeyMaking {
    func makeDependentKey(key: EngineKey) -> DependentKey
}

extension KeyPath: DependentKeyMaking {
    fileprivate func makeDependentKey(key: EngineKey) -> DependentKey {
        TypedDependentKey<Root, Value>(key: key, keyPath: self)
    }
}

/// Dependent changes in flight between a source's will and did.
@usableFromInline
final class DependentChanges {
    let object: AnyObject
    /// Used by the announcing thread only: no dynamic exclusivity check.
    @exclusivity(unchecked) var entries: [(key: DependentKey, observed: Bool, old: Any?)] = []

    init(object: AnyObject) { self.object = object }
}

@usableFromInline
enum Dependencies {
    private struct ClassKey: Hashable {
        let type: ObjectIdentifier
        let key: EngineKey
    }

    private struct State {
        /// Dependent keys made so far (each when first observed).
        var keys: [AnyKeyPath: DependentKey] = [:]
        /// The property each checked source denotes (filled when a dependent
        /// key is made; setters read it and never evaluate a source).
        var sources: [AnyKeyPath: EngineKey] = [:]
        /// Setters' answers, per class and key; cleared when a dependent key is made.
        var dependents: [ClassKey: [DependentKey]] = [:]
    }

    private static let state = LockedState(State())

    /// The dependent key for `keyPath` if `object`'s class declares it, also
    /// through a subclass: `\Sub.fullName` is the key declared as
    /// `\Base.fullName` (the same components under another root, see
    /// `KeyPathRegistry.rerooted`), so both reach one key and one set of
    /// observers.
    ///
    /// - Throws: ``KVOError/dependencyCycle`` if the key is computed,
    ///   through other dependent keys, from itself.
    static func dependentKey<Root: KeyValueObservable>(
        for keyPath: AnyKeyPath, on object: Root
    ) throws(KVOError) -> DependentKey? {
        let declared = declarations(of: object)
        guard let declaration = self.declaration(of: keyPath, in: declared) else { return nil }
        if let existing = state.withLock({ $0.keys[keyPath] }) { return existing }
        if isCyclic(declaration, in: declared) { throw .dependencyCycle }
        let dependent: DependentKey
        if declaration != keyPath {
            guard let declared = try dependentKey(for: declaration, on: object) else { return nil }
            dependent = declared
        } else {
            if KeyPathRegistry.property(declaration, of: object) != nil {
                throw KeyPathRegistry.refusal(
                    declaration,
                    "declared in dependentKeyPaths, but it is an observable property: "
                        + "only a computed property can be a dependent key")
            }
            try checkSources(of: declaration, in: declared, on: object)
            guard let maker = keyPath as? any DependentKeyMaking else { return nil }
            let key = Engine.intern(EngineKeyName.dependent(keyPath))
            guard key != 0 else { throw .outOfMemory }
            EngineKeyDescriptions.file(key, name: name(of: declaration, on: Root.self), isDependentKey: true)
            dependent = maker.makeDependentKey(key: key)
        }
        return state.withLock { state in
            if let existing = state.keys[keyPath] { return existing }
            state.keys[keyPath] = dependent
            state.dependents = [:]  // setters learn of it
            return dependent
        }
    }

    /// Whether `keyPath` is a dependent key the class `type` declares (what
    /// key-value coding refuses to assign).
    static func isDeclared(_ keyPath: AnyKeyPath, in type: any KeyValueObservable.Type) -> Bool {
        declaration(of: keyPath, in: declarations(of: type)) != nil
    }

    /// The entries of `object`'s class's `dependentKeyPaths` that belong to it:
    /// those whose dependent key is rooted in the class or a superclass. An
    /// entry rooted in another class (`\Other.name: [\Mine.title]`) is not
    /// the declaring class's to make: it is ignored, so it can never turn
    /// another class's property into a key that class's setters do not
    /// announce.
    private static func declarations<Root: KeyValueObservable>(of object: Root) -> [AnyKeyPath: [AnyKeyPath]] {
        declarations(of: type(of: object))
    }

    private static func declarations(of objectType: any KeyValueObservable.Type) -> [AnyKeyPath: [AnyKeyPath]] {
        objectType.dependentKeyPaths.filter { KeyPathRegistry.rerooted($0.key, at: objectType) != nil }
    }

    /// The declared dependent key path `keyPath` denotes: itself, or the
    /// declaration it reroots (a subclass's key path of a base class's key).
    private static func declaration(
        of keyPath: AnyKeyPath, in declared: [AnyKeyPath: [AnyKeyPath]]
    ) -> AnyKeyPath? {
        if declared[keyPath] != nil { return keyPath }
        let root = type(of: keyPath).rootType
        return declared.keys.first { KeyPathRegistry.rerooted($0, at: root) == keyPath }
    }

    /// Whether the declared key `start` is computed, through declared
    /// dependent keys, from itself.
    private static func isCyclic(
        _ start: AnyKeyPath, in declared: [AnyKeyPath: [AnyKeyPath]]
    ) -> Bool {
        var visited: Set<AnyKeyPath> = []
        var pending = declared[start] ?? []
        while let source = pending.popLast() {
            guard let next = declaration(of: source, in: declared) else { continue }
            if next == start { return true }
            if visited.insert(next).inserted { pending += declared[next] ?? [] }
        }
        return false
    }

    /// The engine key a declared source denotes: a dependent key's, or a
    /// property's, as checked when a dependent key computed from it was made;
    /// `nil` otherwise. Setters call this: it evaluates nothing.
    private static func sourceKey(_ source: AnyKeyPath, in state: State) -> EngineKey? {
        state.keys[source]?.key ?? state.sources[source]
    }

    /// What the dependent key declared as `declaration` is called: its name
    /// in the class's name table, or else its key path spelled out.
    private static func name<Root: KeyValueObservable>(of declaration: AnyKeyPath, on _: Root.Type) -> String {
        Root.observableKeyPaths.first { $0.value == declaration }?.key
            ?? KeyPathRegistry.spelling(of: declaration)
    }

    /// Refuses a dependent key with a source that could never announce it:
    /// each source must be an observable property of the class or another
    /// dependent key. A chain (`\Card.profile.first`) is not one: a change
    /// on the profile object does not pass through a setter of the card.
    private static func checkSources<Root: KeyValueObservable>(
        of declaration: AnyKeyPath, in declared: [AnyKeyPath: [AnyKeyPath]], on object: Root
    ) throws(KVOError) {
        for source in declared[declaration] ?? [] {
            if self.declaration(of: source, in: declared) != nil {
                // Another dependent key: made (and its own sources checked) now.
                _ = try dependentKey(for: source, on: object)
                continue
            }
            if KeyPathShape(of: source).isForceUnwrapped {
                throw KVOError(.forceUnwrappedKeyPath, detail: "source \(KeyPathRegistry.spelling(of: source))")
            }
            guard let property = KeyPathRegistry.property(source, of: object) else {
                guard RuntimeLayout.isTrusted else { throw KeyPathRegistry.limitRefusal(source) }
                throw KeyPathRegistry.refusal(
                    source,
                    "a source of \(KeyPathRegistry.spelling(of: declaration)) must be an observable property "
                        + "of the class or another dependent key")
            }
            state.withLock { $0.sources[source] = property.key }
        }
    }

    /// The dependent keys computed from `key` on `object`'s class, directly
    /// or through other dependent keys, each once: direct ones first.
    static func dependents<Root: KeyValueObservable>(
        of key: EngineKey, on object: Root
    ) -> [DependentKey] {
        let classKey = ClassKey(type: ObjectIdentifier(type(of: object)), key: key)
        if let cached = state.withLock({ $0.dependents[classKey] }) { return cached }
        let declared = declarations(of: object)
        return state.withLock { state in
            if let cached = state.dependents[classKey] { return cached }
            // Only dependent keys made so far (observed at some point): one
            // nobody ever observed has no observer to tell.
            var found: [DependentKey] = []
            var reached: Set<EngineKey> = [key]
            var frontier = [key]
            while !frontier.isEmpty {
                var next: [DependentKey] = []
                for (dependent, sources) in declared {
                    guard let dependentKey = state.keys[dependent],
                        sources.contains(where: { sourceKey($0, in: state).map(frontier.contains) ?? false }),
                        reached.insert(dependentKey.key).inserted
                    else { continue }
                    next.append(dependentKey)
                }
                next.sort { $0.key < $1.key }
                found += next
                frontier = next.map(\.key)
            }
            state.dependents[classKey] = found
            return found
        }
    }

    /// Whether a setter of `object`'s class must ask for dependents: whether
    /// the class declares any. Decided from the declaration alone (a source is
    /// never evaluated by a setter), so it holds before any is observed.
    static func hasDependents<Root: KeyValueObservable>(of key: EngineKey, on object: Root) -> Bool {
        !type(of: object).dependentKeyPaths.isEmpty
    }

    /// Announces prior notifications of the keys computed from `key`;
    /// `nil` when there are none.
    @usableFromInline
    static func willChange<Root: KeyValueObservable>(
        of key: EngineKey, on object: Root
    ) -> DependentChanges? {
        let dependents = dependents(of: key, on: object)
        guard !dependents.isEmpty else { return nil }
        let changes = DependentChanges(object: object)
        for dependent in dependents {
            let (observed, old) = dependent.willChange(object)
            changes.entries.append((dependent, observed, old))
        }
        return changes
    }

    /// Announces the changes of the keys computed from the source that changed.
    @usableFromInline
    static func didChange(_ changes: DependentChanges) {
        for entry in changes.entries {
            entry.key.didChange(changes.object, observed: entry.observed, old: entry.old)
        }
    }
}
