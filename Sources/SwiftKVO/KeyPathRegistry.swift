//
// KeyPathRegistry.swift — from Swift key paths to engine keys.
//
// On Linux key paths carry no printable names, and `\Derived.name` is not
// equal to `\Base.name`. A property's canonical identity is therefore taken
// from its declaration: every `@Observed`/`@ObservedArray` wrapper records
// the source location of its declaration (`#fileID`, `#line`, `#column` as
// default arguments of its initializer, which Swift evaluates at the
// property's declaration) together with its declaring class (the
// `_enclosingInstance` subscript's root type). That identity is read with a
// plain field load, so the always-inlined accessors never materialize a key
// path object: they fold into direct field accesses.
//
// To resolve a user key path we probe: switch on this thread's recorder, read
// `object[keyPath: userKeyPath]` once, and let every wrapper getter on the way
// record its property and the key path the compiler wrote for it.
//   - a key path declared in `dependentKeyPaths` (also through a subclass's
//     root): a dependent key;
//   - one record on the object itself whose key path is the user's: a property;
//   - two or more records starting at the object whose key paths, appended,
//     are the user's: a key-path chain (`\.account.name` reads `_account` on
//     the document, then `_name` on the account);
//   - an optional chain (`\.account?.name`), or a chain through an
//     existential or a `!` link, whose components cannot be rebuilt to
//     compare: its records must at least follow one another from object to
//     object;
//   - anything else, e.g. a computed property that reads wrapped properties:
//     unsupported (reads alone cannot tell it from what it reads).
// Results are cached per key path, under a lock, on the registration path
// only. Cached key paths and `PropertyKey`s are kept for the life of the
// process, which is what makes `ObservedChange.keyPath` safe to hand out at +0.

@_spi(ObservableRerootKeyPath) import Swift
import Synchronization

/// Where a wrapped property is declared (filled by the wrapper's initializer
/// from its `#fileID`/`#line`/`#column` default arguments).
@usableFromInline
struct PropertySite: @unchecked Sendable {  // points at a static string
    @usableFromInline let file: UnsafeRawPointer
    @usableFromInline let line: UInt32
    @usableFromInline let fileLength: UInt16
    @usableFromInline let column: UInt16

    @inlinable
    init(file: StaticString, line: UInt, column: UInt) {
        if file.hasPointerRepresentation {
            self.file = UnsafeRawPointer(file.utf8Start)
            self.fileLength = UInt16(clamping: file.utf8CodeUnitCount)
        } else {
            self.file = UnsafeRawPointer(StaticString("?").utf8Start)
            self.fileLength = 1
        }
        self.line = UInt32(truncatingIfNeeded: line)
        self.column = UInt16(clamping: column)
    }

    /// "File.swift:12:6".
    var name: String {
        let file = String(
            decoding: UnsafeRawBufferPointer(start: file, count: Int(fileLength)), as: UTF8.self)
        return "\(file):\(line):\(column)"
    }
}

/// The canonical identity of one `@Observed` / `@ObservedArray` property:
/// interned once per declaring class and declaration, never freed. A resolved
/// wrapper's state points at it (see ``SetterState``).
@usableFromInline
final class PropertyKey: @unchecked Sendable {
    /// The engine key.
    @usableFromInline
    let key: EngineKey
    /// The key's probe: the setters' inline no-observer check.
    @usableFromInline
    let probe: EngineProbe
    /// The wrapped value's type.
    let valueType: Any.Type
    /// For `@ObservedArray` properties: raw access to the array storage,
    /// attached the first time a writer (setter or mutator) learns the
    /// storage offset. Guarded by the registry lock.
    var _arrayAccess: AnyObject?

    init(key: EngineKey, valueType: Any.Type) {
        self.key = key
        self.probe = Engine.probe(of: key)
        self.valueType = valueType
    }

    var arrayAccess: AnyObject? { KeyPathRegistry.arrayAccess(of: self) }
}

/// What one user key path turned out to be.
///
/// A plain value: it refers to the registry's objects without counting
/// references, so resolving and passing it around costs no atomic operation.
/// The registry keeps those objects for the life of the process, except the
/// key path of an ``Kind/unsupported`` result, which is the caller's own and
/// lives only as long as the caller holds it.
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
        /// Nothing SwiftKVO can observe.
        case unsupported
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

/// One property read recorded while probing.
struct ProbeRecord {
    let object: AnyObject
    let property: PropertyKey
    /// The property's own key path, rooted at its declaring class
    /// (`\BaseAccount.name`): the compiler hands it to the wrapper's accessor.
    let keyPath: AnyKeyPath
}

