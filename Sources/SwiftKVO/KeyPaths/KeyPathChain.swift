// Observing `document.account.name` (SPEC §2.13). Every link but the last is structural: observed
// with a prior notification, so the old value is read through the whole path before an
// intermediate is replaced; the links below are then observed again on the new objects, and the
// user gets one `setting` read through the path. The last link forwards the leaf's own changes.
// A one-link chain is an override of an inherited property: every change is read through it. An
// optional chain registered through nil is checked link by link as links appear; one that turns
// out to end in a computed property observes every property it reads, each change read through
// the key path. The root is held weakly: its death ends the chain and releases the handler.

import Synchronization

final class KeyPathChain<Root: KeyValueObservable, Value>: CompositeObservation, @unchecked Sendable {
    private struct State {
        var active = true
        /// The engine token of the link on the root.
        var headToken: EngineToken = .none
        /// Tokens of the links below the root.
        var tailTokens: [EngineToken] = []
        /// Counts installed tails (see `replaceTail`).
        var tailGeneration: UInt64 = 0  // compared for equality only: wraps, never traps
        /// Old values read at prior time, per thread (a stack: nested changes).
        var pendingOld: [(thread: UInt, old: Value?)] = []
        /// The user's handler, let go of when the chain ends.
        var handler: (@Sendable (Root, ObservedChange<Value>) -> Void)?
    }

    private let keyPath: KeyPath<Root, Value>
    private let unmanagedKeyPath: Unmanaged<AnyKeyPath>
    private let options: ObservingOptions
    private weak var root: Root?
    private let state: LockedState<State>
    /// An optional chain (`\.account?.name`): `Value` is `Leaf?`, the leaf
    /// announces `Leaf` values, and links may end early at a nil.
    private let isOptionalChain: Bool
    /// The leaf property's value type.
    private let leafType: Any.Type
    /// The key path's components, to check the links of an optional chain.
    private let shape: [KeyPathLink]
    /// The root's registrar, told to end the chain when the root dies.
    private weak var rootRegistrar: KVORegistrar?
    /// The registrar's id of that request (0: none or withdrawn).
    private let rootDeathHandler = Atomic<UInt64>(0)

    private init(
        root: Root, keyPath: KeyPath<Root, Value>, resolved: ResolvedKeyPath,
        options: ObservingOptions, handler: @escaping @Sendable (Root, ObservedChange<Value>) -> Void
    ) {
        self.root = root
        self.keyPath = keyPath
        self.unmanagedKeyPath = resolved.unmanagedKeyPath
        self.options = options
        self.state = LockedState(State(handler: handler))
        if case .links(let shape) = KeyPathShape(of: keyPath) {
            self.shape = shape
        } else {
            self.shape = []
        }
        let links = KeyPathRegistry.links(of: keyPath, on: root)
        if let optional = Value.self as? any OptionalValue.Type,
            links.last?.property.valueType != Value.self
        {
            self.isOptionalChain = true
            self.leafType = optional.wrappedType
        } else {
            self.isOptionalChain = false
            self.leafType = Value.self
        }
    }

    static func observe(
        _ root: Root, keyPath: KeyPath<Root, Value>, resolved: ResolvedKeyPath,
        options: ObservingOptions, handler: @escaping @Sendable (Root, ObservedChange<Value>) -> Void
    ) throws(KVOError) -> ObservationToken {
        let chain = KeyPathChain(
            root: root, keyPath: keyPath, resolved: resolved, options: options, handler: handler)
        let links = KeyPathRegistry.links(of: keyPath, on: root)
        guard !links.isEmpty, links[0].object === root else {
            throw KeyPathRegistry.refusal(keyPath, "it reads no observable property of the object")
        }
        root.kvoRegistrar.attach(root)
        chain.rootRegistrar = root.kvoRegistrar
        chain.rootDeathHandler.store(
            root.kvoRegistrar.addDeathHandler { _ = chain.cancel() }, ordering: .relaxed)
        let headToken = try Engine.observe(
            object: Engine.address(root), key: links[0].property.key, options: [.prior],
            owner: nil, box: chain.makeStructuralBox())
        chain.state.withLock { $0.headToken = headToken }
        // Read the links below the root again: the head now reports every
        // replacement, and one made since the first reading is seen here.
        chain.replaceTail(root)
        if options.contains(.initial) {
            let new: Value? = options.contains(.new) ? root[keyPath: keyPath] : nil
            chain.handler?(
                root,
                ObservedChange(
                    kind: .setting, oldValue: nil, newValue: new, indexes: [], isPrior: false,
                    isInitial: true, keyPath: chain.unmanagedKeyPath))
        }
        return CompositeObservationToken(composite: chain)
    }

    /// Observes links 1..<n (structural ones with prior, the leaf with the user's options).
    private func registerTail(_ links: [ProbeRecord], leafIsExact: Bool) -> [EngineToken] {
        var tokens: [EngineToken] = []
        for index in 1..<links.count {
            let link = links[index]
            (link.object as? any KeyValueObservable)?.kvoRegistrar.attach(link.object)
            let isLeaf =
                leafIsExact && index == links.count - 1 && link.property.valueType == leafType
            let box = isLeaf ? makeLeafBox() : makeStructuralBox()
            let linkOptions: ObservingOptions =
                isLeaf ? options.subtracting(.initial) : [.prior]
            if let token = try? Engine.observe(
                object: Engine.address(link.object), key: link.property.key,
                options: linkOptions, owner: nil, box: box)
            {
                tokens.append(token)
            }
        }
        return tokens
    }

