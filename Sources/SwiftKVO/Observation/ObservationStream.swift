/// The buffer between the thread that makes a change and the one task that
/// consumes an observation's async sequence, and the observation's end.
///
/// Invariants (all under `state`'s lock, which no callout runs under):
/// - A waiting consumer exists only while nothing is buffered.
/// - Once `cancelled` nothing is buffered and nothing is delivered again.
/// - `onTermination` (ending the observation) runs once, on the first of
///   `finish()` and `cancel()`, synchronously in that call and before a
///   waiting consumer is resumed with `nil`: when `next()` returns `nil` the
///   observation is already gone.
/// - Elements leave the buffer (delivered, dropped or discarded) outside the
///   lock, so a deinit they run may change observed values again.
///
/// A consumer that is cancelled while it waits ends the observation inside
/// the canceller's `cancel()` (the task's cancellation handler); one that is
/// cancelled while busy in its loop ends it when it next asks, and receives
/// nothing buffered. Dropping the iterator ends it too (single pass, as
/// swift-nio's `NIOAsyncSequenceProducer`), and so does dropping a sequence
/// never iterated.
final class ObservationStream<Element: Sendable>: Sendable {
    private enum Phase {
        case open
        /// The producer ended (the object died): what is buffered is still delivered.
        case finished
        /// The consumer ended (cancelled, or left): nothing more is delivered.
        case cancelled
    }

    private struct State {
        /// Undelivered elements from `head` on; slots before `head` are nil.
        var buffer: [Element?] = []
        var head = 0
        var waiter: UnsafeContinuation<Element?, Never>?
        var phase = Phase.open
        var claimed = false
        var onTermination: (@Sendable () -> Void)?
        /// Elements that arrived after the end (a change already dispatching
        /// on another thread when the observation ended): dropped.
        var refusedAfterEnd = 0

        var count: Int { buffer.count - head }

        mutating func popFirst() -> Element? {
            guard head < buffer.count else { return nil }
            let element = buffer[head].take()
            head += 1
            if head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64, head * 2 >= buffer.count {
                buffer.removeFirst(head)  // amortized O(1) per element
                head = 0
            }
            return element
        }

        mutating func takeAll() -> [Element?] {
            defer {
                buffer = []
                head = 0
            }
            return buffer
        }
    }

    /// What a yield does after the lock.
    private enum Outcome {
        case resume(UnsafeContinuation<Element?, Never>)
        case buffered
        case dropped(Element?)
    }

    /// What a consumer's request gets.
    private enum Ready {
        case element(Element)
        case end
        case wait
    }

    /// A pthread mutex (``LockedState``), which ThreadSanitizer sees on
    /// Linux; Synchronization's `Mutex` it does not (Swift 6.3).
    private let state = LockedState(State())
    private let limit: ObservationBufferingPolicy.Limit

    init(bufferingPolicy: ObservationBufferingPolicy) {
        limit = bufferingPolicy.limit
    }

    /// Sets what ends the observation; runs it now if the sequence already ended.
    func onTermination(_ body: @escaping @Sendable () -> Void) {
        let endedAlready = state.withLock { state -> Bool in
            guard state.phase == .open else { return true }
            state.onTermination = body
            return false
        }
        if endedAlready { body() }
    }

    /// Delivers `element` to a waiting consumer, or buffers it by the
    /// policy. Called on the changing thread, from the observation's handler.
    func yield(_ element: Element) {
        let outcome = state.withLock { state -> Outcome in
            guard state.phase == .open else {
                state.refusedAfterEnd += 1
                return .dropped(element)
            }
            if let waiter = state.waiter {
                state.waiter = nil
                return .resume(waiter)
            }
            switch limit {
            case .unbounded:
                state.buffer.append(element)
                return .buffered
            case .oldest(let limit):
                guard state.count < limit else { return .dropped(element) }
                state.buffer.append(element)
                return .buffered
            case .newest(let limit):
                guard limit > 0 else { return .dropped(element) }
                let pushedOut = state.count >= limit ? state.popFirst() : nil
                state.buffer.append(element)
                return .dropped(pushedOut)
            }
        }
        if case .resume(let waiter) = outcome { waiter.resume(returning: element) }
        // A dropped element is released here, after the lock.
    }

