// Keys by name (SPEC §2.19). A name is looked up in the class's `observableKeyPaths` and becomes
// the typed key path it names (a dotted path composes them); from there everything is the typed
// API, so an observation by name is the typed observation. A resolved path is cached per (class,
// path) for the life of the process, and each thread remembers its last few lookups.

import Synchronization

extension KeyValueObservable {
    /// The value of the observable key `key`, as Apple's `value(forKey:)`.
    ///
    /// - Parameter key: A name in the class's ``observableKeyPaths``.
    /// - Returns: The value, its optionals unwrapped (`nil` for an optional
    ///   property that is `nil`).
    /// - Throws: ``KVOError/unknownKey`` if the class has no such key, and for
    ///   a dotted key (a key path: ``value(forKeyPath:)`` follows it).
    ///
    /// Thread-safe as reading the property is. Cost: a dictionary lookup
    /// under a lock, then the key path read.
    public func value(forKey key: String) throws(KVOError) -> Any? {
        try KeyValueCoding.checkSingle(key, advice: "value(forKeyPath:) follows it")
        return try value(forKeyPath: key)
    }

    /// The value at the dotted key path `keyPath` (`"account.name"`), as
    /// Apple's `value(forKeyPath:)`.
    ///
    /// Each name is looked up in the table of the class the previous one
    /// leads to; a `nil` link makes the whole value `nil`. Optionals are
    /// unwrapped at every level, as observing the path by name delivers them.
    /// - Throws: ``KVOError/unknownKey`` naming the first unknown name.
    public func value(forKeyPath keyPath: String) throws(KVOError) -> Any? {
        guard let (holder, key) = try KeyValueCoding.holder(of: keyPath, from: self) else { return nil }
        return try KeyValueCoding.path(key, on: type(of: holder)).read(holder)
    }

    /// The value at `keyPath` (a key or a dotted key path) as a `Value`.
    ///
    /// - Throws: ``KVOError/unknownKey``; ``KVOError/typeMismatch`` if the
    ///   value is not a `Value`.
    public func value<Value>(forKeyPath keyPath: String, as _: Value.Type) throws(KVOError) -> Value {
        let path = try KeyValueCoding.path(keyPath, on: type(of: self))
        guard let value = try self.value(forKeyPath: keyPath) as? Value else {
            throw KVOError(
                .typeMismatch,
                detail: "`\(keyPath)` holds \(_typeName(type(of: path.keyPath).valueType, qualified: false)), not \(Value.self)")
        }
        return value
    }

    /// Sets the observable key `key` to `value`, as Apple's
    /// `setValue(_:forKey:)`: an assignment through the key path, which
    /// notifies exactly as the same assignment in code.
    ///
    /// - Throws: ``KVOError/unknownKey`` for an unknown key, and for a dotted
    ///   key (a key path: ``setValue(_:forKeyPath:)`` follows it);
    ///   ``KVOError/typeMismatch`` for a value of another type (or `nil` for a
    ///   property that is not optional); ``KVOError/unsupportedKeyPath`` for a
    ///   key that cannot be assigned (a dependent key, even one with a
    ///   setter). Nothing changes then.
    public func setValue(_ value: Any?, forKey key: String) throws(KVOError) {
        try KeyValueCoding.checkSingle(key, advice: "setValue(_:forKeyPath:) follows it")
        try setValue(value, forKeyPath: key)
    }

    /// Sets the value at the dotted key path `keyPath`, as Apple's
    /// `setValue(_:forKeyPath:)`; see ``setValue(_:forKey:)``. Each link is
    /// followed to its current object, optional links included; a `nil` link
    /// is ``KVOError/notFound`` and changes nothing.
    public func setValue(_ value: Any?, forKeyPath keyPath: String) throws(KVOError) {
        guard let (holder, key) = try KeyValueCoding.holder(of: keyPath, from: self) else {
            throw KVOError(.notFound, detail: "`\(keyPath)`: a link on the way is nil")
        }
        let path = try KeyValueCoding.path(key, on: type(of: holder))
        guard !path.isDependent else {
            throw KVOError(.unsupportedKeyPath, detail: "`\(keyPath)` is a dependent key: it is computed, not assigned")
        }
        try path.write(value, keyPath: keyPath, to: holder)
    }

