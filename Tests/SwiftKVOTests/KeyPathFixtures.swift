// Classes whose declarations make key path resolution hard (computed properties of a
// property's type, subscripts, overrides, generic classes, optional links), shared by the
// suites of the behaviours they exercise. SwiftKVOTests does not depend on SwiftKVOMacros: a
// class "declared with the macro" here is written as the macro expands it, with a complete
// `observableKeyPaths` table.

import Foundation

@testable import SwiftKVO

final class AtkShelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [String] = []
    @Observed var title = ""
    /// A computed property of the same type as `title`, whose getter traps on
    /// an empty shelf.
    var firstItem: String { items[0] }
    subscript(index: Int) -> String { items[index] }
}

class AtkBase: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
    @ObservedArray var items: [String] = []
    @ObservedSet var tags: Set<String> = []
    class var observableKeyPaths: [String: AnyKeyPath] {
        ["name": \AtkBase.name, "items": \AtkBase.items, "tags": \AtkBase.tags]
    }
}

final class AtkSub: AtkBase, @unchecked Sendable {
    /// Not observable (plain stored).
    var loud = false
    /// A computed property (not an override) reading the base's observable
    /// `name` and a plain flag.
    var alias: String { loud ? name.uppercased() : name }
}

final class AtkWallet: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var balance = 0.0
    var plain = 0.0
    /// Computed, of the same type as `balance`, reading a plain property.
    var cents: Double { plain * 100 }
    static var observableKeyPaths: [String: AnyKeyPath] { ["balance": \AtkWallet.balance] }
}

final class AtkOwner: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var wallet: AtkWallet?
    @Observed var label = ""
    var constant = 1
    let fixed = 2
    var computedName: String { label }
    static var observableKeyPaths: [String: AnyKeyPath] {
        [
            "label": \AtkOwner.label,
            "wallet": \AtkOwner.wallet,
            "computed": \AtkOwner.computedName,
            "plain": \AtkOwner.constant,
            "fixed": \AtkOwner.fixed,
            "foreign": \AtkWallet.balance,  // rooted in another class
            "dotted.name": \AtkOwner.label,
            "ünïcødé": \AtkOwner.label,
            "": \AtkOwner.label,
        ]
    }
}

struct AtkPoint: Sendable { var x = 0; var y = 0 }

final class AtkShapes: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var point = AtkPoint()
    @Observed var pair = (1, 2)
    @Observed var maybe: Int? = nil
    @Observed var nested: Int?? = nil
    @Observed var count = 0
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["point": \AtkShapes.point, "x": \AtkShapes.point.x, "maybe": \AtkShapes.maybe,
         "nested": \AtkShapes.nested, "count": \AtkShapes.count]
    }
}

final class AtkTeam: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedSet var members: Set<Int> = []
    @ObservedArray var list: [Int] = []
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["members": \AtkTeam.members, "list": \AtkTeam.list]
    }
}

final class AtkHolder: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var owner: AtkOwner = AtkOwner()
    static var observableKeyPaths: [String: AnyKeyPath] { ["owner": \AtkHolder.owner] }
}

final class AtkObserver: @unchecked Sendable {}

final class AtkFresh: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var a = 0
    @Observed var b = 0
    @Observed var child: AtkFresh?
    var sum: Int { a + b }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [\AtkFresh.sum: [\AtkFresh.a, \AtkFresh.b]] }
    static var observableKeyPaths: [String: AnyKeyPath] { ["a": \AtkFresh.a, "b": \AtkFresh.b, "child": \AtkFresh.child] }
}

/// Counts getter runs: registration must never evaluate a computed component.
enum CaRuns {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var counts: [String: Int] = [:]
    static func bump(_ name: String) { lock.lock(); counts[name, default: 0] += 1; lock.unlock() }
    static func count(_ name: String) -> Int { lock.lock(); defer { lock.unlock() }; return counts[name] ?? 0 }
}

final class CaObserver: @unchecked Sendable {}

/// A generic class with subscripts and computed properties of the type of an
/// observable property.
final class CaGenShelf<Tag>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["items": \CaGenShelf.items, "count": \CaGenShelf.count] }
    @ObservedArray var items: [Int] = []
    @Observed var count = 0
    /// Traps on an empty shelf.
    subscript(index: Int) -> Int { items[index] }
    /// Safe, counts its runs.
    subscript(probe index: Int) -> Int { CaRuns.bump("CaGenShelf.probe"); return count }
    subscript<K: Hashable>(key key: K) -> Int { CaRuns.bump("CaGenShelf.key"); return count }
    subscript(chained index: Int) -> Int { CaRuns.bump("CaGenShelf.chained"); return count }
    subscript(a: Int, b: String) -> Int { CaRuns.bump("CaGenShelf.ab"); return count }
    /// Traps on an empty shelf.
    var first: Int { items[0] }
}

/// A generic class written as `@KeyValueObservable` expands it: a complete
/// name table (cf. `Person<Tag>` in KeyValueObservableMacroTests).
final class CaGenTabled<Tag>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [Int] = []
    @Observed var count = 0
    var counted: Int { CaRuns.bump("CaGenTabled.counted"); return count }
    var first: Int { items[0] }
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["items": \CaGenTabled.items, "count": \CaGenTabled.count]
    }
}

/// A hand-written class without a table.
final class CaBareShelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [Int] = []
    @Observed var count = 0
    /// Traps on an empty shelf.
    var first: Int { items[0] }
    /// No argument: a "subscript" the argument rule cannot see.
    subscript() -> Int { items[0] }
}

protocol CaNamed: AnyObject {
    var name: String { get set }
}

final class CaWallet: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["balance": \CaWallet.balance, "note": \CaWallet.note] }
    @Observed var balance = 0.0
    @Observed var note: String?
}

final class CaPurse: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var wallet = CaWallet()
    @Observed var maybe: CaWallet?
    @Observed var deep: CaWallet??
    @Observed var pair = Pair(a: 0, b: 0)
    @Observed var tuple: (Int, Int) = (0, 0)
    @Observed var named: (any CaNamed)?
    @Observed var layered: Int?? = nil
    static var observableKeyPaths: [String: AnyKeyPath] {
        [
            "wallet": \CaPurse.wallet, "maybe": \CaPurse.maybe, "deep": \CaPurse.deep, "pair": \CaPurse.pair,
            "tuple": \CaPurse.tuple, "named": \CaPurse.named, "layered": \CaPurse.layered,
        ]
    }

    struct Pair {
        var a: Int
        var b: Int
        var sum: Int { a + b }
    }
}

/// As `@KeyValueObservable class …` (not final) expands it.
class CaTabledBase: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
    @Observed var level = 0
    @ObservedArray var entries: [Int] = []
    var loud: String { name.uppercased() }
    class var observableKeyPaths: [String: AnyKeyPath] {
        ["name": \CaTabledBase.name, "level": \CaTabledBase.level, "entries": \CaTabledBase.entries]
    }
}

/// A macro-style subclass with its own table, adding a property and a
/// computed property of the same type.
final class CaTabledHeir: CaTabledBase, @unchecked Sendable {
    @Observed var extra = 0
    @ObservedArray var tags: [String] = []
    var bonus = 0
    var counted: Int { CaRuns.bump("CaTabledHeir.counted"); return level }
    var boosted: Int { level + bonus }
    /// Traps without tags.
    var firstTag: String { tags[0] }
    override class var observableKeyPaths: [String: AnyKeyPath] {
        super.observableKeyPaths.merging(["extra": \CaTabledHeir.extra, "tags": \CaTabledHeir.tags]) { $1 }
    }
}
