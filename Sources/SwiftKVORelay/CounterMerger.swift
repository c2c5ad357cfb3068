#if Relay
import Foundation
// Counters whose changes add up across instances (PN-counters): each relay
// — an instance id in one incarnation — owns one entry, the sums of its own
// increases and decreases (sent as `[increases, decreases]`), and only ever
// raises them. A received entry is merged by taking the larger of each sum,
// so copies, reorderings and reloads change nothing; the value moves by what
// the total moved. A restarted instance, even with the same id, starts a new
// entry: what it wrote before stays in the old one.

/// One instance's sums.
struct CounterEntry: Equatable, Sendable {
    var increases: UInt64 = 0
    var decreases: UInt64 = 0

    var payload: [UInt64] { [increases, decreases] }

    init() {}

    init(from decoder: any Decoder) throws {
        let sums = try [UInt64](from: decoder)
        guard sums.count == 2 else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a counter entry is two sums"))
        }
        (increases, decreases) = (sums[0], sums[1])
    }

    /// Adds the change from `old` to `new`.
    mutating func add<Count: FixedWidthInteger>(from old: Count, to new: Count) {
        if new >= old {
            increases = increases &+ UInt64(truncatingIfNeeded: new &- old)
        } else {
            decreases = decreases &+ UInt64(truncatingIfNeeded: old &- new)
        }
    }

    /// This entry merged with `other`: the larger sums.
    func merged(with other: CounterEntry) -> CounterEntry {
        var merged = CounterEntry()
        merged.increases = max(increases, other.increases)
        merged.decreases = max(decreases, other.decreases)
        return merged
    }

    /// What the total moved from `old` to this entry (modulo 2^64, as `Count` wraps).
    func change<Count: FixedWidthInteger>(since old: CounterEntry, as: Count.Type) -> Count {
        let moved = (increases &- old.increases) &- (decreases &- old.decreases)
        return Count(truncatingIfNeeded: Int64(bitPattern: moved))
    }
}

/// The entries of one counter, by writer.
struct CounterEntries {
    var byWriter: [Writer: CounterEntry] = [:]

    /// Merges `entry` of `writer`; how much the total moved.
    mutating func merge<Count: FixedWidthInteger>(_ entry: CounterEntry, of writer: Writer, as: Count.Type) -> Count {
        let old = byWriter[writer] ?? CounterEntry()
        let merged = old.merged(with: entry)
        byWriter[writer] = merged
        return merged.change(since: old, as: Count.self)
    }
}

/// A counter entry's name: `["<instance>",<incarnation>]`, with a key after
/// them for ``ReplicationPolicy/counterPerKey()``.
struct CounterEntryName<Key: Codable & Hashable & Sendable>: Decodable, Hashable, Sendable {
    var writer: Writer
    var key: Key?

    init(writer: Writer, key: Key?) {
        self.writer = writer
        self.key = key
    }

    init(from decoder: any Decoder) throws {
        var parts = try decoder.unkeyedContainer()
        writer = Writer(id: try parts.decode(String.self), incarnation: try parts.decode(UInt64.self))
        key = parts.isAtEnd ? nil : try parts.decode(Key.self)
        guard parts.isAtEnd else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a writer and at most one key"))
        }
    }

    var entry: String? {
        var entry = "["
        Wire.appendQuoted(writer.id.precomposedStringWithCanonicalMapping, to: &entry)
        entry += "," + String(writer.incarnation)
        if let key {
            guard let spelled = EntryKey.encode(key) else { return nil }
            entry += "," + spelled
        }
        return entry + "]"
    }

    /// The name `entry` spells, if spelled as ``entry`` would.
    init(parsing entry: String) throws {
        self = try JSONDecoder().decode(Self.self, from: Data(entry.utf8))
        guard let spelled = self.entry, spelled.utf8.elementsEqual(entry.utf8) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not spelled as sent"))
        }
    }
}

/// ``ReplicationPolicy/counter``: one entry per writer.
final class CounterMerger<Count: FixedWidthInteger & Codable & Sendable>: EntryMerger {
    typealias Value = Count
    private var entries = CounterEntries()

    var acceptsByStamp: Bool { false }

    func writes(from old: Count, to new: Count, writer: Writer) -> [EntryWrite] {
        guard old != new, let entry = CounterEntryName<Int>(writer: writer, key: nil).entry else { return [] }
        entries.byWriter[writer, default: CounterEntry()].add(from: old, to: new)
        return [EntryWrite(entry: entry, payload: entries.byWriter[writer]?.payload ?? [])]
    }

    func payload(of entry: String, in value: Count, writer: Writer) -> (any Encodable & Sendable)? {
        entry == CounterEntryName<Int>(writer: writer, key: nil).entry ? entries.byWriter[writer]?.payload : nil
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        let name = try CounterEntryName<Int>(parsing: entry)
        guard name.key == nil else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a key")) }
        return (name.writer, try CounterEntry(from: decoder))
    }

    func merge(_ decoded: any Sendable, from writer: Writer, into value: inout Count) -> MergeOutcome {
        guard let (owner, entry) = decoded as? (Writer, CounterEntry), owner == writer else { return .rejected }
        let moved = entries.merge(entry, of: owner, as: Count.self)
        guard moved != 0 else { return .unchanged }
        value = value &+ moved
        return .changed
    }
}

/// ``ReplicationPolicy/counterPerKey()``: one entry per writer and key.
final class CounterPerKeyMerger<Key: Codable & Hashable & Sendable, Count: FixedWidthInteger & Codable & Sendable>:
    EntryMerger
{
    typealias Value = [Key: Count]
    private var counters: [Key: CounterEntries] = [:]

    var acceptsByStamp: Bool { false }

    func writes(from old: Value, to new: Value, writer: Writer) -> [EntryWrite] {
        var writes: [EntryWrite] = []
        for key in Set(old.keys).union(new.keys) {
            let (before, after) = (old[key] ?? 0, new[key] ?? 0)
            guard before != after, let entry = CounterEntryName(writer: writer, key: key).entry else { continue }
            counters[key, default: CounterEntries()].byWriter[writer, default: CounterEntry()].add(from: before, to: after)
            writes.append(EntryWrite(entry: entry, payload: counters[key]?.byWriter[writer]?.payload ?? []))
        }
        return writes
    }

    func payload(of entry: String, in value: Value, writer: Writer) -> (any Encodable & Sendable)? {
        guard let name = try? CounterEntryName<Key>(parsing: entry), name.writer == writer, let key = name.key else {
            return nil
        }
        return counters[key]?.byWriter[writer]?.payload
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        let name = try CounterEntryName<Key>(parsing: entry)
        guard let key = name.key else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "no key")) }
        return (name.writer, key, try CounterEntry(from: decoder))
    }

    func merge(_ decoded: any Sendable, from writer: Writer, into value: inout Value) -> MergeOutcome {
        guard let (owner, key, entry) = decoded as? (Writer, Key, CounterEntry), owner == writer else {
            return .rejected
        }
        let moved = counters[key, default: CounterEntries()].merge(entry, of: owner, as: Count.self)
        guard moved != 0 else { return .unchanged }
        let total = (value[key] ?? 0) &+ moved
        value[key] = total == 0 ? nil : total
        return .changed
    }
}
#endif
