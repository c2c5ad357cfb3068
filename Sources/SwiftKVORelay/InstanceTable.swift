#if Relay
/// What a relay remembers of the other instances it hears: per instance id,
/// the sequence numbers heard (``SequenceLines``), when it was last heard, and
/// the resynchronization it may owe the application.
///
/// Bounded, and every operation is O(1): entries sit on two lists ordered by
/// when they were last heard (doubly linked lists over arrays, indexes into
/// `entries`) — *strangers*, heard in one message so far, and *regulars*.
/// When the table is full, a new id takes the place of the least recently
/// heard entry if that one has been idle for `idleTimeout`. Otherwise:
///
/// - if `admitsBusy` (unsigned messages, where any client can speak for any
///   id anyway), it takes the place of the least recently heard stranger, or
///   if there is none of the least recently heard regular: invented ids churn
///   among themselves and never lock a new instance out;
/// - if not (signed messages), it is refused (the relay drops its message and
///   counts it): an instance that keeps sending is never forgotten, so its
///   messages cannot be replayed as new.
///
/// ``forgottenHeard`` keeps when the latest forgotten entry was last heard:
/// a signed message of an id not tracked, sent before then, may be a replay
/// of a forgotten instance's.
struct InstanceTable {
    struct Entry {
        var id: String
        var lines: SequenceLines
        var lastHeard: ContinuousClock.Instant
        /// Heard in more than one message.
        var isRegular = false
        /// When the relay last posted a resynchronization for this instance.
        var lastResynchronized: ContinuousClock.Instant?
        /// Missed messages not yet reported (coalesced into the next report).
        var pendingMissed = 0
        /// A new incarnation not yet reported.
        var pendingRestart = false
        fileprivate var previous = -1
        fileprivate var next = -1
    }

    /// One list's ends: least and most recently heard.
    private struct Ends {
        var head = -1
        var tail = -1
    }

    let capacity: Int
    let idleTimeout: Duration
    let admitsBusy: Bool
    private(set) var entries: [Entry] = []
    private var indexes: [String: Int] = [:]
    private var free: [Int] = []
    private var strangers = Ends()
    private var regulars = Ends()
    /// When the most recently heard of the forgotten entries was last heard.
    private(set) var forgottenHeard: ContinuousClock.Instant?

    init(capacity: Int, idleTimeout: Duration, admitsBusy: Bool) {
        self.capacity = max(1, capacity)
        self.idleTimeout = idleTimeout
        self.admitsBusy = admitsBusy
    }

    var count: Int { indexes.count }

    func index(of id: String) -> Int? { indexes[id] }

    subscript(index: Int) -> Entry {
        get { entries[index] }
        set { entries[index] = newValue }
    }

    /// Runs `body` on entry `index`'s lines in place (copying the entry out
    /// and back would copy its lines too).
    mutating func withLines<Result>(_ index: Int, _ body: (inout SequenceLines) -> Result) -> Result {
        body(&entries[index].lines)
    }

    /// Marks entry `index` heard `now`: it becomes the most recently heard
    /// regular (a stranger no more).
    mutating func touch(_ index: Int, now: ContinuousClock.Instant) {
        entries[index].lastHeard = now
        guard !(entries[index].isRegular && regulars.tail == index) else { return }
        unlink(index)
        entries[index].isRegular = true
        append(index)
    }

    /// Adds `id` as a stranger, making room as the type's documentation says.
    /// Returns the new entry's index, or nil if refused.
    mutating func insert(_ id: String, lines: SequenceLines, now: ContinuousClock.Instant) -> Int? {
        if indexes.count >= capacity {
            guard let evicted = victim(now: now) else { return nil }
            unlink(evicted)
            indexes.removeValue(forKey: entries[evicted].id)
            free.append(evicted)
            let heard = entries[evicted].lastHeard
            forgottenHeard = max(forgottenHeard ?? heard, heard)
        }
        let entry = Entry(id: id, lines: lines, lastHeard: now)
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

    /// The entry a new id may replace at `now`, if any.
    private func victim(now: ContinuousClock.Instant) -> Int? {
        let heads = [strangers.head, regulars.head].filter { $0 >= 0 }
        if let idlest = heads.min(by: { entries[$0].lastHeard < entries[$1].lastHeard }),
            now - entries[idlest].lastHeard >= idleTimeout
        {
            return idlest
        }
        return admitsBusy ? heads.first : nil
    }

    private mutating func unlink(_ index: Int) {
        let (previous, next) = (entries[index].previous, entries[index].next)
        var ends = entries[index].isRegular ? regulars : strangers
        if previous >= 0 { entries[previous].next = next } else { ends.head = next }
        if next >= 0 { entries[next].previous = previous } else { ends.tail = previous }
        if entries[index].isRegular { regulars = ends } else { strangers = ends }
        entries[index].previous = -1
        entries[index].next = -1
    }

    private mutating func append(_ index: Int) {
        var ends = entries[index].isRegular ? regulars : strangers
        entries[index].previous = ends.tail
        entries[index].next = -1
        if ends.tail >= 0 { entries[ends.tail].next = index } else { ends.head = index }
        ends.tail = index
        if entries[index].isRegular { regulars = ends } else { strangers = ends }
    }
}
#endif