    /// Ends the sequence from the producer's side (the observed object
    /// died): the consumer still receives what is buffered, then `nil`.
    func finish() {
        let (waiter, onTermination) = state.withLock { state in
            guard state.phase == .open else { return (UnsafeContinuation<Element?, Never>?.none, (@Sendable () -> Void)?.none) }
            state.phase = .finished
            defer {
                state.waiter = nil
                state.onTermination = nil
            }
            return (state.waiter, state.onTermination)
        }
        onTermination?()
        waiter?.resume(returning: nil)
    }

    /// Ends the sequence from the consumer's side (its task was cancelled,
    /// it left its loop, or the sequence was dropped unused): the
    /// observation ends now, the buffer is released now, and `next()`
    /// returns `nil` from now on.
    func cancel() {
        let (waiter, onTermination, discarded) = state.withLock { state in
            guard state.phase != .cancelled else {
                return (UnsafeContinuation<Element?, Never>?.none, (@Sendable () -> Void)?.none, [Element?]())
            }
            state.phase = .cancelled
            defer {
                state.waiter = nil
                state.onTermination = nil
            }
            return (state.waiter, state.onTermination, state.takeAll())
        }
        onTermination?()
        waiter?.resume(returning: nil)
        _ = discarded  // released here, after the lock
    }

    /// Hands the stream to the first iterator only (single pass): a later
    /// iterator ends at once.
    func claim() -> Bool {
        state.withLock { state in
            defer { state.claimed = true }
            return !state.claimed
        }
    }

    /// The last copy of the sequence went: ends it if no iterator took it.
    func sequenceDropped() {
        if state.withLock({ !$0.claimed }) { cancel() }
    }

    /// The next element; `nil` once the sequence ended (at once when the
    /// calling task is cancelled).
    func next(isolation actor: isolated (any Actor)?) async -> Element? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Element?, Never>) in
                let ready = state.withLock { state -> Ready in
                    if let element = state.popFirst() { return .element(element) }
                    // A second consumer at once is outside the contract
                    // (iterators are not Sendable): it gets the end.
                    if state.phase != .open || state.waiter != nil { return .end }
                    state.waiter = continuation
                    return .wait
                }
                switch ready {
                case .element(let element): continuation.resume(returning: element)
                case .end: continuation.resume(returning: nil)
                case .wait: break
                }
            }
        } onCancel: {
            self.cancel()
        }
    }

    /// Whether a consumer is waiting for an element (tests).
    var isAwaitingElement: Bool { state.withLock { $0.waiter != nil } }

    /// How many elements arrived after the sequence ended (tests).
    var refusedAfterEnd: Int { state.withLock { $0.refusedAfterEnd } }
}

extension ObservationStream {
    /// Ties the sequence's end to its observation: ending the sequence ends
    /// `token` (synchronously, in the call that ends it), and the death of
    /// the object `registrar` belongs to ends the sequence.
    func bind(_ token: ObservationToken, endingWhenDies registrar: KVORegistrar?) {
        let deathHandler = registrar?.addDeathHandler { [self] in finish() }
        onTermination { [weak registrar] in
            token.invalidate()
            if let deathHandler { registrar?.removeDeathHandler(deathHandler) }
        }
    }
}

/// Held by every copy of a sequence: dropping the last one, never iterated,
/// ends the observation.
final class ObservationStreamSequenceLifetime<Element: Sendable>: Sendable {
    let stream: ObservationStream<Element>
    init(_ stream: ObservationStream<Element>) { self.stream = stream }
    deinit { stream.sequenceDropped() }
}

/// Held by every copy of an iterator: dropping the last one (leaving the
/// loop) ends the observation.
final class ObservationStreamIteratorLifetime<Element: Sendable>: Sendable {
    let stream: ObservationStream<Element>
    init(_ stream: ObservationStream<Element>) { self.stream = stream }
    deinit { stream.cancel() }
}

/// What every observation sequence's iterator does.
struct ObservationStreamIterator<Element: Sendable> {
    private let lifetime: ObservationStreamIteratorLifetime<Element>?

    init(_ sequence: ObservationStreamSequenceLifetime<Element>) {
        lifetime = sequence.stream.claim() ? ObservationStreamIteratorLifetime(sequence.stream) : nil
    }

    func next(isolation actor: isolated (any Actor)?) async -> Element? {
        guard let lifetime else { return nil }
        return await lifetime.stream.next(isolation: actor)
    }
}