    /// Observes the key or dotted key path `keyPath` by name, as Apple's
    /// `addObserver(_:forKeyPath:options:context:)`.
    ///
    /// The same observation as ``observe(_:options:changeHandler:)`` with the
    /// typed key path the name stands for: same key, order, options and
    /// lifetimes. The values arrive as ``value(forKeyPath:)`` reads them:
    /// as `Any`, optionals unwrapped at every level, `nil` for `nil`. Through
    /// an optional link (`"spare.name"` with `spare: Account?`) that key path
    /// is the optional chain `\.spare?.name`: its values are the names, or
    /// `nil` while `spare` or its name is `nil`.
    /// - Throws: ``KVOError/unknownKey``, and the refusals of the typed call.
    public func observe(
        keyPath: String, options: ObservingOptions = [],
        changeHandler: @escaping @Sendable (Self, ObservedChange<Any>) -> Void
    ) throws(KVOError) -> ObservationToken {
        let path = try KeyValueCoding.path(keyPath, on: type(of: self))
        return try path.observe(self, options: options) { object, change in
            changeHandler(unsafeDowncast(object, to: Self.self), change)  // the object observed
        }
    }

    /// A mutator for the `@ObservedArray` property `key`, as Apple's
    /// `mutableArrayValue(forKey:)`: its changes notify insertion, removal and
    /// replacement with their indexes.
    ///
    /// - Throws: ``KVOError/unknownKey``; ``KVOError/typeMismatch`` if the key
    ///   is not an array of `Element`.
    public func mutableArrayValue<Element>(
        forKey key: String, of _: Element.Type
    ) throws(KVOError) -> ObservedArrayMutator<Self, Element> {
        // Resolved on the static type: the mutator is typed by it (a
        // reference of a base class type reaches the base class's keys).
        try KeyValueCoding.checkSingle(key, advice: "ask the object its links lead to")
        let path = try KeyValueCoding.path(key, on: Self.self)
        guard !path.isDependent else {
            throw KVOError(.unsupportedKeyPath, detail: "`\(key)` is a dependent key: it is computed, not mutated")
        }
        guard let keyPath = path.keyPath as? ReferenceWritableKeyPath<Self, [Element]> else {
            throw KVOError(
                .typeMismatch,
                detail: "`\(key)` holds \(_typeName(type(of: path.keyPath).valueType, qualified: false)), not [\(Element.self)]")
        }
        return mutableArray(keyPath)
    }
}

extension KVOController {
    /// Observes the key or dotted key path `keyPath` of `object` by name: the
    /// same observation as the typed key path's (a second registration by
    /// either spelling is "already observing"; unobserving either removes it).
    ///
    /// - Returns: `false` if already observing (nothing changes).
    /// - Throws: ``KVOError/invalidArgument`` for a `nil` object,
    ///   ``KVOError/unknownKey``, and the refusals of the typed call.
    @discardableResult
    public func observe<Object: KeyValueObservable>(
        _ object: Object?, keyPath: String, options: ObservingOptions = [],
        block: @escaping @Sendable (Observer, Object, ObservedChange<Any>) -> Void
    ) throws(KVOError) -> Bool {
        guard let object else { throw .invalidArgument }
        let path = try KeyValueCoding.path(keyPath, on: Object.self)
        return try path.opening.register(in: self, object: object, options: options, block: block)
    }

    /// Stops observing `keyPath` (a name) of `object`; see
    /// ``unobserve(_:_:)``. `false` if it was not observed or is unknown.
    @discardableResult
    public func unobserve<Object: KeyValueObservable>(_ object: Object?, keyPath: String) -> Bool {
        guard let object, let path = try? KeyValueCoding.path(keyPath, on: Object.self) else {
            return false
        }
        return path.opening.unregister(in: self, object: object)
    }
}

/// Resolution of names to key paths.
enum KeyValueCoding {
    /// Throws ``KVOError/unknownKey`` for a dotted `key` given where one key
    /// is meant, with `advice` on what follows a key path.
    static func checkSingle(_ key: String, advice: String) throws(KVOError) {
        guard key.utf8.contains(UInt8(ascii: ".")) else { return }
        throw KVOError(.unknownKey, detail: "`\(key)` is a key path, not a key: \(advice)")
    }


