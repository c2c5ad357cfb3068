extension KeyValueObservable {
    /// The values of `keyPath` as an async sequence: the current value first,
    /// then the whole value after every change.
    ///
    /// ```swift
    /// for await name in try account.values(for: \.name) { label.text = name }
    /// ```
    ///
    /// Every element is a whole value of `keyPath`, never a part of one: for
    /// an array (an `@ObservedArray` property, or a chain ending in one) an
    /// insertion, removal or replacement yields the whole array as it stands
    /// after the change, not the affected elements a change handler receives
    /// (see ``ObservedChange``); a removal yields too. To know *what*
    /// changed (old and new, kind, indexes or members), use
    /// ``changes(for:options:bufferingPolicy:)``.
    ///
    /// When elements arrive: each value is taken on the thread that made the
    /// change, synchronously during the change, and handed to the consumer's
    /// task (on its actor, for an actor-isolated consumer — this is the way
    /// to observe from `@MainActor` code). Values the consumer has not asked
    /// for yet wait in a buffer: by default only the newest one
    /// (`.bufferingNewest(1)`), since a later whole value supersedes an
    /// earlier one — a slow consumer skips intermediate values and always
    /// gets the latest.
    ///
    /// The sequence ends, and its observation is removed:
    /// - when the iterating task is cancelled: at once if it is waiting for
    ///   a value (inside the task's `cancel()`), or else when it next asks,
    ///   which returns `nil` — buffered values are dropped, not delivered;
    /// - when the consumer leaves its loop (`break`, `return`, a thrown
    ///   error) or drops its iterator, even while the sequence itself is
    ///   still referenced: the sequence is iterated once;
    /// - when the sequence is discarded without being iterated;
    /// - when the object deinitializes (after the buffered values).
    ///
    /// A long-lived object (one shared by a server's requests) never
    /// deinitializes, so a consumer that should stop must be cancelled or
    /// leave its loop: see <doc:AsyncSequences>.
    ///
    /// - Parameters:
    ///   - keyPath: An observable key path (see ``observe(_:options:changeHandler:)``).
    ///   - bufferingPolicy: How many undelivered values to keep, and which
    ///     to drop beyond that. Default `.bufferingNewest(1)`.
    /// - Returns: A single-pass sequence of values.
    /// - Throws: The refusals of ``observe(_:options:changeHandler:)``
    ///   (``KVOError/unsupportedKeyPath`` and the like), at the call, not as
    ///   an empty sequence.
    ///
    /// Thread-safe: may be called from any thread; the changing thread never
    /// waits for the consumer.
    public func values<Value: Sendable>(
        for keyPath: KeyPath<Self, Value>,
        bufferingPolicy: ObservationBufferingPolicy = .bufferingNewest(1)
    ) throws(KVOError) -> ObservedValues<Value> {
        let stream = ObservationStream<Value>(bufferingPolicy: bufferingPolicy)
        let sequence = ObservedValues(ObservationStreamSequenceLifetime(stream))
        // Key paths are immutable once made, so reading through one from the
        // changing thread is safe; `KeyPath` is just not declared `Sendable`.
        nonisolated(unsafe) let wholeValue = keyPath
        let token = try observe(keyPath, options: [.initial, .new]) { object, change in
            // A setting carries the whole new value. A collection change
            // carries only the affected elements (none for a removal), so
            // the whole value is read, as it stands after the change.
            if change.kind == .setting, let value = change.newValue {
                stream.yield(value)
            } else {
                stream.yield(object[keyPath: wholeValue])
            }
        }
        stream.bind(token, endingWhenDies: kvoRegistrar)
        return sequence
    }
}

/// The values of an observed property, as
/// ``KeyValueObservable/values(for:bufferingPolicy:)`` yields them: the
/// current value, then the whole value after every change.
///
/// A single-pass sequence: its first iterator consumes it, and ending that
/// iteration (cancellation, leaving the loop, dropping the iterator) removes
/// the observation at once; a later iterator ends at once. Never throws.
public struct ObservedValues<Value: Sendable>: AsyncSequence, Sendable {
    /// What the sequence yields.
    public typealias Element = Value
    /// The sequence never throws.
    public typealias Failure = Never

    let lifetime: ObservationStreamSequenceLifetime<Value>

    init(_ lifetime: ObservationStreamSequenceLifetime<Value>) { self.lifetime = lifetime }

    /// The stream under the sequence (tests).
    var stream: ObservationStream<Value> { lifetime.stream }

    /// Makes the sequence's iterator; only the first one made yields elements.
    public func makeAsyncIterator() -> Iterator { Iterator(base: ObservationStreamIterator(lifetime)) }

    /// Iterates the values. Use from one task; not `Sendable`.
    public struct Iterator: AsyncIteratorProtocol {
        /// What the sequence yields.
        public typealias Element = Value
        /// The sequence never throws.
        public typealias Failure = Never

        var base: ObservationStreamIterator<Value>

        /// The next value, waiting for a change if none is buffered; `nil`
        /// once the sequence ended — at once if the task is cancelled.
        public mutating func next() async -> Value? { await base.next(isolation: nil) }

        /// The next value, returned on `actor` (the caller's isolation).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Value? {
            await base.next(isolation: actor)
        }
    }
}

@available(*, unavailable)
extension ObservedValues.Iterator: Sendable {}
