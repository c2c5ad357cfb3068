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

/// Who wrote an entry: an instance id and its incarnation (a new one each
/// time a relay starts).
struct Writer: Hashable, Sendable {
    var id: String
    var incarnation: UInt64
}

protocol EntryMerger<Value>: AnyObject {
    associatedtype Value: Codable & Sendable

    /// Whether a received entry is applied only if newer than the last write
    /// of that entry (last writer wins); otherwise it is always merged.
    var acceptsByStamp: Bool { get }

    /// The entries a local change from `old` to `new` wrote, with what to
    /// send; `writer` is this relay.
    func writes(from old: Value, to new: Value, writer: Writer) -> [EntryWrite]

    /// The entries a collection change (an insertion, removal or replacement
    /// through a mutable proxy) wrote: `removed` and `added` are the
    /// elements it took out and put in, `current` reads the value after it.
    func writes(removed: Value?, added: Value?, current: () -> Value, writer: Writer) -> [EntryWrite]

    /// What to send for `entry` given the value held now (a write held for
    /// the first load is sent this way).
    func payload(of entry: String, in value: Value, writer: Writer) -> (any Encodable & Sendable)?

    /// Decodes a received entry: `entry` from the message's `"e"`, the
    /// payload from its `"x"`. Reads no state: called without the lock. An
    /// entry not spelled as this relay would spell it is refused.
    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable

    /// Merges a decoded entry written by `writer` into `value`.
    func merge(_ decoded: any Sendable, from writer: Writer, into value: inout Value) -> MergeOutcome
}

extension EntryMerger {
    /// Collection changes come only from `@ObservedSet` and `@ObservedArray`
    /// properties, which the other policies do not take.
    func writes(removed: Value?, added: Value?, current: () -> Value, writer: Writer) -> [EntryWrite] { [] }
}

/// Entry keys: the JSON text of a dictionary key or set member, spelled one
/// way on every instance. Strings are written in Unicode normal form C (two
/// strings Swift calls equal are one entry), directly, as JSON writes them;
/// integers directly; other keys through JSONEncoder with sorted keys.
enum EntryKey {
    /// The longest entry sent: the state table indexes it.
    static let maximumBytes = 1024

    /// `key`'s spelling; nil if it does not encode (a NaN, say).
    static func encode<Key: Encodable>(_ key: Key) -> String? {
        switch key {
        case let string as String:
            var quoted = ""
            Wire.appendQuoted(string.precomposedStringWithCanonicalMapping, to: &quoted)
            return quoted
        case let int as Int: return String(int)
        default:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (try? encoder.encode([key])).map { String(decoding: $0.dropFirst().dropLast(), as: UTF8.self) }
        }
    }

    /// The key `entry` spells, if it spells it as ``encode(_:)`` would.
    static func decode<Key: Codable>(_ type: Key.Type, from entry: String) throws -> Key {
        let keys = try JSONDecoder().decode([Key].self, from: Data(("[" + entry + "]").utf8))
        // Bytes, not String equality, which holds between spellings in other
        // normal forms: the state table's rows tell them apart.
        guard keys.count == 1, let key = keys.first, let spelled = encode(key), spelled.utf8.elementsEqual(entry.utf8)
        else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not one entry key, spelled as sent"))
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

    func writes(from old: Value, to new: Value, writer: Writer) -> [EntryWrite] {
        [EntryWrite(entry: "", payload: new)]
    }

    func writes(removed: Value?, added: Value?, current: () -> Value, writer: Writer) -> [EntryWrite] {
        [EntryWrite(entry: "", payload: current())]
    }

    func payload(of entry: String, in value: Value, writer: Writer) -> (any Encodable & Sendable)? {
        latest = value
        return value
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        guard entry.isEmpty else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "entry")) }
        return try Value(from: decoder)
    }

    func merge(_ decoded: any Sendable, from writer: Writer, into value: inout Value) -> MergeOutcome {
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

    func writes(from old: Value, to new: Value, writer: Writer) -> [EntryWrite] {
        var writes: [EntryWrite] = []
        for (key, element) in new where old[key] != element {
            if let entry = EntryKey.encode(key) { writes.append(EntryWrite(entry: entry, payload: [element])) }
        }
        for key in old.keys where new[key] == nil {
            if let entry = EntryKey.encode(key) { writes.append(EntryWrite(entry: entry, payload: [Element]())) }
        }
        return writes
    }

    func payload(of entry: String, in value: Value, writer: Writer) -> (any Encodable & Sendable)? {
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

    func merge(_ decoded: any Sendable, from writer: Writer, into value: inout Value) -> MergeOutcome {
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

    func writes(from old: Value, to new: Value, writer: Writer) -> [EntryWrite] {
        writes(removed: old.subtracting(new), added: new.subtracting(old), current: { new }, writer: writer)
    }

    func writes(removed: Value?, added: Value?, current: () -> Value, writer: Writer) -> [EntryWrite] {
        (added ?? []).compactMap { member in EntryKey.encode(member).map { EntryWrite(entry: $0, payload: true) } }
            + (removed ?? []).compactMap { member in EntryKey.encode(member).map { EntryWrite(entry: $0, payload: false) } }
    }

    func payload(of entry: String, in value: Value, writer: Writer) -> (any Encodable & Sendable)? {
        guard let member = try? EntryKey.decode(Member.self, from: entry) else { return nil }
        return value.contains(member)
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        (try EntryKey.decode(Member.self, from: entry), try Bool(from: decoder))
    }

    func merge(_ decoded: any Sendable, from writer: Writer, into value: inout Value) -> MergeOutcome {
        guard let (member, present) = decoded as? (Member, Bool) else { return .rejected }
        let changed = present ? value.insert(member).inserted : value.remove(member) != nil
        return changed ? .changed : .unchanged
    }
}

/// ``ReplicationPolicy/merging``: one entry per instance id, holding what
/// that instance held when it last wrote (after merging what it had loaded,
/// so a restarted instance's entry still holds its earlier writes);
/// received values are merged in.
final class CustomMerger<Value: ReplicatedMergeable>: EntryMerger {
    var acceptsByStamp: Bool { false }

    private static func entry(_ writer: Writer) -> String? { EntryKey.encode(writer.id) }

    func writes(from old: Value, to new: Value, writer: Writer) -> [EntryWrite] {
        Self.entry(writer).map { [EntryWrite(entry: $0, payload: new)] } ?? []
    }

    func payload(of entry: String, in value: Value, writer: Writer) -> (any Encodable & Sendable)? {
        entry == Self.entry(writer) ? value : nil
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        (try EntryKey.decode(String.self, from: entry), try Value(from: decoder))
    }

    func merge(_ decoded: any Sendable, from writer: Writer, into value: inout Value) -> MergeOutcome {
        guard let (owner, other) = decoded as? (String, Value), owner == writer.id else { return .rejected }
        let merged = value.merged(with: other)
        guard merged != value else { return .unchanged }
        value = merged
        return .changed
    }
}
#endif
