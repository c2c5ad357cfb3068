extension KeyValueObservable {
    /// The changes of `keyPath` as an async sequence: what a change handler
    /// of ``observe(_:options:changeHandler:)`` receives, delivered to a task.
    ///
    /// ```swift
    /// for await change in try inventory.changes(for: \.stock) {
    ///     if change.isInitial { send(snapshot: change.newValue); continue }
    ///     send(delta: change)   // kind, oldValue, newValue, indexes
    /// }
    /// ```
    ///
    /// Each element is an ``ObservedChange``: its ``ObservedChange/kind``,
    /// the old and new values the options ask for, and for a collection
    /// property the affected indexes (an `@ObservedArray`) or the members
    /// added and removed (an `@ObservedSet`) — so a consumer can tell *what*
    /// changed, which ``values(for:bufferingPolicy:)`` (whole values only)
    /// cannot. With the default options the first element is the initial
    /// notification (``ObservedChange/isInitial``, the current value as
    /// `newValue`): a snapshot, then deltas, with no change lost between
    /// reading the snapshot and observing.
    ///
    /// When elements arrive: each change is taken on the thread that made
    /// it, synchronously during the change, and handed to the consumer's
    /// task. Changes the consumer has not asked for yet wait in a buffer: by
    /// default the newest 1,000 (`.bufferingNewest(1_000)`); beyond that the
    /// *oldest* waiting changes are dropped. Every dropped change loses
    /// information, so the default is large enough to ride out a stall, and
    /// keeps the newest: the changes a lagging consumer does receive are the
    /// recent ones, which bring it to the current state soonest. A consumer
    /// that must see every change passes `.unbounded` (and bounds its lag
    /// itself); one that rebuilds its state from a gap can compare each
    /// change's `oldValue` with the previous `newValue`.
    ///
    /// The sequence ends, and its observation is removed, as
    /// ``values(for:bufferingPolicy:)``'s does: on the iterating task's
    /// cancellation (buffered changes are dropped), when the consumer leaves
    /// its loop or drops its iterator, when the sequence is discarded
    /// unused, and when the object deinitializes (after the buffered
    /// changes).
    ///
    /// - Parameters:
    ///   - keyPath: An observable key path (see ``observe(_:options:changeHandler:)``).
    ///   - options: What each change carries, and whether an initial and
    ///     prior notifications are elements too (``ObservingOptions``).
    ///     Default `[.initial, .old, .new]`.
    ///   - bufferingPolicy: How many undelivered changes to keep, and which
    ///     to drop beyond that. Default `.bufferingNewest(1_000)`.
    /// - Returns: A single-pass sequence of changes.
    /// - Throws: The refusals of ``observe(_:options:changeHandler:)``, at
    ///   the call, not as an empty sequence.
    ///
    /// Thread-safe: may be called from any thread; the changing thread never
    /// waits for the consumer.
    public func changes<Value: Sendable>(
        for keyPath: KeyPath<Self, Value>,
        options: ObservingOptions = [.initial, .old, .new],
        bufferingPolicy: ObservationBufferingPolicy = .bufferingNewest(1_000)
    ) throws(KVOError) -> ObservedChanges<Value> {
        let stream = ObservationStream<ObservedChange<Value>>(bufferingPolicy: bufferingPolicy)
        let sequence = ObservedChanges(ObservationStreamSequenceLifetime(stream))
        let token = try observe(keyPath, options: options) { _, change in stream.yield(change) }
        stream.bind(token, endingWhenDies: kvoRegistrar)
        return sequence
    }
}

/// The changes of an observed property, as
/// ``KeyValueObservable/changes(for:options:bufferingPolicy:)`` yields them.
///
/// A single-pass sequence: its first iterator consumes it, and ending that
/// iteration (cancellation, leaving the loop, dropping the iterator) removes
/// the observation at once; a later iterator ends at once. Never throws.
public struct ObservedChanges<Value: Sendable>: AsyncSequence, Sendable {
    /// What the sequence yields.
    public typealias Element = ObservedChange<Value>
    /// The sequence never throws.
    public typealias Failure = Never

    let lifetime: ObservationStreamSequenceLifetime<ObservedChange<Value>>

    init(_ lifetime: ObservationStreamSequenceLifetime<ObservedChange<Value>>) { self.lifetime = lifetime }

    /// The stream under the sequence (tests).
    var stream: ObservationStream<ObservedChange<Value>> { lifetime.stream }

    /// Makes the sequence's iterator; only the first one made yields elements.
    public func makeAsyncIterator() -> Iterator { Iterator(base: ObservationStreamIterator(lifetime)) }

    /// Iterates the changes. Use from one task; not `Sendable`.
    public struct Iterator: AsyncIteratorProtocol {
        /// What the sequence yields.
        public typealias Element = ObservedChange<Value>
        /// The sequence never throws.
        public typealias Failure = Never

        var base: ObservationStreamIterator<ObservedChange<Value>>

        /// The next change, waiting for one if none is buffered; `nil` once
        /// the sequence ended — at once if the task is cancelled.
        public mutating func next() async -> ObservedChange<Value>? { await base.next(isolation: nil) }

        /// The next change, returned on `actor` (the caller's isolation).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> ObservedChange<Value>? {
            await base.next(isolation: actor)
        }
    }
}

@available(*, unavailable)
extension ObservedChanges.Iterator: Sendable {}