    /// The object holding the last key of the dotted `path`, and that key:
    /// each link before it read on the object it leads to (so optional links
    /// are followed); `nil` if a link is `nil`, once the names past it are
    /// known to the class the link declares (an unknown name throws whatever
    /// the links hold, as it does for observing).
    static func holder(
        of path: String, from object: any KeyValueObservable
    ) throws(KVOError) -> (object: any KeyValueObservable, key: String)? {
        var names = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let key = names.removeLast()
        var current = object
        for (index, name) in names.enumerated() {
            let link = try Self.path(name, on: type(of: current))
            // A nil at any level of a link optional more than once
            // (`Wallet??`) is a nil link too.
            var value = link.read(current)
            while let nested = value, let optional = nested as? any OptionalValue { value = optional.wrappedValue }
            guard let value else {
                try checkNames(names[(index + 1)...] + [key], past: type(of: link.keyPath).valueType, in: path)
                return nil
            }
            guard let next = value as? any KeyValueObservable else {
                throw KVOError(
                    .unknownKey, detail: "`\(path)`: `\(name)` holds \(Swift.type(of: value)), not an observable object")
            }
            current = next
        }
        return (current, key)
    }

    /// Checks that each of `names` is a key of the class the previous one
    /// declares, from the value type `declared` (optionals unwrapped): the
    /// names past a nil link, which no object is there to follow.
    private static func checkNames(_ names: [String], past declared: Any.Type, in path: String) throws(KVOError) {
        var owner = declared
        for name in names {
            while let optional = owner as? any OptionalValue.Type { owner = optional.wrappedType }
            guard let link = declaredLink(name, of: owner) else { throw unknown(name, of: owner, in: path) }
            owner = type(of: link).valueType
        }
    }

    /// The key path the class `owner` declares under `name`, rooted at `owner`.
    private static func declaredLink(_ name: some StringProtocol, of owner: Any.Type) -> AnyKeyPath? {
        guard let ownerClass = owner as? any KeyValueObservable.Type,
            let declared = ownerClass.observableKeyPaths[String(name)]
        else { return nil }
        return KeyPathRegistry.rerooted(declared, at: owner)
    }

    /// `.unknownKey` for `name`, which `owner` does not declare, in `path`.
    private static func unknown(_ name: some StringProtocol, of owner: Any.Type, in path: String) -> KVOError {
        KVOError(.unknownKey, detail: "`\(path)`: \(_typeName(owner, qualified: false)) has no key `\(name)`")
    }

    private struct CacheKey: Hashable {
        let root: ObjectIdentifier
        let path: String
    }

    private static let resolved = LockedState([CacheKey: NamedKeyPath]())

    /// The paths one thread looked up last: found by comparing the class and
    /// the string (a few instructions for a short name), before hashing the
    /// string for the shared table under its lock.
    final class RecentPaths {
        // Used by its thread only: no dynamic exclusivity check. Three
        // arrays, not one of tuples: a tuple holding an existential is
        // copied through the runtime's generic witnesses.
        @exclusivity(unchecked) private var roots: [ObjectIdentifier] = []
        @exclusivity(unchecked) private var paths: [String] = []
        @exclusivity(unchecked) private var named: [NamedKeyPath] = []
        private var next = 0
        private static let capacity = 8

        func lookup(_ root: ObjectIdentifier, _ path: String) -> NamedKeyPath? {
            for index in roots.indices where roots[index] == root && paths[index] == path {
                return named[index]
            }
            return nil
        }

        func remember(_ root: ObjectIdentifier, _ path: String, _ found: NamedKeyPath) {
            if roots.count < Self.capacity {
                roots.append(root)
                paths.append(path)
                named.append(found)
            } else {
                roots[next] = root
                paths[next] = path
                named[next] = found
                next = (next + 1) % Self.capacity
            }
        }
    }

    private static let recentPaths = ThreadLocal<RecentPaths>()

    /// The key path `path` names on `root`.
    static func path(_ path: String, on root: any KeyValueObservable.Type) throws(KVOError) -> NamedKeyPath {
        let recent = recentPaths.unmanagedValue { RecentPaths() }
        let rootID = ObjectIdentifier(root)
        if let named = recent._withUnsafeGuaranteedRef({ $0.lookup(rootID, path) }) { return named }
        let named = try sharedPath(path, on: root)
        recent._withUnsafeGuaranteedRef { $0.remember(rootID, path, named) }
        return named
    }

