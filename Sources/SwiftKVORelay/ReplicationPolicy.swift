#if Relay
/// How concurrent writes of a replicated property combine
/// (``Relay/replicate(_:of:as:merging:isolation:)``).
///
/// A replicated property is made of *entries*, each kept on every instance
/// and in the state table on its own: the whole value, one per dictionary
/// key, one per set member, or one per writing instance. Two instances that
/// write different entries at the same time both keep their write; two that
/// write the same entry settle as the policy says.
///
/// | policy | value | entries | concurrent writes | what it loses if misused |
/// |---|---|---|---|---|
/// | ``lastWriterWins`` | any | the whole value | the newest stamp wins | a collection: every concurrent write but one, whole |
/// | ``perKey()`` | `[Key: Value]` | one per key | per key, the newest wins; a removal is a write | concurrent increments of one key (use ``counterPerKey()``) |
/// | ``perMember()`` | `Set<Member>` | one per member | per member, the newest add or remove wins | nothing for distinct members |
/// | ``counter`` | an integer | one per instance | every instance's increments and decrements add up | assignments: setting 5 where another instance set 7 is a change of −2 here and +7 there |
/// | ``counterPerKey()`` | `[Key: Int…]` | one per key and instance | per key, as ``counter``; a key whose sum is 0 is absent | as ``counter``, per key |
/// | ``merging`` | ``ReplicatedMergeable`` | one per instance | the type's own ``ReplicatedMergeable/merged(with:)`` | whatever the type's merge is not (it must be commutative, associative and idempotent) |
///
/// With every policy, a write made before the relay loaded the property's
/// stored entries (a cold start, a partition) is held, not sent, until they
/// are: it then merges with them as the policy says — it never replaces
/// entries it did not see.
public struct ReplicationPolicy<Value: Codable & Sendable>: Sendable, CustomStringConvertible {
    let name: String
    let makeMerger: @Sendable () -> any EntryMerger<Value>

    /// The policy's name, as in the table above.
    public var description: String { name }

    /// The whole value is one register: the newest write wins (by the
    /// writer's clock stamp, then instance id). Right for scalars; for a
    /// collection it replaces every concurrent change but one.
    public static var lastWriterWins: Self {
        Self(name: "lastWriterWins") { WholeValueMerger<Value>() }
    }
}

extension ReplicationPolicy {
    /// Each key of the dictionary is its own last-writer-wins register;
    /// removing a key is a write of that key.
    public static func perKey<Key, Element>() -> Self
    where Value == [Key: Element], Key: Codable & Hashable & Sendable, Element: Codable & Equatable & Sendable {
        Self(name: "perKey") { PerKeyMerger<Key, Element>() }
    }
}

extension ReplicationPolicy {
    /// Each member of the set is its own last-writer-wins register of
    /// presence: adds and removes of different members all survive.
    public static func perMember<Member>() -> Self
    where Value == Set<Member>, Member: Codable & Hashable & Sendable {
        Self(name: "perMember") { PerMemberMerger<Member>() }
    }
}

extension ReplicationPolicy where Value: FixedWidthInteger {
    /// A counter whose changes add up across instances (a PN-counter): each
    /// instance keeps the sum of its own increases and decreases, and the
    /// value is the total of all instances'. A local assignment counts as
    /// the change it makes (`count += 3` is +3).
    public static var counter: Self {
        Self(name: "counter") { CounterMerger<Value>() }
    }
}

extension ReplicationPolicy {
    /// A dictionary of counters: each key is a ``counter``. A key whose
    /// total is 0 is absent, as in a multiset.
    public static func counterPerKey<Key, Count>() -> Self
    where Value == [Key: Count], Key: Codable & Hashable & Sendable, Count: FixedWidthInteger & Codable & Sendable {
        Self(name: "counterPerKey") { CounterPerKeyMerger<Key, Count>() }
    }
}

extension ReplicationPolicy where Value: ReplicatedMergeable {
    /// The type's own merge: each instance sends what it holds, and
    /// receivers keep `held.merged(with: received)`.
    public static var merging: Self {
        Self(name: "merging") { CustomMerger<Value>() }
    }
}

/// A value that replicas combine with their own merge, for
/// ``ReplicationPolicy/merging``: a state-based CRDT.
///
/// `merged(with:)` must be commutative (`a ⊔ b == b ⊔ a`), associative and
/// idempotent (`a ⊔ a == a`): then every instance ends with the same value
/// whatever order writes arrive in, and however often. A grow-only set or a
/// maximum are; "the sum" is not (use ``ReplicationPolicy/counter``).
public protocol ReplicatedMergeable: Codable, Sendable, Equatable {
    /// This value combined with `other`.
    func merged(with other: Self) -> Self
}
#endif