    private func makeStructuralBox() -> EngineObservation {
        // The box holds the chain strongly (the chain holds only tokens, no
        // cycle): it lives until the engine released every box.
        ChainLinkObservation { change, box in
            self.structuralChange(change, box: unsafeDowncast(box, to: SelfRemovingObservation.self))
        }
    }

    private func makeLeafBox() -> EngineObservation {
        ChainLinkObservation { change, box in
            self.leafChange(change, box: unsafeDowncast(box, to: SelfRemovingObservation.self))
        }
    }

    private func structuralChange(_ change: EngineChange, box: SelfRemovingObservation) {
        guard let root else {
            Engine.unobserveDeferred(box.token)
            return
        }
        let thread = currentThreadID()
        if change.isPrior {
            let old: Value? =
                options.contains(.old) || options.contains(.prior) ? root[keyPath: keyPath] : nil
            state.withLock { $0.pendingOld.append((thread, old)) }
            if options.contains(.prior) {
                handler?(
                    root,
                    ObservedChange(
                        kind: .setting, oldValue: options.contains(.old) ? old : nil,
                        newValue: nil, indexes: [], isPrior: true, isInitial: false,
                        keyPath: unmanagedKeyPath))
            }
            return
        }
        let old: Value? = state.withLock { state in
            guard let index = state.pendingOld.lastIndex(where: { $0.thread == thread }) else {
                return nil
            }
            return state.pendingOld.remove(at: index).old
        }
        replaceTail(root)
        let new: Value? = options.contains(.new) ? root[keyPath: keyPath] : nil
        handler?(
            root,
            ObservedChange(
                kind: .setting, oldValue: options.contains(.old) ? old : nil, newValue: new,
                indexes: [], isPrior: false, isInitial: false, keyPath: unmanagedKeyPath))
    }

    private func leafChange(_ change: EngineChange, box: SelfRemovingObservation) {
        guard let root else {
            Engine.unobserveDeferred(box.token)
            return
        }
        handler?(
            root,
            ObservedChange(
                kind: change.kind,
                oldValue: change.oldValue(as: Value.self, wrappingLeaf: isOptionalChain),
                newValue: change.newValue(as: Value.self, wrappingLeaf: isOptionalChain),
                indexes: change.indexes,
                isPrior: change.isPrior, isInitial: false, keyPath: unmanagedKeyPath))
    }

    /// Moves the observations below the root to the current intermediates.
    ///
    /// The links are read and registered outside the chain's lock (an
    /// engine writer runs release callbacks, i.e. user deinits, on the
    /// calling thread, and one may end this very chain), and installed only
    /// if no other tail was installed since they were read; otherwise they
    /// are removed and read again. So the tail installed last was read after
    /// every earlier installation: a replacement racing with the
    /// registration or with another replacement can neither leave the tail
    /// on a stale intermediate nor install tokens the chain would never
    /// remove.
    private func replaceTail(_ root: Root) {
        while true {
            guard let generation = state.withLock({ $0.active ? $0.tailGeneration : nil }) else {
                return
            }
            let links = KeyPathRegistry.links(of: keyPath, on: root)
            let fresh =
                !links.isEmpty && links[0].object === root
                ? registerTail(links, leafIsExact: leafIsExact(links)) : []
            let (stale, installed): ([EngineToken], Bool) = state.withLock { state in
                guard state.active else { return (fresh, true) }  // ended meanwhile
                guard state.tailGeneration == generation else { return (fresh, false) }
                state.tailGeneration &+= 1
                defer { state.tailTokens = fresh }
                return (state.tailTokens, true)
            }
            for token in stale { Engine.unobserve(token) }
            if installed { return }
        }
    }

    /// Whether the last of `links` is the key path's own last component, whose
    /// changes can be forwarded as they are. Not so for an optional chain
    /// registered while a link was nil, if what lay past it turns out to be
    /// a computed property: then every property it read is observed as a
    /// structural link, and each change is read through the whole key path.
    private func leafIsExact(_ links: [ProbeRecord]) -> Bool {
        guard shape.count > 1, shape.contains(where: { $0.isOptionalChained }) else { return true }
        if case .mismatch = KeyPathRegistry.chainMatch(links, shape, keyPath: keyPath) { return false }
        return true
    }

    /// The user's handler, `nil` once the chain ended.
    private var handler: (@Sendable (Root, ObservedChange<Value>) -> Void)? {
        state.withLock { $0.handler }
    }

    /// Whether the chain still observes: not ended, and its root alive (a
    /// dead root's observations went with it).
    var isActive: Bool { state.withLock { $0.active } && root != nil }

    private func takeTokens() -> [EngineToken] {
        let handler = rootDeathHandler.exchange(0, ordering: .relaxed)
        if handler != 0 { rootRegistrar?.removeDeathHandler(handler) }
        return state.withLock { state in
            guard state.active else { return [] }
            state.active = false
            defer {
                state.headToken = .none
                state.tailTokens = []
                state.handler = nil
            }
            return [state.headToken] + state.tailTokens
        }
    }

    func cancel() -> Bool {
        let tokens = takeTokens()
        guard !tokens.isEmpty else { return false }  // ended before
        let rootAlive = root != nil  // a dead root's observations went with it
        for token in tokens { Engine.unobserve(token) }
        return rootAlive
    }

    func cancelAndWait() throws(KVOError) {
        let tokens = takeTokens()
        var failure: KVOError?
        for token in tokens {
            if let error = Engine.unobserveAndWait(token), error == .wouldDeadlock {
                Engine.unobserve(token)
                failure = error
            }
        }
        if let failure { throw failure }
    }
}

/// The box of one link of a chain (listed as a chain's).
private final class ChainLinkObservation: SelfRemovingObservation, @unchecked Sendable {
    override var observerKind: ObservationSummary.Observer { .chain }
}