    /// The key path `path` names on `root`, from the table every thread shares.
    private static func sharedPath(
        _ path: String, on root: any KeyValueObservable.Type
    ) throws(KVOError) -> NamedKeyPath {
        let cacheKey = CacheKey(root: ObjectIdentifier(root), path: path)
        if let cached = resolved.withLock({ $0[cacheKey] }) { return cached }
        let composed = try compose(path[...], on: root, whole: path)
        let named = NamedKeyPath(
            keyPath: composed, isDependent: Dependencies.isDeclared(composed as! AnyKeyPath, in: root))
        return resolved.withLock { resolved in
            if let existing = resolved[cacheKey] { return existing }
            resolved[cacheKey] = named
            return named
        }
    }
}

extension KeyValueCoding {
    /// The most optional links a name may pass through.
    static let maximumOptionalLinks = 32

    /// The key path the dotted `names` form on `root`: each name's key path
    /// rooted where the previous one leads. Past an optional link the rest
    /// is composed on the wrapped class and read through the link
    /// (OptionalLink.swift), as the literal `\Owner.wallet?.balance` reads it.
    ///
    /// Each optional link nests the rest of the path one level deeper (here
    /// and in the shape reader), so a name has at most
    /// ``maximumOptionalLinks`` of them: a longer one is refused rather than
    /// run out of a thread's stack.
    private static func compose(
        _ names: Substring, on root: any KeyValueObservable.Type, whole path: String, optionalLinks: Int = 0
    ) throws(KVOError) -> any ErasedKeyPath {
        var composed: AnyKeyPath?
        var owner: Any.Type = root
        var rest = names
        while true {
            let name = rest.prefix { $0 != "." }
            rest = rest.dropFirst(name.count)
            guard let link = declaredLink(name, of: owner) else {
                if let optional = owner as? any OptionalValue.Type, optional.wrappedType is any OptionalValue.Type {
                    // As the typed `\.wallet??.balance`: refused, not unknown.
                    throw KVOError(
                        .unsupportedKeyPath,
                        detail: "`\(path)`: the link before `\(name)` is optional more than once; it is read "
                            + "and set through by name, not observed")
                }
                throw unknown(name, of: owner, in: path)
            }
            var next = link
            owner = type(of: link).valueType
            if !rest.isEmpty, let optional = owner as? any OptionalValue.Type,
                let holder = optional.wrappedType as? any KeyValueObservable.Type
            {
                guard optionalLinks < maximumOptionalLinks else {
                    throw KVOError(
                        .unsupportedKeyPath,
                        detail: "`\(path.prefix(80))…`: more than \(maximumOptionalLinks) optional links")
                }
                let tail = try compose(rest.dropFirst(), on: holder, whole: path, optionalLinks: optionalLinks + 1)
                let linked = tail.linkedPastOptional()
                guard let appended = link.appending(path: linked) else {
                    throw KVOError(.unknownKey, detail: "`\(path)`: `\(rest.dropFirst())` does not follow `\(name)`")
                }
                next = appended
                rest = ""
            }
            guard let appended = composed.map({ $0.appending(path: next) }) ?? next else {
                throw KVOError(.unknownKey, detail: "`\(path)`: `\(name)` does not follow")
            }
            composed = appended
            guard !rest.isEmpty else { break }
            rest = rest.dropFirst()  // the dot
        }
        guard let keyPath = composed as? any ErasedKeyPath else {
            throw KVOError(.unknownKey, detail: "`\(path)`")
        }
        return keyPath
    }
}

/// A key path reached by name, its value type opened.
struct NamedKeyPath: @unchecked Sendable {  // key paths are immutable
    let erased: any ErasedKeyPath
    /// Whether its values are optionals, which observations flatten (found
    /// once, not at each registration).
    let isOptional: Bool
    /// Whether it is a declared dependent key, which is never assigned by name.
    let isDependent: Bool

    init(keyPath: any ErasedKeyPath, isDependent: Bool) {
        self.erased = keyPath
        self.isOptional = type(of: keyPath as! AnyKeyPath).valueType is any OptionalValue.Type
        self.isDependent = isDependent
    }

