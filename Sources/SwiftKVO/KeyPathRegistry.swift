//
// KeyPathRegistry.swift — from Swift key paths to engine keys.
//
// A user key path names a property only through the properties it reads.
// Properties themselves are identified by their declaration (see
// PropertyKey.swift). To resolve a user key path we probe
// (KeyPathProbe.swift): read `object[keyPath: userKeyPath]` once while every
// wrapper getter on the way records its property and the key path the
// compiler wrote for it. Then:
//   - a key path with a `!` link: refused before it is evaluated (it would
//     trap whenever the link is nil; `?.` observes the same chain safely);
//   - a key path declared in `dependentKeyPaths` (also through a subclass's
//     root): a dependent key;
//   - one record on the object itself whose key path is the user's: a property;
//   - two or more records starting at the object whose key paths, appended,
//     are the user's: a key-path chain (`\.account.name` reads `_account` on
//     the document, then `_name` on the account);
//   - an optional chain (`\.account?.name`), or a chain through an
//     existential, whose components cannot be rebuilt to compare: its
//     records must at least follow one another from object to object;
//   - anything else, e.g. a computed property that reads wrapped properties:
//     refused (reads alone cannot tell it from what it reads).
// Results are cached per key path, under a lock, on the registration path
// only. Cached key paths and `PropertyKey`s are kept for the life of the
// process, which is what makes `ObservedChange.keyPath` safe to hand out at +0.

@_spi(ObservableRerootKeyPath) import Swift
import Synchronization

/// What one user key path turned out to be.
///
/// A plain value: it refers to the registry's objects without counting
/// references, so resolving and passing it around costs no atomic operation.
/// The registry keeps those objects for the life of the process.
@usableFromInline
struct ResolvedKeyPath: @unchecked Sendable {  // refers to immortal objects
    @usableFromInline
    enum Kind: Sendable {
        /// An `@Observed`/`@ObservedArray` property.
        case property
        /// A key declared in `dependentKeyPaths`.
        case dependent
        /// A chain of properties across objects.
        case chain
    }

    @usableFromInline
    let kind: Kind
    /// The interned user key path (immortal: the registry keeps it).
    @usableFromInline
    unowned(unsafe) let keyPath: AnyKeyPath
    /// The engine key, for `.property` and `.dependent`.
    @usableFromInline
    let key: EngineKey
    /// The property, for `.property` (immortal: the registry keeps it).
    unowned(unsafe) let property: PropertyKey?

    init(kind: Kind, keyPath: AnyKeyPath, key: EngineKey, property: PropertyKey?) {
        self.kind = kind
        self.keyPath = keyPath
        self.key = key
        self.property = property
    }

    /// The key path at +0, for `ObservedChange` (kept alive by the registry).
    @usableFromInline
    var unmanagedKeyPath: Unmanaged<AnyKeyPath> { Unmanaged.passUnretained(keyPath) }
}

/// The process-wide registry of resolved key paths.
@usableFromInline
enum KeyPathRegistry {
    /// Resolved key paths, kept for the life of the process.
    private static let resolvedKeyPaths = LockedState([AnyKeyPath: ResolvedKeyPath]())

    /// Resolves a user key path on `object` (registration path).
    ///
    /// A `.property` or `.dependent` result's key carries values of exactly
    /// `Value`: this is where that is checked, once, for every observation
    /// that later reads the engine's raw value pointers as `Value`.
    ///
    /// - Throws: ``KVOError/forceUnwrappedKeyPath`` for a key path with a `!`
    ///   link (it would trap when the link is nil), checked before the key
    ///   path is evaluated; ``KVOError/dependencyCycle`` for a dependent key
    ///   computed, through other dependent keys, from itself;
    ///   ``KVOError/unsupportedKeyPath`` for anything else SwiftKVO cannot
    ///   observe.
    @usableFromInline
    static func resolve<Root: KeyValueObservable, Value>(
        _ keyPath: KeyPath<Root, Value>, on object: Root
    ) throws(KVOError) -> ResolvedKeyPath {
        // A per-thread cache first: manual will/did calls resolve on every
        // change and must not contend on the registry lock.
        let local = resolvedCache.unmanagedValue { ResolvedCache() }
        if let cached = local._withUnsafeGuaranteedRef({ $0.lookup(keyPath) }) { return cached }
        if let cached = resolvedKeyPaths.withLock({ $0[keyPath] }) {
            local._withUnsafeGuaranteedRef { $0.remember(keyPath, cached) }
            return cached
        }
        guard let resolved = try classify(keyPath, on: object) else {
            // Not cached: an optional chain may resolve once its links exist.
            throw .unsupportedKeyPath
        }
        let interned = resolvedKeyPaths.withLock { resolvedKeyPaths in
            if let existing = resolvedKeyPaths[keyPath] { return existing }
            resolvedKeyPaths[keyPath] = resolved
            return resolved
        }
        local._withUnsafeGuaranteedRef { $0.remember(keyPath, interned) }
        return interned
    }

