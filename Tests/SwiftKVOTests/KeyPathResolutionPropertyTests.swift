import Testing

@testable import SwiftKVO

// A seeded generator over a zoo of classes with stored, computed, overridden
// and optional properties, and key paths over them (chains, subscripts,
// optionals, existentials): random registrations and random assignments.
// Whatever the sequence, every delivered value equals the key path read in the
// callback, a registration either throws or delivers every change of what its
// key path reads, and nothing traps (SPEC §2 items 16 and 17).

private protocol Labelled: AnyObject {
    var label: String { get }
}

private final class Leaf: KeyValueObservable, Labelled, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["text": \Leaf.text, "count": \Leaf.count] }
    @Observed var text = "a"
    @Observed var count = 0
    var shout: String { text.uppercased() }
    var label: String { text }
}

/// A leaf whose name table is complete: its components are decided from the
/// table, also past a nil link.
private final class TabledLeaf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var text = "a"
    @Observed var count = 0
    var shout: String { text.uppercased() }
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["text": \TabledLeaf.text, "count": \TabledLeaf.count]
    }
}

private class Node: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["title": \Node.title, "leaf": \Node.leaf, "spare": \Node.spare, "tabled": \Node.tabled, "tags": \Node.tags, "items": \Node.items, "tagged": \Node.tagged] }
    @Observed var title = "n"
    @Observed var leaf = Leaf()
    @Observed var spare: Leaf?
    @Observed var tabled: TabledLeaf?
    @Observed var tags: [String] = []
    @ObservedArray var items: [Int] = []
    @Observed var tagged: any Labelled = Leaf()
    var plain = 0
    var size: Int { tags.count }
    var fullTitle: String { "\(title)/\(leaf.text)" }
    class var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\Node.fullTitle: [\Node.title, \Node.leaf]]
    }
}

private final class LoudNode: Node, @unchecked Sendable {
    override var title: String {
        get { super.title.uppercased() }
        set { super.title = newValue }
    }
}

private final class Root: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["node": \Root.node, "loud": \Root.loud, "maybe": \Root.maybe] }
    @Observed var node: Node = Node()
    @Observed var loud = LoudNode()
    @Observed var maybe: Node?
}

/// A key path over the zoo and how to read it as a comparable value.
private struct Probe: Sendable {
    let name: String
    let register: @Sendable (Root, @escaping @Sendable (String?, String) -> Void) throws -> ObservationToken
    let read: @Sendable (Root) -> String
}

private func probe<Value>(
    _ name: String, _ keyPath: KeyPath<Root, Value> & Sendable
) -> Probe {
    let read: @Sendable (Root) -> String = { String(describing: $0[keyPath: keyPath]) }
    return Probe(
        name: name,
        register: { root, deliver in
            try root.observe(keyPath, options: [.new]) { root, change in
                deliver(change.newValue.map { String(describing: $0) }, read(root))
            }
        },
        read: read)
}

private let probes: [Probe] = [
    probe("node", \.node),
    probe("node.title", \.node.title),
    probe("node.leaf.text", \.node.leaf.text),
    probe("node.leaf.count", \.node.leaf.count),
    probe("node.leaf.shout", \.node.leaf.shout),
    probe("node.spare?.text", \.node.spare?.text),
    probe("node.spare?.shout", \.node.spare?.shout),
    probe("node.tags", \.node.tags),
    probe("node.tags[0]", \.node.tags[0]),
    probe("node.items", \.node.items),
    probe("node.size", \.node.size),
    probe("node.plain", \.node.plain),
    probe("node.fullTitle", \.node.fullTitle),
    probe("node.tagged.label", \.node.tagged.label),
    probe("loud.title", \.loud.title),
    probe("loud.leaf.text", \.loud.leaf.text),
    probe("maybe?.title", \.maybe?.title),
    probe("maybe?.leaf.text", \.maybe?.leaf.text),
    probe("maybe?.leaf.shout", \.maybe?.leaf.shout),
    probe("maybe?.spare?.count", \.maybe?.spare?.count),
    probe("node.tabled?.text", \.node.tabled?.text),
    probe("node.tabled?.shout", \.node.tabled?.shout),
    probe("maybe?.tabled?.count", \.maybe?.tabled?.count),
    probe("maybe?.tabled?.shout", \.maybe?.tabled?.shout),
]

/// One random assignment somewhere in the zoo.
private func mutate(_ root: Root, _ random: inout SplitMix) {
    let nodes = [root.node, root.loud, root.maybe].compactMap { $0 }
    let node = nodes[Int(random.next() % UInt64(nodes.count))]
    switch random.next() % 14 {
    case 12: node.tabled = random.next() % 2 == 0 ? nil : TabledLeaf()
    case 13: node.tabled?.text = "b\(random.next() % 5)"
    case 0: node.title = "t\(random.next() % 5)"
    case 1: node.leaf.text = "x\(random.next() % 5)"
    case 2: node.leaf.count += 1
    case 3: node.leaf = Leaf()
    case 4: node.spare = random.next() % 2 == 0 ? nil : Leaf()
    case 5: node.spare?.text = "s\(random.next() % 5)"
    case 6: node.tags = random.next() % 2 == 0 ? [] : ["g\(random.next() % 5)"]
    case 7: node.items.append(Int(random.next() % 9))
    case 8: if !node.items.isEmpty { node.items.remove(at: 0) }
    case 9: root.node = Node()
    case 10: root.maybe = random.next() % 2 == 0 ? nil : Node()
    default: node.plain += 1
    }
}

/// A seeded SplitMix64: the same seed, the same run.
private struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite(.needsLayout("its registrations")) struct KeyPathResolutionPropertyTests {
    @Test(arguments: 1...24)
    func everyDeliveredValueIsTheKeyPathsAndNoRegistrationIsInert(seed: UInt64) throws {
        var random = SplitMix(state: seed)
        let root = Root()
        if seed % 2 == 0 { root.maybe = Node() }
        if seed % 3 == 0 { root.node.tags = ["first"] }
        let mismatches = Log<String>()
        var registered: [(probe: Probe, deliveries: Counter, token: ObservationToken)] = []
        for _ in 0..<8 {
            let probe = probes[Int(random.next() % UInt64(probes.count))]
            let deliveries = Counter()
            do {
                let token = try probe.register(root) { new, read in
                    deliveries.increment()
                    if let new, new != read { mismatches.append("\(probe.name): \(new) ≠ \(read)") }
                }
                registered.append((probe, deliveries, token))
            } catch {
                #expect(error is KVOError)
            }
        }
        for _ in 0..<60 {
            let before = registered.map { ($0.probe.read(root), $0.deliveries.count) }
            mutate(root, &random)
            for (entry, (value, count)) in zip(registered, before) where entry.probe.read(root) != value {
                #expect(
                    entry.deliveries.count > count,
                    "seed \(seed): \(entry.probe.name) changed \(value) → \(entry.probe.read(root)) unnotified")
            }
        }
        #expect(mismatches.values.isEmpty, "seed \(seed): \(mismatches.values)")
        for entry in registered { entry.token.invalidate() }
    }
}
