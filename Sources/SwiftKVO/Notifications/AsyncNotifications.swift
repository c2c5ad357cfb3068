extension NotificationHub {
    /// The notifications named `name` as an async sequence.
    ///
    /// When elements arrive: each notification is taken on the posting
    /// thread, synchronously during the post, and handed to the consumer's
    /// task. Notifications the consumer has not asked for yet wait in a
    /// buffer: by default the newest 1,000 (`.bufferingNewest(1_000)`);
    /// beyond that the *oldest* waiting ones are dropped (see
    /// ``KeyValueObservable/changes(for:options:bufferingPolicy:)`` for why
    /// the newest are kept).
    ///
    /// The sequence ends, and its registration is removed, when the
    /// iterating task is cancelled (at once if it is waiting; buffered
    /// notifications are dropped), when the consumer leaves its loop or
    /// drops its iterator, when the sequence is discarded unused, and when
    /// `object`, if it is a ``KeyValueObservable``, deinitializes (after the
    /// buffered notifications).
    ///
    /// - Parameters:
    ///   - name: The notification name.
    ///   - object: The sender to listen to; `nil` for every sender.
    ///   - bufferingPolicy: How many undelivered notifications to keep, and
    ///     which to drop beyond that. Default `.bufferingNewest(1_000)`.
    /// - Returns: A single-pass sequence of notifications.
    /// - Throws: As ``addObserver(forName:object:using:)``, at the call.
    ///
    /// Thread-safe: may be called from any thread; the posting thread never
    /// waits for the consumer.
    public func notifications(
        named name: Name, object: AnyObject? = nil,
        bufferingPolicy: ObservationBufferingPolicy = .bufferingNewest(1_000)
    ) throws(KVOError) -> Notifications {
        let stream = ObservationStream<HubNotification>(bufferingPolicy: bufferingPolicy)
        let sequence = Notifications(ObservationStreamSequenceLifetime(stream))
        let token = try addObserver(forName: name, object: object) { note in stream.yield(note) }
        stream.bind(token, endingWhenDies: (object as? any KeyValueObservable)?.kvoRegistrar)
        return sequence
    }

    /// Posted notifications, as ``notifications(named:object:bufferingPolicy:)``
    /// yields them.
    ///
    /// A single-pass sequence: its first iterator consumes it, and ending
    /// that iteration (cancellation, leaving the loop, dropping the
    /// iterator) removes the registration at once; a later iterator ends at
    /// once. Never throws.
    public struct Notifications: AsyncSequence, Sendable {
        /// What the sequence yields.
        public typealias Element = HubNotification
        /// The sequence never throws.
        public typealias Failure = Never

        let lifetime: ObservationStreamSequenceLifetime<HubNotification>

        init(_ lifetime: ObservationStreamSequenceLifetime<HubNotification>) { self.lifetime = lifetime }

        /// The stream under the sequence (tests).
        var stream: ObservationStream<HubNotification> { lifetime.stream }

        /// Makes the sequence's iterator; only the first one made yields elements.
        public func makeAsyncIterator() -> Iterator { Iterator(base: ObservationStreamIterator(lifetime)) }

        /// Iterates the notifications. Use from one task; not `Sendable`.
        public struct Iterator: AsyncIteratorProtocol {
            /// What the sequence yields.
            public typealias Element = HubNotification
            /// The sequence never throws.
            public typealias Failure = Never

            var base: ObservationStreamIterator<HubNotification>

            /// The next notification, waiting for one if none is buffered;
            /// `nil` once the sequence ended — at once if the task is cancelled.
            public mutating func next() async -> HubNotification? { await base.next(isolation: nil) }

            /// The next notification, returned on `actor` (the caller's isolation).
            public mutating func next(isolation actor: isolated (any Actor)?) async -> HubNotification? {
                await base.next(isolation: actor)
            }
        }
    }
}

@available(*, unavailable)
extension NotificationHub.Notifications.Iterator: Sendable {}
