#if Relay
// Counters whose changes add up across instances (PN-counters): each
// instance owns one entry, the sums of its own increases and decreases
// (sent as `[increases, decreases]`), and only ever raises them. A received
// entry is merged by taking the larger of each sum, so copies, reorderings
// and reloads change nothing; the value moves by what the total moved.

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

    /// This entry merged with `other`: the larger sums, or with `rebasing`
    /// both added (this instance's entry from before a restart).
    func merged(with other: CounterEntry, rebasing: Bool) -> CounterEntry {
        var merged = CounterEntry()
        merged.increases = rebasing ? increases &+ other.increases : max(increases, other.increases)
        merged.decreases = rebasing ? decreases &+ other.decreases : max(decreases, other.decreases)
        return merged
    }

    /// What the total moved from `old` to this entry (modulo 2^64, as `Count` wraps).
    func change<Count: FixedWidthInteger>(since old: CounterEntry, as: Count.Type) -> Count {
        let moved = (increases &- old.increases) &- (decreases &- old.decreases)
        return Count(truncatingIfNeeded: Int64(bitPattern: moved))
    }
}

/// The entries of one counter, by instance id.
struct CounterEntries {
    var byInstance: [String: CounterEntry] = [:]

    /// Merges `entry` of `instance`; how much the total moved.
    mutating func merge<Count: FixedWidthInteger>(
        _ entry: CounterEntry, of instance: String, rebasing: Bool, as: Count.Type
    ) -> Count {
        let old = byInstance[instance] ?? CounterEntry()
        let merged = old.merged(with: entry, rebasing: rebasing)
        byInstance[instance] = merged
        return merged.change(since: old, as: Count.self)
    }
}

/// ``ReplicationPolicy/counter``: the entry is the instance id.
final class CounterMerger<Count: FixedWidthInteger & Codable & Sendable>: EntryMerger {
    typealias Value = Count
    private var entries = CounterEntries()

    var acceptsByStamp: Bool { false }

    func writes(from old: Count, to new: Count, instance: String) -> [EntryWrite] {
        guard old != new else { return [] }
        entries.byInstance[instance, default: CounterEntry()].add(from: old, to: new)
        return [EntryWrite(entry: instance, payload: entries.byInstance[instance]?.payload ?? [])]
    }

    func payload(of entry: String, in value: Count, instance: String) -> (any Encodable & Sendable)? {
        entry == instance ? entries.byInstance[instance]?.payload : nil
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        (entry, try CounterEntry(from: decoder))
    }

    func merge(_ decoded: any Sendable, from instance: String, rebasing: Bool, into value: inout Count) -> MergeOutcome {
        guard let (owner, entry) = decoded as? (String, CounterEntry), owner == instance else { return .rejected }
        let moved = entries.merge(entry, of: owner, rebasing: rebasing, as: Count.self)
        guard moved != 0 else { return .unchanged }
        value = value &+ moved
        return .changed
    }
}

/// ``ReplicationPolicy/counterPerKey()``: the entry is `["<instance>",<key>]`.
final class CounterPerKeyMerger<Key: Codable & Hashable & Sendable, Count: FixedWidthInteger & Codable & Sendable>:
    EntryMerger
{
    typealias Value = [Key: Count]
    private var counters: [Key: CounterEntries] = [:]

    var acceptsByStamp: Bool { false }

    private static func entry(_ instance: String, _ key: Key) -> String {
        var entry = "["
        Wire.appendQuoted(instance, to: &entry)
        return entry + "," + EntryKey.encode(key) + "]"
    }

    func writes(from old: Value, to new: Value, instance: String) -> [EntryWrite] {
        var writes: [EntryWrite] = []
        for key in Set(old.keys).union(new.keys) {
            let (before, after) = (old[key] ?? 0, new[key] ?? 0)
            guard before != after else { continue }
            counters[key, default: CounterEntries()].byInstance[instance, default: CounterEntry()].add(
                from: before, to: after)
            let sums = counters[key]?.byInstance[instance]?.payload ?? []
            writes.append(EntryWrite(entry: Self.entry(instance, key), payload: sums))
        }
        return writes
    }

    func payload(of entry: String, in value: Value, instance: String) -> (any Encodable & Sendable)? {
        guard let (owner, key) = try? Self.owner(of: entry), owner == instance else { return nil }
        return counters[key]?.byInstance[instance]?.payload
    }

    private static func owner(of entry: String) throws -> (String, Key) {
        let pair = try EntryKey.decode(OwnedKey.self, from: entry)
        return (pair.owner, pair.key)
    }

    /// `["<instance>",<key>]`.
    private struct OwnedKey: Decodable {
        var owner: String
        var key: Key

        init(from decoder: any Decoder) throws {
            var pair = try decoder.unkeyedContainer()
            owner = try pair.decode(String.self)
            key = try pair.decode(Key.self)
            guard pair.isAtEnd else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "more than a pair"))
            }
        }
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        let (owner, key) = try Self.owner(of: entry)
        return (owner, key, try CounterEntry(from: decoder))
    }

    func merge(_ decoded: any Sendable, from instance: String, rebasing: Bool, into value: inout Value) -> MergeOutcome {
        guard let (owner, key, entry) = decoded as? (String, Key, CounterEntry), owner == instance else {
            return .rejected
        }
        let moved = counters[key, default: CounterEntries()].merge(entry, of: owner, rebasing: rebasing, as: Count.self)
        guard moved != 0 else { return .unchanged }
        let total = (value[key] ?? 0) &+ moved
        value[key] = total == 0 ? nil : total
        return .changed
    }
}
#endif