    /// What `keyPath` is on `object`; `nil` if nothing observable.
    private static func classify<Root: KeyValueObservable, Value>(
        _ keyPath: KeyPath<Root, Value>, on object: Root
    ) throws(KVOError) -> ResolvedKeyPath? {
        if forceUnwraps(keyPath) { throw .forceUnwrappedKeyPath }
        if let dependent = try Dependencies.dependentKey(for: keyPath, on: object) {
            guard dependent.valueType == Value.self else { return nil }
            return ResolvedKeyPath(kind: .dependent, keyPath: keyPath, key: dependent.key, property: nil)
        }
        let records = Probe.run { _ = object[keyPath: keyPath] }
        guard let first = records.first, first.object === object else { return nil }
        if records.count == 1, denotes(records, keyPath) == true {
            guard first.property.valueType == Value.self else { return nil }
            return ResolvedKeyPath(
                kind: .property, keyPath: keyPath, key: first.property.key, property: first.property)
        }
        let leafType = records.last!.property.valueType
        if records.count >= 2,
            denotes(records, keyPath) ?? (isLinked(records) && leafType == Value.self)
        {
            return ResolvedKeyPath(kind: .chain, keyPath: keyPath, key: 0, property: nil)
        }
        if let optional = Value.self as? any OptionalValue.Type, isLinked(records),
            leafType == optional.wrappedType || isOptionalObject(leafType)
        {
            // An optional chain (`\.account?.name`), possibly cut short by a nil link.
            return ResolvedKeyPath(kind: .chain, keyPath: keyPath, key: 0, property: nil)
        }
        return nil
    }

    /// Whether `keyPath` force-unwraps an optional (`\.account!.name`).
    ///
    /// Checked without evaluating the key path, which would trap on a nil
    /// link: the standard library's description of a key path spells each
    /// component, and only a force-unwrap component as `!` (property and
    /// type names cannot contain one; subscript arguments are not printed).
    private static func forceUnwraps(_ keyPath: AnyKeyPath) -> Bool {
        keyPath.debugDescription.contains("!")
    }

    /// Resolved key paths seen by one thread (bounded): by key path identity
    /// first, then by equality. A key path literal is one instance per source
    /// site, so a registration repeated at one site finds its entry without
    /// hashing the key path (which walks all its components).
    final class ResolvedCache {
        /// Used by its thread only: no dynamic exclusivity check.
        @exclusivity(unchecked) private var entries: [AnyKeyPath: ResolvedKeyPath] = [:]
        /// The latest key path instances, direct-mapped by address. Each entry
        /// keeps its key path alive, so no other key path can appear at an
        /// address while it is cached.
        private let recent: UnsafeMutablePointer<(keyPath: AnyKeyPath, resolved: ResolvedKeyPath)?>
        private static let recentCount = 64

        init() {
            recent = .allocate(capacity: Self.recentCount)
            recent.initialize(repeating: nil, count: Self.recentCount)
        }

        deinit {
            recent.deinitialize(count: Self.recentCount)
            recent.deallocate()
        }

        func lookup(_ keyPath: AnyKeyPath) -> ResolvedKeyPath? {
            let entry = recent + Self.index(of: keyPath)
            if let cached = entry.pointee, cached.keyPath === keyPath { return cached.resolved }
            guard let resolved = entries[keyPath] else { return nil }
            entry.pointee = (keyPath, resolved)
            return resolved
        }

