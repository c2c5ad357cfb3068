import Synchronization

/// An observation made with ``KeyValueObservable/observe(_:options:changeHandler:)``
/// (or a token-style ``NotificationHub`` registration), ended by
/// ``invalidate()`` or when the token deinitializes — like Foundation's
/// `NSKeyValueObservation`.
///
/// Thread-safe: any method may be called from any thread, any number of times.
///
/// Not `final` only so that an internal subclass can carry what a key-path
/// chain's token needs (its several registrations), while every other token
/// stays a 32-byte heap block: whether an observed object died is
/// asked of the engine, which removed the observation, so the token keeps
/// nothing of the object. The class is not `open`, so it cannot be
/// subclassed outside SwiftKVO.
public class ObservationToken: @unchecked Sendable {  // an atomic and a constant; subclasses are internal and Sendable
    /// The engine token's generation; 0 once invalidated (or for a failed
    /// registration). Whoever exchanges it for 0 removes the observation.
    private let generation: Atomic<UInt64>
    /// The engine token's index, fixed.
    private let index: UInt32

    @usableFromInline
    init(engineToken: EngineToken) {
        generation = Atomic(engineToken.generation)
        index = engineToken.index
    }

    private func engineToken(_ generation: UInt64) -> EngineToken {
        EngineToken(generation: generation, index: index)
    }

    /// Whether the observation is still registered: `true` exactly while
    /// ``invalidate()`` would still remove it.
    ///
    /// `false` once the token was invalidated, and once the observed object
    /// died — its death removes every observation of it (for a key-path
    /// chain: once its root died). A ``NotificationHub`` token for every
    /// sender has no object to die; one whose sender is not
    /// ``KeyValueObservable`` stays registered, and valid, until invalidated,
    /// since such a sender cannot report its death (see
    /// ``NotificationHub/addObserver(forName:object:using:)``).
    ///
    /// Asks the engine (a lock-free lookup of the token); never blocks.
    public var isValid: Bool {
        let live = generation.load(ordering: .acquiring)
        return live != 0 && Engine.isLive(engineToken(live))
    }

    /// Ends the observation. After it returns no notification that starts
    /// later reaches the handler, and a notification in progress on this
    /// thread (when called from the handler) does not reach it again; one in
    /// progress on another thread may still be inside the handler (see
    /// ``invalidateAndWait()``). The handler and what it captures are released
    /// later, after a grace period. Calling it again is a no-op. Never blocks.
    ///
    /// - Returns: `true` if this call removed the observation; `false`
    ///   ("not found") if there was nothing left to remove — already
    ///   invalidated, or an observation the engine already removed because
    ///   the observed object died. Never crashes.
    @discardableResult
    public func invalidate() -> Bool {
        let taken = generation.exchange(0, ordering: .acquiringAndReleasing)
        return taken != 0 && Engine.unobserve(engineToken(taken)) == nil
    }

    /// Ends the observation and **blocks** until no thread can still be
    /// running its handler (`ckvo_unobserve_sync`). Calling it again, or
    /// after ``invalidate()``, is a no-op.
    ///
    /// - Throws: ``KVOError/wouldDeadlock`` when called from inside a
    ///   notification callback (on any observation), where waiting would wait
    ///   for itself; the observation then stays registered — call
    ///   ``invalidate()`` instead. (A key-path chain observation is removed
    ///   without waiting in that case, and still throws.)
    public func invalidateAndWait() throws(KVOError) {
        let taken = generation.exchange(0, ordering: .acquiringAndReleasing)
        guard taken != 0 else { return }
        if let error = Engine.unobserveAndWait(engineToken(taken)) {
            if error == .wouldDeadlock {
                // Nothing was removed: keep the observation registered.
                _ = generation.compareExchange(
                    expected: 0, desired: taken, ordering: .acquiringAndReleasing)
                throw error
            }
        }
    }

    deinit {
        // Usually invalidated already: a load spares the exchange's atomic
        // read-modify-write (nothing else can reach the token any more).
        if generation.load(ordering: .relaxed) != 0 { invalidate() }
    }
}

/// The token of an observation made of several engine registrations (a
/// key-path chain): each method goes to the composite.
final class CompositeObservationToken: ObservationToken, @unchecked Sendable {  // immutable
    private let composite: any CompositeObservation

    init(composite: any CompositeObservation) {
        self.composite = composite
        super.init(engineToken: .none)
    }

    override var isValid: Bool { composite.isActive }

    @discardableResult
    override func invalidate() -> Bool { composite.cancel() }

    override func invalidateAndWait() throws(KVOError) { try composite.cancelAndWait() }

    deinit {
        _ = composite.cancel()
    }
}

/// An observation made of several engine registrations.
protocol CompositeObservation: AnyObject, Sendable {
    var isActive: Bool { get }
    /// Ends the observation; whether this call ended a live one.
    func cancel() -> Bool
    func cancelAndWait() throws(KVOError)
}