/// The per-thread recorder behind key-path probing.
@usableFromInline
enum Probe {
    /// How many threads are probing right now; getters only look at their
    /// thread's recorder when this is non-zero (one relaxed load otherwise).
    @usableFromInline
    static let activeCount = Atomic<Int>(0)

    final class Recorder {
        var records: [ProbeRecord] = []
        var depth = 0
        var wantsStorage = false
    }

    static let recorder = ThreadLocal<Recorder>()

    @inlinable @inline(__always)
    static var isActive: Bool { activeCount.load(ordering: .relaxed) != 0 }

    /// What this thread's probe wants from a getter: 0 nothing (not probing),
    /// 1 the property, 2 the property and its storage offset (only a writer —
    /// the array mutator — asks for 2: computing the offset takes a modifying
    /// access).
    @usableFromInline
    static var currentMode: Int {
        guard let recorder = recorder.currentValue, recorder.depth > 0 else { return 0 }
        return recorder.wantsStorage ? 2 : 1
    }

    /// Called by a wrapper's getter when `currentMode != 0`. `keyPath`
    /// returns the wrapped property's key path: a closure, so that the
    /// getter's fast path never instantiates the key path (the optimizer
    /// propagates the literal into the closure, which only this probe calls).
    @usableFromInline
    static func record<Object: AnyObject>(
        _ object: Object, site: PropertySite, state: UInt64, valueType: Any.Type,
        offset: Int, keyPath: () -> AnyKeyPath, arrayAccess: ((Int) -> AnyObject)? = nil
    ) {
        guard let recorder = recorder.currentValue, recorder.depth > 0 else { return }
        let property = KeyPathRegistry.property(
            declaring: Object.self, site: site, state: state, valueType: valueType)
        if offset >= 0, let arrayAccess {
            KeyPathRegistry.attachArrayAccess(to: property) { arrayAccess(offset) }
        }
        recorder.records.append(ProbeRecord(object: object, property: property, keyPath: keyPath()))
    }

    /// Runs `body` with this thread recording property reads; returns the records.
    static func run(wantsStorage: Bool = false, _ body: () -> Void) -> [ProbeRecord] {
        let recorder = recorder.value { Recorder() }
        let saved = recorder.records
        let savedWantsStorage = recorder.wantsStorage
        recorder.records = []
        recorder.wantsStorage = wantsStorage
        defer { recorder.wantsStorage = savedWantsStorage }
        recorder.depth += 1
        activeCount.add(1, ordering: .relaxed)
        body()
        activeCount.subtract(1, ordering: .relaxed)
        recorder.depth -= 1
        let records = recorder.records
        recorder.records = saved
        return records
    }
}

/// The process-wide registry of properties and resolved key paths.
@usableFromInline
enum KeyPathRegistry {
    private struct PropertyID: Hashable {
        let declaringType: ObjectIdentifier
        let file: String
        let line: UInt32
        let column: UInt16
    }

    private struct State {
        var properties: [PropertyID: PropertyKey] = [:]
        var resolved: [AnyKeyPath: ResolvedKeyPath] = [:]
    }

    private static let state = LockedState(State())

    /// The interned identity of a wrapped property. `wrapperState` short-cuts
    /// the lookup when the setter of that object already resolved its key.
    static func property(
        declaring: AnyObject.Type, site: PropertySite, state wrapperState: UInt64 = 0,
        valueType: Any.Type
    ) -> PropertyKey {
        if wrapperState & SetterState.resolved != 0 {
            return SetterState.property(wrapperState).takeUnretainedValue()
        }
        let siteName = site.name
        let id = PropertyID(
            declaringType: ObjectIdentifier(declaring), file: siteName, line: site.line,
            column: site.column)
        return state.withLock { state in
            if let existing = state.properties[id] { return existing }
            let name = "swift:\(String(reflecting: declaring))@\(siteName)"
            let key = Engine.intern(name)
            precondition(key != 0, "SwiftKVO: could not intern key \(name)")
            let property = PropertyKey(key: key, valueType: valueType)
            state.properties[id] = property
            return property
        }
    }

    /// Attaches raw array-storage access to `property` if it has none.
    static func attachArrayAccess(to property: PropertyKey, _ make: () -> AnyObject) {
        if arrayAccess(of: property) != nil { return }
        let access = make()
        state.withLock { _ in
            if property._arrayAccess == nil { property._arrayAccess = access }
        }
    }

    static func arrayAccess(of property: PropertyKey) -> AnyObject? {
        state.withLock { _ in property._arrayAccess }
    }