        func remember(_ keyPath: AnyKeyPath, _ resolved: ResolvedKeyPath) {
            if entries.count >= 256 { entries.removeAll(keepingCapacity: true) }
            entries[keyPath] = resolved
            recent[Self.index(of: keyPath)] = (keyPath, resolved)
        }

        private static func index(of keyPath: AnyKeyPath) -> Int {
            let address = UInt(bitPattern: ObjectIdentifier(keyPath))
            return Int(truncatingIfNeeded: (address >> 4) ^ (address >> 10)) & (recentCount - 1)
        }
    }

    private static let resolvedCache = ThreadLocal<ResolvedCache>()

    /// Whether `keyPath` is exactly the recorded properties read one after
    /// the other: the key path the compiler wrote for each wrapped property,
    /// rerooted at the type the previous link leads to (at `keyPath`'s root
    /// for the first), appended, and compared with `==`, which compares the
    /// components (each property's accessor identity), not the values read.
    ///
    /// The probe alone cannot tell a property from a computed property that
    /// reads it (`firstName` from `firstName.uppercased()`), nor a chain from
    /// a computation that reads several properties (`firstName + lastName`):
    /// each reads the same wrappers. This comparison can: it holds only when
    /// evaluating `keyPath` *is* evaluating those properties. Rerooting
    /// (the standard library's `_rerootKeyPath`, made for the Observation
    /// module's subclass key paths) lets `\SavingsAccount.name` match the
    /// `\BaseAccount.name` its wrapper reports.
    ///
    /// `nil` when that cannot be told: a link whose root is not the class the
    /// previous link's type names (an existential, or an optional unwrapped
    /// with `!`), whose key path components cannot be rebuilt to compare.
    ///
    /// The links are appended from the leaf up (`a.appending(b.appending(c))`):
    /// `a.appending(b).appending(c)` does not compare equal to the literal
    /// `\A.b.c` (`==` also compares the reference-prefix marks, which that
    /// order sets differently).
    private static func denotes(_ records: [ProbeRecord], _ keyPath: AnyKeyPath) -> Bool? {
        var links: [AnyKeyPath] = []
        var root = type(of: keyPath).rootType
        for record in records {
            guard let link = rerooted(record.keyPath, at: root) else { return nil }
            links.append(link)
            root = type(of: link).valueType
        }
        var path = links.removeLast()
        for link in links.reversed() {
            guard let appended = link.appending(path: path) else { return false }
            path = appended
        }
        return path == keyPath
    }

    /// `keyPath` with its root class replaced by `root`, the same class or a
    /// subclass (the same components, so the same accessors); `nil` if
    /// `root` is anything else.
    static func rerooted(_ keyPath: AnyKeyPath, at root: Any.Type) -> AnyKeyPath? {
        let declaredRoot = type(of: keyPath).rootType
        if declaredRoot == root { return keyPath }
        guard declaredRoot is AnyClass else { return nil }
        func reroot<Ancestor, Root>(_: Ancestor.Type, _: Root.Type) -> AnyKeyPath? {
            Root.self is Ancestor.Type ? _rerootKeyPath(keyPath, to: Root.self) : nil
        }
        return reroot(declaredRoot, root)
    }

    /// Whether each recorded property after the first was read on the object
    /// the previous one holds: what an optional chain (`\.account?.name`),
    /// whose optional link cannot be rebuilt for ``denotes(_:_:)``, must at
    /// least satisfy. A computation that reads two properties of one object
    /// does not.
    private static func isLinked(_ records: [ProbeRecord]) -> Bool {
        zip(records, records.dropFirst()).allSatisfy { link, next in
            ((link.object as Any)[keyPath: link.keyPath] as? AnyObject) === next.object
        }
    }

    /// Whether `type` is `Optional<some class>` (a link that may cut a chain short).
    private static func isOptionalObject(_ type: Any.Type) -> Bool {
        guard let optional = type as? any OptionalValue.Type else { return false }
        return optional.wrappedType is AnyObject.Type
    }

    /// The properties read when evaluating `keyPath` on `object`, in order.
    static func links<Root: AnyObject>(of keyPath: AnyKeyPath, on object: Root) -> [ProbeRecord] {
        Probe.run { _ = object[keyPath: keyPath] }
    }
}
