// Key paths of generic classes, and key paths written in generic code (a generic function,
// a constrained extension, a protocol requirement): observed as their literals are.

import Foundation
import Testing

@testable import SwiftKVO

/// A generic class with dependent keys, as the macro writes `Person<Tag>`.
final class CaGenPerson<Tag>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var first = ""
    @Observed var last = ""
    var full: String { "\(first) \(last)" }
    var greeting: String { "Hello, \(full)" }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\CaGenPerson.full: [\CaGenPerson.first, \CaGenPerson.last], \CaGenPerson.greeting: [\CaGenPerson.full]]
    }
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["first": \CaGenPerson.first, "last": \CaGenPerson.last, "full": \CaGenPerson.full,
         "greeting": \CaGenPerson.greeting]
    }
}

class CaPlain: KeyValueObservable, CaNamed, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["name": \CaPlain.name, "score": \CaPlain.score] }
    @Observed var name = ""
    @Observed var score = 0
}

final class CaPlainSub: CaPlain, @unchecked Sendable {}

/// Observes `name` through a key path written in a generic function.
func caObserveName<T: CaPlain>(_ object: T, _ log: Recorder<String?>) throws(KVOError) -> ObservationToken {
    try object.observe(\.name, options: .new) { _, change in log.add(change.newValue) }
}

/// Observes `name` through a protocol requirement, in a generic function.
func caObserveRequirement<T: CaNamed & KeyValueObservable>(
    _ object: T, _ log: Recorder<String?>
) throws(KVOError) -> ObservationToken {
    try object.observe(\.name, options: .new) { _, change in log.add(change.newValue) }
}

extension KeyValueObservable where Self: CaPlain {
    /// `\Self.score`, written in a constrained protocol extension.
    func caObserveScore(_ log: Recorder<Int?>) throws(KVOError) -> ObservationToken {
        try observe(\.score, options: .new) { _, change in log.add(change.newValue) }
    }
}

/// Non-generic subclass of a generic base.
class CaGenBase<Tag>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["value": \CaGenBase.value] }
    @Observed var value = 0
    var counted: Int { CaRuns.bump("CaGenBase.counted"); return value }
}

final class CaConcreteHeir: CaGenBase<String>, @unchecked Sendable {
    override class var observableKeyPaths: [String: AnyKeyPath] {
        super.observableKeyPaths.merging(["other": \CaConcreteHeir.other]) { $1 }
    }
    @Observed var other = 0
}

@Suite(.needsLayout("its registrations")) struct GenericKeyPathTests {
    @Test func aKeyPathWrittenInAGenericFunctionIsObserved() throws {
        let plain = CaPlain()
        let log = Recorder<String?>()
        var token: ObservationToken?
        token = try caObserveName(plain, log)
        plain.name = "a"
        #expect(log.all == ["a"])
        _ = token?.invalidate()
    }

    @Test func aKeyPathWrittenInAGenericFunctionOnASubclassIsObserved() throws {
        let sub = CaPlainSub()
        let log = Recorder<String?>()
        var token: ObservationToken?
        token = try caObserveName(sub, log)
        sub.name = "b"
        #expect(log.all == ["b"])
        _ = token?.invalidate()
    }

    @Test func aKeyPathToAProtocolRequirementIsRefusedNamingWhatToObserveInstead() throws {
        // `\T.name` with `T: CaNamed` is the requirement's key path: which
        // property implements it only its witness, run, could tell. Refused
        // before anything runs, naming the two ways that are observed.
        let plain = CaPlain()
        let log = Recorder<String?>()
        let error = #expect(throws: KVOError.unsupportedKeyPath) { _ = try caObserveRequirement(plain, log) }
        let detail = error?.detail ?? ""
        #expect(!detail.contains("subscript"), "\(detail)")
        if !isFallbackRun {
            #expect(detail.contains("protocol requirement") && detail.contains("observe(keyPath:)"), "\(detail)")
        }
        // The two ways the message names.
        let byName = try plain.observe(keyPath: "name", options: .new) { _, change in log.add(change.newValue as? String) }
        let own = try plain.observe(\CaPlain.name, options: .new) { _, change in log.add(change.newValue) }
        plain.name = "c"
        #expect(log.all == ["c", "c"])
        byName.invalidate()
        own.invalidate()
    }

    @Test func aKeyPathWrittenInAConstrainedExtensionIsObserved() throws {
        let plain = CaPlain()
        let log = Recorder<Int?>()
        var token: ObservationToken?
        token = try plain.caObserveScore(log)
        plain.score = 7
        #expect(log.all == [7])
        _ = token?.invalidate()
    }

    @Test func aGenericClassWithTablesIsObservedByKeyPathAndByName() throws {
        enum Tag {}
        let person = CaGenPerson<Tag>()
        let log = Recorder<String>()
        var tokens: [ObservationToken] = []
        tokens.append(try person.observe(\.greeting, options: .new) { _, c in log.add("g:\(c.newValue!)") })
        tokens.append(try person.observe(keyPath: "full", options: .new) { _, c in log.add("f:\(c.newValue as! String)") })
        tokens.append(try person.observe(keyPath: "first", options: .new) { _, c in log.add("1:\(c.newValue as! String)") })
        person.first = "Ada"
        #expect(log.all.sorted() == ["1:Ada", "f:Ada ", "g:Hello, Ada "])
        let shelf = CaGenTabled<Tag>()
        tokens.append(try shelf.observe(keyPath: "count", options: .new) { _, c in log.add("c:\(c.newValue as! Int)") })
        shelf.count = 3
        #expect(log.all.last == "c:3")
        #expect(throws: KVOError.self) { _ = try shelf.observe(keyPath: "counted") { _, _ in } }
        tokens.forEach { _ = $0.invalidate() }
    }

    @Test func aConcreteSubclassOfAGenericBase() throws {
        let heir = CaConcreteHeir()
        let log = Recorder<String>()
        let t1 = try heir.observe(\.value, options: .new) { _, c in log.add("v\(c.newValue!)") }
        let t2 = try heir.observe(\.other, options: .new) { _, c in log.add("o\(c.newValue!)") }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try heir.observe(\.counted) { _, _ in } }
        heir.value = 1
        heir.other = 2
        #expect(log.all == ["v1", "o2"])
        _ = t1.invalidate()
        _ = t2.invalidate()
    }
}
