// Deciding a key path with declarations and public key path API alone, for a process whose layout
// readers did not pass their self-check (Runtime/LayoutSelfCheck.swift). A key path is then a
// property or a chain only when it equals (`==`) an entry of its root class's table of observable
// key paths, rerooted there, or entries appended one after the other (`appending(path:)`, from the
// leaf up, as the literal compares). Nothing is evaluated before that equality holds. An optional
// link cannot be appended, so optional chains are refused here.

enum DeclaredChains {
    /// Chains of at most this many links are found.
    static let maximumLinks = 4

    /// A key path made of table entries.
    struct Match {
        /// How many entries it appends.
        var linkCount: Int { links.count }
        /// Each entry's name and key path, rooted where the link before it leads.
        let links: [(name: String, keyPath: AnyKeyPath)]
        /// The same entries appended with each rooted where declared: one
        /// value for every root it is spelled from.
        let canonical: AnyKeyPath
    }

    private static let cache = LockedState([ObjectIdentifier: [AnyKeyPath: Match]]())
    private static let chainNumbers = LockedState([AnyKeyPath: UInt]())

    /// What `keyPath` is made of, if it is made of table entries of its root.
    static func match(_ keyPath: AnyKeyPath) -> Match? {
        let root = type(of: keyPath).rootType
        if let known = cache.withLock({ $0[ObjectIdentifier(root)] }) { return known[keyPath] }
        var found: [AnyKeyPath: Match] = [:]
        for (path, match) in chains(from: root, links: maximumLinks) where found[path] == nil {
            found[path] = match
        }
        cache.withLock { $0[ObjectIdentifier(root)] = found }
        return found[keyPath]
    }

    /// Whether each link of `match`, read from `object` on, is the stored
    /// `@Observed`, `@ObservedArray` or `@ObservedSet` property its name
    /// says (`Mirror`, public reflection: the wrapper `_name` of the entry's
    /// value type), reading only links already found to be such: a table
    /// entry that is a subscript or a computed property is never evaluated.
    static func isStored(_ match: Match, from object: AnyObject) -> Bool {
        var current: Any = object
        for (index, link) in match.links.enumerated() {
            let valueType = Swift.type(of: link.keyPath).valueType
            guard let storage = wrapper(named: "_" + link.name, in: current),
                Swift.type(of: storage).valueType == valueType
            else { return false }
            guard index < match.links.count - 1 else { break }
            guard let next = current[keyPath: link.keyPath] as? AnyObject else { return false }
            current = next
        }
        return true
    }

    /// The wrapper stored as `label` in `object` or its superclasses' part.
    private static func wrapper(named label: String, in object: Any) -> (any NotifyingStorage)? {
        var mirror: Mirror? = Mirror(reflecting: object)
        while let current = mirror {
            if let child = current.children.first(where: { $0.label == label }) {
                return child.value as? any NotifyingStorage
            }
            mirror = current.superclassMirror
        }
        return nil
    }

    private static let tabled = LockedState([ObjectIdentifier: Bool]())

    /// Whether `type` has a table of observable key paths at all: its
    /// `observableKeyPaths`, its own or inherited, is not empty (read once).
    static func hasTable(_ type: Any.Type) -> Bool {
        let key = ObjectIdentifier(type)
        if let known = tabled.withLock({ $0[key] }) { return known }
        let found = (type as? any KeyValueObservable.Type)?.observableKeyPaths.isEmpty == false
        tabled.withLock { $0[key] = found }
        return found
    }

    /// The number of the chain `match` reads, shared by every spelling of it.
    static func chainNumber(of match: Match) -> UInt {
        chainNumbers.withLock { numbers in
            if let number = numbers[match.canonical] { return number }
            let number = UInt(numbers.count + 1)
            numbers[match.canonical] = number
            return number
        }
    }

    /// The table entries of `type` and its superclasses: each rerooted at
    /// `type`, with the entry as declared.
    private static func entries(of type: Any.Type) -> [(name: String, path: AnyKeyPath, declared: AnyKeyPath)] {
        var entries: [(String, AnyKeyPath, AnyKeyPath)] = []
        var current: AnyClass? = type as? AnyClass
        while let candidate = current {
            if let observable = candidate as? any KeyValueObservable.Type {
                for name in observable.observableKeyPaths.keys.sorted() {
                    guard let declared = observable.observableKeyPaths[name],
                        let rerooted = KeyPathRegistry.rerooted(declared, at: type)
                    else { continue }
                    entries.append((name, rerooted, declared))
                }
            }
            current = _getSuperclass(candidate)
        }
        return entries
    }

    /// Every key path of at most `links` entries from `type`, appended from the leaf up.
    private static func chains(from type: Any.Type, links: Int) -> [(AnyKeyPath, Match)] {
        var found: [(AnyKeyPath, Match)] = []
        for entry in entries(of: type) {
            found.append((entry.path, Match(links: [(entry.name, entry.path)], canonical: entry.declared)))
            let next = Swift.type(of: entry.path).valueType
            guard links > 1, next is any KeyValueObservable.Type else { continue }
            for (tail, match) in chains(from: next, links: links - 1) {
                guard let path = entry.path.appending(path: tail) else { continue }
                // A tail declared by an ancestor of `next` appends only rerooted.
                let canonical = entry.declared.appending(path: match.canonical) ?? path
                found.append((path, Match(links: [(entry.name, entry.path)] + match.links, canonical: canonical)))
            }
        }
        return found
    }
}
