#if Relay
import Foundation

// How one ReplicationPolicy splits a property into entries, and merges a
// received entry into the value held. A merger is only used under its
// replication's lock (Replication.swift); the counters keep state there.

/// What applying a received entry did.
enum MergeOutcome {
    case changed
    case unchanged
    /// The entry is not one its sender may write.
    case rejected
}

/// A local change's entry and what is sent for it.
struct EntryWrite {
    var entry: String
    var payload: any Encodable & Sendable
}

protocol EntryMerger<Value>: AnyObject {
    associatedtype Value: Codable & Sendable

    /// Whether a received entry is applied only if newer than the last write
    /// of that entry (last writer wins); otherwise it is always merged.
    var acceptsByStamp: Bool { get }

    /// The entries a local change from `old` to `new` wrote, with what to
    /// send; `instance` is this relay's id.
    func writes(from old: Value, to new: Value, instance: String) -> [EntryWrite]

    /// What to send for `entry` given the value held now (a write held for
    /// the first load is sent this way).
    func payload(of entry: String, in value: Value, instance: String) -> (any Encodable & Sendable)?

    /// Decodes a received entry: `entry` from the message's `"e"`, the
    /// payload from its `"x"`.
    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable

    /// Merges a decoded entry written by `instance` into `value`.
    /// `rebasing`: the entry is this instance's own, read by the first load
    /// (written before a restart): it adds to what was written since.
    func merge(_ decoded: any Sendable, from instance: String, rebasing: Bool, into value: inout Value) -> MergeOutcome
}

/// Entry keys: the JSON text of a dictionary key or set member, the same on
/// every instance (strings and integers are written directly, as JSON writes them).
enum EntryKey {
    static func encode<Key: Encodable>(_ key: Key) -> String {
        switch key {
        case let string as String:
            var quoted = ""
            Wire.appendQuoted(string, to: &quoted)
            return quoted
        case let int as Int: return String(int)
        default:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (try? encoder.encode([key])).map { String(decoding: $0.dropFirst().dropLast(), as: UTF8.self) } ?? ""
        }
    }

    static func decode<Key: Decodable>(_ type: Key.Type, from entry: String) throws -> Key {
        let keys = try JSONDecoder().decode([Key].self, from: Data(("[" + entry + "]").utf8))
        guard keys.count == 1, let key = keys.first else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not one entry key"))
        }
        return key
    }
}

/// ``ReplicationPolicy/lastWriterWins``: one entry, the whole value. It
/// remembers the value of the last write it recorded, which Replication
/// stores again if a newer write came in while it was storing an older one.
final class WholeValueMerger<Value: Codable & Sendable>: EntryMerger {
    var latest: Value?

    var acceptsByStamp: Bool { true }

    func writes(from old: Value, to new: Value, instance: String) -> [EntryWrite] {
        [EntryWrite(entry: "", payload: new)]
    }

    func payload(of entry: String, in value: Value, instance: String) -> (any Encodable & Sendable)? {
        latest = value
        return value
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        guard entry.isEmpty else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "entry")) }
        return try Value(from: decoder)
    }

    func merge(_ decoded: any Sendable, from instance: String, rebasing: Bool, into value: inout Value) -> MergeOutcome {
        guard let new = decoded as? Value else { return .rejected }
        value = new
        return .changed
    }
}

/// ``ReplicationPolicy/perKey()``: one entry per key, sent as `[element]`,
/// or `[]` for a removal.
final class PerKeyMerger<Key: Codable & Hashable & Sendable, Element: Codable & Equatable & Sendable>: EntryMerger {
    typealias Value = [Key: Element]

    var acceptsByStamp: Bool { true }

    func writes(from old: Value, to new: Value, instance: String) -> [EntryWrite] {
        var writes: [EntryWrite] = []
        for (key, element) in new where old[key] != element {
            writes.append(EntryWrite(entry: EntryKey.encode(key), payload: [element]))
        }
        for key in old.keys where new[key] == nil {
            writes.append(EntryWrite(entry: EntryKey.encode(key), payload: [Element]()))
        }
        return writes
    }

    func payload(of entry: String, in value: Value, instance: String) -> (any Encodable & Sendable)? {
        guard let key = try? EntryKey.decode(Key.self, from: entry) else { return nil }
        return value[key].map { [$0] } ?? []
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        let elements = try [Element](from: decoder)
        guard elements.count <= 1 else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "more than one element"))
        }
        return (try EntryKey.decode(Key.self, from: entry), elements.first)
    }

    func merge(_ decoded: any Sendable, from instance: String, rebasing: Bool, into value: inout Value) -> MergeOutcome {
        guard let (key, element) = decoded as? (Key, Element?) else { return .rejected }
        guard value[key] != element else { return .unchanged }
        value[key] = element
        return .changed
    }
}

/// ``ReplicationPolicy/perMember()``: one entry per member, sent as `true`
/// (present) or `false` (removed).
final class PerMemberMerger<Member: Codable & Hashable & Sendable>: EntryMerger {
    typealias Value = Set<Member>

    var acceptsByStamp: Bool { true }

    func writes(from old: Value, to new: Value, instance: String) -> [EntryWrite] {
        new.subtracting(old).map { EntryWrite(entry: EntryKey.encode($0), payload: true) }
            + old.subtracting(new).map { EntryWrite(entry: EntryKey.encode($0), payload: false) }
    }

    func payload(of entry: String, in value: Value, instance: String) -> (any Encodable & Sendable)? {
        guard let member = try? EntryKey.decode(Member.self, from: entry) else { return nil }
        return value.contains(member)
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        (try EntryKey.decode(Member.self, from: entry), try Bool(from: decoder))
    }

    func merge(_ decoded: any Sendable, from instance: String, rebasing: Bool, into value: inout Value) -> MergeOutcome {
        guard let (member, present) = decoded as? (Member, Bool) else { return .rejected }
        let changed = present ? value.insert(member).inserted : value.remove(member) != nil
        return changed ? .changed : .unchanged
    }
}

/// ``ReplicationPolicy/merging``: one entry per instance, holding what that
/// instance held when it last wrote; received values are merged in.
final class CustomMerger<Value: ReplicatedMergeable>: EntryMerger {
    var acceptsByStamp: Bool { false }

    func writes(from old: Value, to new: Value, instance: String) -> [EntryWrite] {
        [EntryWrite(entry: instance, payload: new)]
    }

    func payload(of entry: String, in value: Value, instance: String) -> (any Encodable & Sendable)? {
        entry == instance ? value : nil
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        try Value(from: decoder)
    }

    func merge(_ decoded: any Sendable, from instance: String, rebasing: Bool, into value: inout Value) -> MergeOutcome {
        guard let other = decoded as? Value else { return .rejected }
        let merged = value.merged(with: other)
        guard merged != value else { return .unchanged }
        value = merged
        return .changed
    }
}
#endif
