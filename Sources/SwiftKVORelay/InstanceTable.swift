#if Relay
/// What a relay remembers of the other instances it hears: per instance id,
/// its incarnation, its last sequence number, when it was last heard, and the
/// resynchronization it may owe the application.
///
/// Bounded, and every operation is O(1): entries sit on a list ordered by when
/// they were last heard (a doubly linked list over arrays, indexes into
/// `entries`). When the table is full, a new id may take the place of the least
/// recently heard entry only if that one has been idle for `idleTimeout`; an
/// instance that keeps sending is never forgotten, however many ids a client
/// of the database invents. A new id that finds no idle entry is refused
/// (the relay drops its message and counts it).
struct InstanceTable {
    struct Entry {
        var id: String
        var incarnation: UInt64
        var sequence: UInt64
        var lastHeard: ContinuousClock.Instant
        /// The latest send time of its signed messages (wall-clock milliseconds).
        var sent: UInt64 = 0
        /// When the relay last posted a resynchronization for this instance.
        var lastResynchronized: ContinuousClock.Instant?
        /// Missed messages not yet reported (coalesced into the next report).
        var pendingMissed = 0
        /// A new incarnation not yet reported.
        var pendingRestart = false
        fileprivate var previous = -1
        fileprivate var next = -1
    }

    let capacity: Int
    let idleTimeout: Duration
    private(set) var entries: [Entry] = []
    private var indexes: [String: Int] = [:]
    private var free: [Int] = []
    /// Least recently heard.
    private var head = -1
    /// Most recently heard.
    private var tail = -1

    init(capacity: Int, idleTimeout: Duration) {
        self.capacity = max(1, capacity)
        self.idleTimeout = idleTimeout
    }

    var count: Int { indexes.count }

    func index(of id: String) -> Int? { indexes[id] }

    subscript(index: Int) -> Entry {
        get { entries[index] }
        set { entries[index] = newValue }
    }

    /// Marks entry `index` heard `now`: it becomes the most recently heard.
    mutating func touch(_ index: Int, now: ContinuousClock.Instant) {
        entries[index].lastHeard = now
        guard tail != index else { return }
        unlink(index)
        append(index)
    }

    /// Adds `id`, evicting the least recently heard entry if the table is full
    /// and that entry is idle. Returns the new entry's index, or nil if refused.
    mutating func insert(
        _ id: String, incarnation: UInt64, sequence: UInt64, now: ContinuousClock.Instant
    ) -> Int? {
        if indexes.count >= capacity {
            guard head >= 0, now - entries[head].lastHeard >= idleTimeout else { return nil }
            let evicted = head
            unlink(evicted)
            indexes.removeValue(forKey: entries[evicted].id)
            free.append(evicted)
        }
        let entry = Entry(id: id, incarnation: incarnation, sequence: sequence, lastHeard: now)
        let index: Int
        if let reused = free.popLast() {
            entries[reused] = entry
            index = reused
        } else {
            entries.append(entry)
            index = entries.count - 1
        }
        indexes[id] = index
        append(index)
        return index
    }

    private mutating func unlink(_ index: Int) {
        let (previous, next) = (entries[index].previous, entries[index].next)
        if previous >= 0 { entries[previous].next = next } else { head = next }
        if next >= 0 { entries[next].previous = previous } else { tail = previous }
        entries[index].previous = -1
        entries[index].next = -1
    }

    private mutating func append(_ index: Int) {
        entries[index].previous = tail
        entries[index].next = -1
        if tail >= 0 { entries[tail].next = index } else { head = index }
        tail = index
    }
}
#endif
