// From key paths to engine keys. A key path is observable when it is a property listed in its
// class's table (inherited too), a declared dependent key, or a chain of those: a class without a
// table has nothing observable. The shape and the tables decide, before any getter runs
// (Runtime/KeyPathShape.swift, Runtime/ObservableDeclarations.swift, ObservableComponents.swift);
// then only listed wrappers are read, under the probe, for their engine keys, and the key path
// must equal (`==`, after rerooting) the key paths they report. A property whose
// getter the object's class overrides is observed as a one-link chain, so a callback always
// receives what the key path reads. The steps, as users see them: ObservingProperties.md.
// Results are cached for the life of the process, which is what makes `ObservedChange.keyPath`
// safe to hand out at +0.

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
    /// The engine key, for `.property` and `.dependent`; for a `.chain` that
    /// reads one property through an override of its accessors, that
    /// property's key (its changes are announced there); 0 for other chains.
    @usableFromInline
    let key: EngineKey
    /// The property, for `.property` (immortal: the registry keeps it).
    unowned(unsafe) let property: PropertyKey?
    /// The class that declares the property, for `.property`: held here so
    /// that checking it costs no reference count on `property`.
    let declaringClass: AnyClass?
    /// The property's key path identity, for `.property`: which getter an
    /// object's class may override.
    let propertyID: KeyPathComponentID?
    /// For a `.chain` without a key: the number of what it reads, shared by
    /// every spelling of it (see ``KeyPathRegistry/chainNumber(of:)``); 0
    /// otherwise.
    let chainNumber: UInt

    init(kind: Kind, keyPath: AnyKeyPath, key: EngineKey, property: PropertyKey?, chainNumber: UInt = 0) {
        self.kind = kind
        self.keyPath = keyPath
        self.key = key
        self.chainNumber = chainNumber
        self.property = property
        self.declaringClass = property?.declaringClass
        self.propertyID = property == nil ? nil : KeyPathShape.singleLink(of: keyPath)?.id
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
        if let cached = local._withUnsafeGuaranteedRef({ $0.lookup(keyPath) }) {
            return readsOverride(cached, on: object)
        }
        if let cached = resolvedKeyPaths.withLock({ $0[keyPath] }) {
            local._withUnsafeGuaranteedRef { $0.remember(keyPath, cached) }
            return readsOverride(cached, on: object)
        }
        let resolved = try classify(keyPath, on: object)
        let interned = resolvedKeyPaths.withLock { resolvedKeyPaths in
            if let existing = resolvedKeyPaths[keyPath] { return existing }
            resolvedKeyPaths[keyPath] = resolved
            return resolved
        }
        local._withUnsafeGuaranteedRef { $0.remember(keyPath, interned) }
        return readsOverride(interned, on: object)
    }

    /// `resolved` as observed on `object`: a property whose accessors the
    /// object's class overrides (`\Base.name` on an object of a subclass
    /// with `override var name { get … }`) reads the override, not the
    /// stored value its setter announces, so it is observed as a one-link
    /// chain whose values are read through the key path. One comparison
    /// for an object of the declaring class itself.
    @inline(__always)
    private static func readsOverride<Root: KeyValueObservable>(
        _ resolved: ResolvedKeyPath, on object: Root
    ) -> ResolvedKeyPath {
        guard resolved.kind == .property, let declaring = resolved.declaringClass,
            ObjectIdentifier(type(of: object)) != ObjectIdentifier(declaring)
        else { return resolved }
        if let property = resolved.propertyID {
            guard AccessorOverrides.overridesGetter(of: property, declaredBy: declaring, in: type(of: object))
            else { return resolved }
        } else {
            // No identity: decided without the layout, which alone tells an
            // override; read through the key path (slower, never a wrong value).
            guard !RuntimeLayout.isTrusted else { return resolved }
        }
        return ResolvedKeyPath(kind: .chain, keyPath: resolved.keyPath, key: resolved.key, property: nil)
    }

    /// What `keyPath` is on `object`.
    private static func classify<Root: KeyValueObservable, Value>(
        _ keyPath: KeyPath<Root, Value>, on object: Root
    ) throws(KVOError) -> ResolvedKeyPath {
        let shape = KeyPathShape(of: keyPath)
        if shape.isForceUnwrapped { throw .forceUnwrappedKeyPath }
        guard DeclaredChains.hasTable(Root.self) else { throw refusal(keyPath, noTable(Root.self)) }
        if let dependent = try Dependencies.dependentKey(for: keyPath, on: object) {
            guard dependent.valueType == Value.self else { throw refusal(keyPath, "its value type") }
            let resolved = ResolvedKeyPath(
                kind: .dependent, keyPath: keyPath, key: dependent.key, property: nil)
            return resolved
        }
        if case .unknown = shape { return try classifyDeclared(keyPath, on: object) }
        let links = try declaredLinks(of: keyPath, shape: shape)
        let records = Probe.run { _ = object[keyPath: keyPath] }
        guard let first = records.first, first.object === object else {
            throw refusal(keyPath, "it reads no observable property of the object")
        }
        var chain: ResolvedKeyPath {
            ResolvedKeyPath(kind: .chain, keyPath: keyPath, key: 0, property: nil, chainNumber: chainNumber(of: links))
        }
        if links.count == 1 {
            guard records.count == 1, first.property.valueType == Value.self else {
                throw refusal(keyPath, "a computed property, not an observable one")
            }
            if denotes(records, keyPath) == true {
                let resolved = ResolvedKeyPath(
                    kind: .property, keyPath: keyPath, key: first.property.key,
                    property: first.property)
                return resolved
            }
            // The subclass's own declaration of an inherited property: an
            // override. Its values are read through it, as a one-link chain.
            guard let declaring = first.property.declaringClass, Root.self != declaring,
                isSubclass(Root.self, of: ObjectIdentifier(declaring)),
                isOverride(links[0].id, of: first, declaredBy: declaring, in: Root.self)
            else { throw refusal(keyPath, "a computed property, not an observable one") }
            let override = ResolvedKeyPath(
                kind: .chain, keyPath: keyPath, key: first.property.key, property: nil)
            return override
        }
        switch chainMatch(records, links, keyPath: keyPath) {
        case .exact, .cutShort:
            return chain
        case .mismatch(let index):
            throw refusal(
                keyPath,
                "link \(index + 1) (\(links[index].valueTypeName)) is a computed property, "
                    + "not an observable one")
        }
    }

    /// What `keyPath` is, decided from its root's table and public key path
    /// API alone: the layout did not pass the self-check. It is evaluated
    /// only once it equals table entries appended (DeclaredChains.swift).
    private static func classifyDeclared<Root: KeyValueObservable, Value>(
        _ keyPath: KeyPath<Root, Value>, on object: Root
    ) throws(KVOError) -> ResolvedKeyPath {
        guard let match = DeclaredChains.match(keyPath), DeclaredChains.isStored(match, from: object)
        else { throw limitRefusal(keyPath) }
        let records = Probe.run { _ = object[keyPath: keyPath] }
        guard records.count == match.linkCount, records.first?.object === object,
            denotes(records, keyPath) == true
        else { throw limitRefusal(keyPath) }
        // Their declared names, which the unread declarations did not give them.
        for (record, link) in zip(records, match.links) {
            EngineKeyDescriptions.file(record.property.key, name: link.name)
        }
        guard match.linkCount == 1 else {
            return ResolvedKeyPath(
                kind: .chain, keyPath: keyPath, key: 0, property: nil,
                chainNumber: DeclaredChains.chainNumber(of: match))
        }
        guard records[0].property.valueType == Value.self else { throw refusal(keyPath, "its value type") }
        return ResolvedKeyPath(kind: .property, keyPath: keyPath, key: records[0].property.key, property: records[0].property)
    }

    /// A refusal of what only a layout read could decide, naming that limit
    /// and what stays observable.
    static func limitRefusal(_ keyPath: AnyKeyPath) -> KVOError {
        let root = type(of: keyPath).rootType
        let what =
            DeclaredChains.hasTable(root)
            ? "only key paths equal to entries of \(_typeName(root, qualified: false)).observableKeyPaths, "
                + "or chains of them without ?, can be decided"
            : noTable(root)
        return KVOError(.unsupportedKeyPath, detail: "\(spelling(of: keyPath)): \(RuntimeLayout.limit): \(what)")
    }

    /// Why nothing of `type`, a class without a table of observable key
    /// paths, is observable, and the fix.
    static func noTable(_ type: Any.Type) -> String {
        "\(_typeName(type, qualified: false)) declares no observable key paths: add @KeyValueObservable, "
            + "or list its observable properties in observableKeyPaths"
    }

    /// Whether the component `link` of a key path rooted at `subclass` is
    /// the override of the getter of the property `record` read: the
    /// subclass's implementation in that property's vtable slot is what the
    /// component names. Where the slot cannot be told, any override of the
    /// declaring class's accessors counts (conservative: read through the
    /// key path, its values are right).
    private static func isOverride(
        _ link: KeyPathComponentID, of record: ProbeRecord, declaredBy declaring: AnyClass,
        in subclass: AnyClass
    ) -> Bool {
        guard let property = KeyPathShape.singleLink(of: record.keyPath)?.id else { return false }
        switch AccessorOverrides.getter(of: property, declaredBy: declaring, in: subclass) {
        case .none: return false
        case .overridden(let identity): return link == KeyPathComponentID(value: identity, kind: 0)
        case .unknown: return AccessorOverrides.exist(in: subclass, of: declaring)
        }
    }

    /// The links of `keyPath`, each checked against the declarations of the
    /// class the previous link leads to, before anything is evaluated.
    private static func declaredLinks(
        of keyPath: AnyKeyPath, shape: KeyPathShape
    ) throws(KVOError) -> [KeyPathLink] {
        let links: [KeyPathLink]
        switch shape {
        case .links(let found): links = found
        case .forceUnwrapped: throw .forceUnwrappedKeyPath
        case .notObservable(let part, _):
            throw refusal(keyPath, "it holds \(part), not only observable properties")
        case .unknown: throw limitRefusal(keyPath)
        }
        var owner: Any.Type = type(of: keyPath).rootType
        for (index, link) in links.enumerated() {
            let ownerName = _typeName(owner, qualified: false)
            guard DeclaredChains.hasTable(owner) else {
                throw refusal(keyPath, "link \(index + 1): " + noTable(owner))
            }
            guard ObservableDeclarations.declares(owner, valueType: link.valueType),
                ObservableComponents.isProperty(link.id, of: owner)
            else {
                // Written in generic code through a protocol requirement (`\Self.name` in a
                // protocol extension), the component is the requirement: which property
                // implements it only its witness, run, could tell.
                let hint =
                    link.isFormedInGenericCode
                    ? "; formed in generic code, it may name a protocol requirement, whose implementation only running "
                        + "it could tell: observe \(ownerName)'s own key path, or the property by name (observe(keyPath:))"
                    : ""
                throw refusal(
                    keyPath,
                    "link \(index + 1) (\(link.valueTypeName)) is not an observable property of \(ownerName)" + hint)
            }
            guard index < links.count - 1 else { break }
            var next = link.valueType
            if link.isOptionalChained, let optional = next as? any OptionalValue.Type {
                next = optional.wrappedType
            }
            guard next is any KeyValueObservable.Type else {
                throw refusal(
                    keyPath,
                    "link \(index + 1) leads to \(_typeName(next, qualified: false)), "
                        + "not a KeyValueObservable class")
            }
            owner = next
        }
        return links
    }

    /// The observable property of `object` that `keyPath` is, if it is one
    /// (not a chain, a computed property or a dependent key): what a
    /// dependent key's source must be. Evaluates `keyPath` only once its
    /// shape and declarations say it can be nothing but such a property.
    static func property(_ keyPath: AnyKeyPath, of object: AnyObject) -> PropertyKey? {
        let shape = KeyPathShape(of: keyPath)
        if case .unknown = shape {
            guard let match = DeclaredChains.match(keyPath), match.linkCount == 1,
                DeclaredChains.isStored(match, from: object)
            else { return nil }
            let records = Probe.run { _ = (object as Any)[keyPath: keyPath] }
            guard records.count == 1, records[0].object === object, denotes(records, keyPath) == true
            else { return nil }
            return records[0].property
        }
        guard case .links(let links) = shape, links.count == 1,
            (try? declaredLinks(of: keyPath, shape: shape)) != nil
        else { return nil }
        let records = Probe.run { _ = (object as Any)[keyPath: keyPath] }
        guard records.count == 1, records[0].object === object, denotes(records, keyPath) == true
        else { return nil }
        return records[0].property
    }

    /// `.unsupportedKeyPath`, naming the key path and what is wrong with it.
    static func refusal(_ keyPath: AnyKeyPath, _ reason: String) -> KVOError {
        KVOError(.unsupportedKeyPath, detail: "\(spelling(of: keyPath)): \(reason)")
    }

    /// What a chain reads: its components' identities, where each is
    /// optional-chained, and its value type.
    private struct ChainReading: Hashable {
        let ids: [KeyPathComponentID]
        let optionalChained: [Bool]
        let valueType: ObjectIdentifier
    }

    /// Chains by what they read, numbered from 1.
    private static let chainNumbers = LockedState([ChainReading: UInt]())

    /// The number of the chain whose components are `links`: the same for
    /// every key path that reads the same properties the same way, whatever
    /// its root (`\Derived.account.name`, `\Base.account.name`) or how it
    /// was made (a literal, `appending`, a name).
    static func chainNumber(of links: [KeyPathLink]) -> UInt {
        let reading = ChainReading(
            ids: links.map(\.id), optionalChained: links.map(\.isOptionalChained),
            valueType: ObjectIdentifier(links.last?.valueType ?? Void.self))
        return chainNumbers.withLock { numbers in
            if let number = numbers[reading] { return number }
            let number = UInt(numbers.count + 1)
            numbers[reading] = number
            return number
        }
    }

    /// Whether `type` is the class `ancestor` or one of its subclasses.
    static func isSubclass(_ type: Any.Type, of ancestor: ObjectIdentifier) -> Bool {
        var current: AnyClass? = type as? AnyClass
        while let candidate = current {
            if ObjectIdentifier(candidate) == ancestor { return true }
            current = _getSuperclass(candidate)
        }
        return false
    }

    /// How the records of a chain's reading compare with its links.
    enum ChainMatch {
        /// Every link is the property recorded for it.
        case exact
        /// The records match every link up to a nil optional link, and the
        /// tables say each link past it is an observable property.
        case cutShort
        /// Link `index` is not the property read there.
        case mismatch(index: Int)
    }

    /// Whether the properties recorded while reading a chain are its links.
    ///
    /// A chain without `?` is compared whole with ``denotes(_:_:)`` (`==`
    /// after rerooting, so a subclass-typed link names its base property).
    /// An optional chain cannot be rebuilt by appending: it is compared link
    /// by link, by component identity, and a nil link may cut the reading short.
    static func chainMatch(
        _ records: [ProbeRecord], _ links: [KeyPathLink], keyPath: AnyKeyPath
    ) -> ChainMatch {
        guard links.contains(where: \.isOptionalChained) else {
            guard records.count == links.count else {
                return .mismatch(index: min(records.count, links.count - 1))
            }
            return denotes(records, keyPath) == true ? .exact : .mismatch(index: links.count - 1)
        }
        guard records.count <= links.count else { return .mismatch(index: links.count - 1) }
        for (index, record) in records.enumerated()
        where KeyPathShape.singleLink(of: record.keyPath)?.id != links[index].id {
            return .mismatch(index: index)
        }
        guard isLinked(records) else { return .mismatch(index: records.count - 1) }
        guard records.count < links.count else { return .exact }
        let cut = records[records.count - 1]
        guard links[records.count - 1].isOptionalChained,
            let cutValue = (cut.object as Any)[keyPath: cut.keyPath],
            Mirror(reflecting: cutValue).displayStyle == .optional,
            Mirror(reflecting: cutValue).children.isEmpty  // nil
        else { return .mismatch(index: records.count) }
        // Past the nil link there is no object to read: each link is decided
        // by the table of the class the link before it leads to.
        var owner: Any.Type = records[records.count - 1].property.valueType
        for index in records.count..<links.count {
            if let optional = owner as? any OptionalValue.Type { owner = optional.wrappedType }
            guard ObservableComponents.isProperty(links[index].id, of: owner) else { return .mismatch(index: index) }
            owner = links[index].valueType
        }
        return .cutShort
    }

    /// `keyPath` spelled with the names of its properties (`\Folder.account?.name`)
    /// where they are known, and each other component by its value type
    /// (`\Doc.pages.<String>`): for descriptions and refusals.
    /// Never an address: a component that is not named is spelled by what
    /// it is (`\Sheet.pair.<a stored property or tuple element …>`), and a
    /// key path that cannot be read by its value type (`\Sheet.<… (Int)>`).
    static func spelling(of keyPath: AnyKeyPath) -> String {
        let root = "\\" + _typeName(type(of: keyPath).rootType, qualified: false)
        func spelled(_ links: [KeyPathLink]) -> String {
            var owner: Any.Type = type(of: keyPath).rootType
            var text = root
            for link in links {
                text += "." + (ObservableComponents.name(of: link.id, in: owner) ?? "<\(link.valueTypeName)>")
                text += link.isOptionalChained ? "?" : ""
                owner = link.valueType
                if link.isOptionalChained, let optional = owner as? any OptionalValue.Type { owner = optional.wrappedType }
            }
            return text
        }
        switch KeyPathShape(of: keyPath) {
        case .links(let links): return spelled(links)
        case .notObservable(let part, let links): return spelled(links) + ".<\(part)>"
        case .forceUnwrapped, .unknown:
            if let match = DeclaredChains.match(keyPath) { return match.links.reduce(root) { $0 + "." + $1.name } }
            return root + ".<… (\(_typeName(type(of: keyPath).valueType, qualified: false)))>"
        }
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

    /// The properties read when evaluating `keyPath` on `object`, in order.
    static func links<Root: AnyObject>(of keyPath: AnyKeyPath, on object: Root) -> [ProbeRecord] {
        Probe.run { _ = object[keyPath: keyPath] }
    }
}