    /// The property a wrapper's setter announces on, and the setter flags.
    /// The slow path of the first set of a property of one object.
    @usableFromInline
    static func setterState<Object: KeyValueObservable>(
        _ object: Object, site: PropertySite, valueType: Any.Type
    ) -> UInt64 {
        let property = property(declaring: Object.self, site: site, valueType: valueType)
        var state = SetterState.resolvedState(of: property)
        if Dependencies.hasDependents(of: property.key, on: object) {
            state |= SetterState.hasDependents
        }
        return state
    }

    /// Resolves a user key path on `object` (registration path).
    @usableFromInline
    static func resolve<Root: KeyValueObservable, Value>(
        _ keyPath: KeyPath<Root, Value>, on object: Root
    ) -> ResolvedKeyPath {
        // A per-thread cache first: manual will/did calls resolve on every
        // change and must not contend on the registry lock.
        let local = resolvedCache.unmanagedValue { ResolvedCache() }
        if let cached = local._withUnsafeGuaranteedRef({ $0.lookup(keyPath) }) { return cached }
        if let cached = state.withLock({ $0.resolved[keyPath] }) {
            local._withUnsafeGuaranteedRef { $0.remember(keyPath, cached) }
            return cached
        }
        let resolved: ResolvedKeyPath
        if let dependent = Dependencies.dependentKey(for: keyPath, on: object) {
            resolved = ResolvedKeyPath(
                kind: .dependent, keyPath: keyPath, key: dependent.key, property: nil)
        } else {
            let records = Probe.run { _ = object[keyPath: keyPath] }
            if records.count == 1, records[0].object === object, denotes(records, keyPath) == true {
                resolved = ResolvedKeyPath(
                    kind: .property, keyPath: keyPath, key: records[0].property.key,
                    property: records[0].property)
            } else if records.count >= 2, records[0].object === object,
                denotes(records, keyPath)
                    ?? (isLinked(records) && records.last!.property.valueType == Value.self)
            {
                resolved = ResolvedKeyPath(kind: .chain, keyPath: keyPath, key: 0, property: nil)
            } else if let optional = Value.self as? any OptionalValue.Type, !records.isEmpty,
                records[0].object === object, isLinked(records),
                records.last!.property.valueType == optional.wrappedType
                    || isOptionalObject(records.last!.property.valueType)
            {
                // An optional chain (`\.account?.name`), possibly cut short by a nil link.
                resolved = ResolvedKeyPath(kind: .chain, keyPath: keyPath, key: 0, property: nil)
            } else {
                // Not cached: an optional chain may resolve once its links exist.
                return ResolvedKeyPath(kind: .unsupported, keyPath: keyPath, key: 0, property: nil)
            }
        }
        let interned = state.withLock { state in
            if let existing = state.resolved[keyPath] { return existing }
            state.resolved[keyPath] = resolved
            return resolved
        }
        local._withUnsafeGuaranteedRef { $0.remember(keyPath, interned) }
        return interned
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

/// An `@Observed` / `@ObservedArray` wrapper's cached setter state, one word:
/// flag bits, and once resolved the address of the property's immortal
/// ``PropertyKey`` in the other bits. The setter's fast path reads the word,
/// the property's probe through it and the probe's counter: three loads, no
/// call, no reference counting.
@usableFromInline
enum SetterState {
    /// The property was resolved: the other bits are its `PropertyKey`.
    @usableFromInline static let resolved: UInt64 = 1 << 0
    /// Automatic notification is off for this property.
    @usableFromInline static let manual: UInt64 = 1 << 1
    /// Some dependent key is computed from this property.
    @usableFromInline static let hasDependents: UInt64 = 1 << 2
    /// The flag bits: below a heap object's alignment (at least a pointer's).
    @usableFromInline static let flags: UInt64 = 0x7

    /// The resolved state of `property`, without further flags.
    static func resolvedState(of property: PropertyKey) -> UInt64 {
        let address = UInt64(UInt(bitPattern: Unmanaged.passUnretained(property).toOpaque()))
        precondition(address & flags == 0, "SwiftKVO: misaligned PropertyKey")
        return address | resolved
    }

    /// The property of a resolved state (the registry keeps it alive forever).
    @inlinable @inline(__always)
    static func property(_ state: UInt64) -> Unmanaged<PropertyKey> {
        Unmanaged.fromOpaque(
            UnsafeRawPointer(bitPattern: UInt(truncatingIfNeeded: state & ~flags)).unsafelyUnwrapped)
    }

    /// The engine key of a resolved state.
    @inlinable @inline(__always)
    static func key(_ state: UInt64) -> EngineKey {
        property(state)._withUnsafeGuaranteedRef { $0.key }
    }

    /// The key's probe of a resolved state.
    @inlinable @inline(__always)
    static func probe(_ state: UInt64) -> EngineProbe {
        property(state)._withUnsafeGuaranteedRef { $0.probe }
    }
}