    var keyPath: AnyKeyPath { erased as! AnyKeyPath }

    func read(_ object: AnyObject) -> Any? { erased.read(object) }

    func write(_ value: Any?, keyPath name: String, to object: AnyObject) throws(KVOError) {
        try erased.write(value, name: name, to: object)
    }

    func observe(
        _ object: AnyObject, options: ObservingOptions,
        handler: @escaping @Sendable (AnyObject, ObservedChange<Any>) -> Void
    ) throws(KVOError) -> ObservationToken {
        try erased.observe(object, options: options, flattening: isOptional, handler: handler)
    }

    /// The key path opened for a ``KVOController``.
    var opening: any ControllerKeyPathOpening { erased as! any ControllerKeyPathOpening }
}

/// A key path whose root is observable, used without naming its types.
protocol ErasedKeyPath {
    func read(_ object: AnyObject) -> Any?
    func write(_ value: Any?, name: String, to object: AnyObject) throws(KVOError)
    /// Observes it on `object`; `flattening` when its values are optionals.
    func observe(
        _ object: AnyObject, options: ObservingOptions, flattening: Bool,
        handler: @escaping @Sendable (AnyObject, ObservedChange<Any>) -> Void
    ) throws(KVOError) -> ObservationToken
    /// This key path read past an optional link to its root (see OptionalLink.swift).
    func linkedPastOptional() -> AnyKeyPath
}

extension KeyPath: ErasedKeyPath where Root: KeyValueObservable {
    func read(_ object: AnyObject) -> Any? {
        guard let root = object as? Root else { return nil }
        return flattened(root[keyPath: self])
    }

    func linkedPastOptional() -> AnyKeyPath { OptionalLink.linking(self) }

    func write(_ value: Any?, name: String, to object: AnyObject) throws(KVOError) {
        guard let root = object as? Root else { throw .invalidArgument }
        guard let writable = self as? ReferenceWritableKeyPath<Root, Value> else {
            throw KVOError(.unsupportedKeyPath, detail: "`\(name)` cannot be assigned (a computed key)")
        }
        let typed: Value
        if let value, let cast = value as? Value {
            typed = cast
        } else if value == nil, let optional = Value.self as? any ExpressibleByNilLiteral.Type {
            typed = optional.init(nilLiteral: ()) as! Value
        } else {
            throw KVOError(
                .typeMismatch,
                detail: "`\(name)` holds \(Value.self), not \(value.map { "\(type(of: $0))" } ?? "nil")")
        }
        root[keyPath: writable] = typed
    }

    func observe(
        _ object: AnyObject, options: ObservingOptions, flattening: Bool,
        handler: @escaping @Sendable (AnyObject, ObservedChange<Any>) -> Void
    ) throws(KVOError) -> ObservationToken {
        guard let root = object as? Root else { throw .invalidArgument }
        let resolved = try KeyPathRegistry.resolve(self, on: root)
        guard resolved.kind != .chain else {
            return try root.observe(self, options: options) { root, change in
                handler(root, flattening ? change.flattened() : change.map { $0 as Any })
            }
        }
        let box = NamedObservation(
            Value.self, unmanagedKeyPath: resolved.unmanagedKeyPath, flattening: flattening,
            readsInitialValue: options.contains(.new), handler: handler)
        return try Deliveries.register(root, key: resolved.key, options: options, box: box)
    }
}

/// `value` as `Any?`, as every call by name hands values out: an optional's
/// wrapped value at every level, or `nil`.
func flattened<Value>(_ value: Value) -> Any? {
    guard Value.self is any OptionalValue.Type else { return value }
    var unwrapped: Any? = value
    while let nested = unwrapped, let optional = nested as? any OptionalValue { unwrapped = optional.wrappedValue }
    return unwrapped
}

extension ObservedChange {
    /// This change with its values as `Any`, flattened (``flattened(_:)``).
    func flattened() -> ObservedChange<Any> {
        ObservedChange<Any>(
            kind: kind, oldValue: oldValue.flatMap(SwiftKVO.flattened), newValue: newValue.flatMap(SwiftKVO.flattened),
            indexes: _indexes, isPrior: isPrior, isInitial: isInitial, keyPath: _keyPath)
    }
}
