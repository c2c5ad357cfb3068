import Testing
@testable import SwiftKVO

// No name a user can write limits what is observable (SPEC §2 item 17, issue #19
// item 7): engine key names do not grow with the names of the types a property
// involves, and notification names of any length work.

/// One layer of a type whose printed name is long.
struct LayerWithAnExceedinglyDescriptiveNameThatMakesTypeNamesLong<Inner: Sendable>: Sendable, Equatable
where Inner: Equatable {
    var inner: Inner?
    init(_ inner: Inner? = nil) { self.inner = inner }
}

typealias LongLayer = LayerWithAnExceedinglyDescriptiveNameThatMakesTypeNamesLong
/// Sixteen layers: a printed name of well over a kilobyte.
typealias VeryLongType = LongLayer<LongLayer<LongLayer<LongLayer<LongLayer<LongLayer<LongLayer<LongLayer<
    LongLayer<LongLayer<LongLayer<LongLayer<LongLayer<LongLayer<LongLayer<LongLayer<Int>>>>>>>>>>>>>>>>

/// A class declaring a property of that type.
final class LongTypeHolder: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \LongTypeHolder.value, "count": \LongTypeHolder.count] }
    @Observed var value = VeryLongType()
    @Observed var count = 0
}

/// A generic class whose own name is long, with a dependent key.
final class LongNamedHolder<Tag: Sendable>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["first": \LongNamedHolder.first, "last": \LongNamedHolder.last] }
    @Observed var first = ""
    @Observed var last = ""
    var full: String { "\(first) \(last)" }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\LongNamedHolder<Tag>.full: [\LongNamedHolder<Tag>.first, \LongNamedHolder<Tag>.last]]
    }
}

@Suite(.needsLayout("its registrations")) struct KeyNameLengthTests {
    /// Before: the first assignment trapped — "Fatal error: SwiftKVO: could not
    /// intern key swift:…LongTypeHolder@…:…LayerWith… (out of memory)" — with
    /// nothing observed anywhere.
    @Test func propertyOfAVeryLongGenericTypeIsAssignableAndObservable() throws {
        #expect(String(reflecting: VeryLongType.self).utf8.count > 1024)
        let holder = LongTypeHolder()
        holder.value = VeryLongType(LongLayer())  // the first assignment resolves the key
        let log = Log<VeryLongType?>()
        let token = try holder.observe(\.value, options: [.new]) { _, change in log.append(change.newValue) }
        let next = VeryLongType(LongLayer(LongLayer()))
        holder.value = next
        #expect(log.values == [next])
        token.invalidate()
    }

    /// Two properties of one long-named class keep two keys.
    @Test func propertiesOfALongNamedClassKeepTheirOwnKeys() throws {
        let holder = LongTypeHolder()
        let values = Counter()
        let counts = Counter()
        let t1 = try holder.observe(\.value) { _, _ in values.increment() }
        let t2 = try holder.observe(\.count) { _, _ in counts.increment() }
        holder.count = 1
        holder.count = 2
        holder.value = VeryLongType()
        #expect(values.count == 1)
        #expect(counts.count == 2)
        t1.invalidate()
        t2.invalidate()
    }

    /// Before: `observe(\.full)` threw `KVOError.outOfMemory` (the key's name
    /// carried the key path's description, over the engine's limit).
    @Test func dependentKeyOfAClassWithAVeryLongNameIsObservable() throws {
        typealias Holder = LongNamedHolder<VeryLongType>
        #expect((\Holder.full).debugDescription.utf8.count > 1024)
        let holder = Holder()
        let log = Log<String>()
        let token = try holder.observe(\.full, options: [.new]) { _, change in log.append(change.newValue ?? "-") }
        holder.first = "Ada"
        holder.last = "Lovelace"
        #expect(log.values == ["Ada ", "Ada Lovelace"])
        token.invalidate()
    }

    /// Names of every length around the engine's limit, and far beyond it,
    /// register, post and remove; names differing only past the limit stay
    /// apart. Before: names over 1,011 bytes threw `KVOError.outOfMemory`.
    @Test func notificationNamesOfAnyLengthWork() throws {
        let hub = NotificationHub.default
        let observer = Observer()
        let stem = "test.long." + String(repeating: "n", count: 980)  // 990 bytes
        let lengths = [1000, 1011, 1012, 1013, 1024, 1025, 4096, 100_000]
        let names = lengths.map { length in
            NotificationHub.Name(stem + String(repeating: "x", count: length - stem.utf8.count))
        }
        let twins = ["a", "b"].map { NotificationHub.Name(stem + String(repeating: "y", count: 2000) + $0) }
        for name in names + twins {
            try hub.addObserver(observer, name: name) { observer, note in
                observer.log.append("\(note.name.rawValue.utf8.count)\(note.name.rawValue.suffix(1))")
            }
        }
        for name in names + twins { hub.post(name: name) }
        #expect(observer.log.values == (lengths.map { "\($0)x" } + ["2991a", "2991b"]))
        #expect(hub.removeObserver(observer, name: twins[0]) == 1)
        hub.post(name: twins[0])
        hub.post(name: twins[1])
        #expect(observer.log.values.suffix(1) == ["2991b"])
        #expect(hub.removeObserver(observer) == names.count + 1)
    }

    /// A long-named token registration and async sequence work too.
    @Test func longNotificationNamesWorkWithTokensAndSequences() async throws {
        let name = NotificationHub.Name("test.long.token." + String(repeating: "t", count: 3000))
        let counter = Counter()
        let token = try NotificationHub.default.addObserver(forName: name) { _ in counter.increment() }
        let stream = try NotificationHub.default.notifications(named: name)
        NotificationHub.default.post(name: name)
        #expect(counter.count == 1)
        for await note in stream {
            #expect(note.name == name)
            break
        }
        #expect(token.invalidate())
    }
}

extension KeyNameLengthTests {
    /// The engine key names of a property and of a dependent key stay short,
    /// and start with their identity, whatever the declaration's types are
    /// called. Before: the property's name (over 1,024 bytes) trapped the
    /// first assignment, and the dependent key's could not be interned.
    @Test func engineKeyNamesStayShortWhateverIsDeclared() throws {
        let holder = LongTypeHolder()
        let property = try KeyPathRegistry.resolve(\LongTypeHolder.value, on: holder)
        let propertyName = try #require(Engine.name(of: property.key))
        #expect(propertyName.utf8.count <= 2 * EngineKeyName.readableLimit + 64)
        #expect(propertyName.hasPrefix("swift:"))

        let named = LongNamedHolder<VeryLongType>()
        let dependent = try KeyPathRegistry.resolve(\LongNamedHolder<VeryLongType>.full, on: named)
        let dependentName = try #require(Engine.name(of: dependent.key))
        #expect(dependentName.utf8.count <= EngineKeyName.readableLimit + 64)
        #expect(dependentName.hasPrefix("swift-dependent:"))
    }

    /// A readable prefix is cut on a scalar boundary and marked.
    @Test func readablePrefixesAreCutOnWholeScalars() {
        let text = String(repeating: "é", count: 200)  // two bytes each
        let cut = EngineKeyName.readable(text)
        #expect(cut.utf8.count <= EngineKeyName.readableLimit)
        #expect(cut.hasSuffix("…"))
        #expect(cut.dropLast().allSatisfy { $0 == "é" })
        #expect(EngineKeyName.readable("short") == "short")
    }
}
