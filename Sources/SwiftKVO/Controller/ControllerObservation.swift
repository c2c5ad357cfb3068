// The box a KVOController registers: it calls the block with the observer while the observer
// lives, and removes itself (deferred, lock-free) once it finds the observer gone.

extension Deliveries {
    /// A box calling `block(observer, object, change)` while the observer lives.
    @inlinable
    static func controller<Observer: AnyObject, Object: AnyObject, Value>(
        observer: Observer?, resolved: ResolvedKeyPath,
        options: ObservingOptions,
        block: @escaping @Sendable (Observer, Object, ObservedChange<Value>) -> Void
    ) -> ControllerObservation<Observer, Object, Value> {
        ControllerObservation(
            observer: observer, unmanagedKeyPath: resolved.unmanagedKeyPath,
            readsInitialValue: options.contains(.new), block: block)
    }
}

/// The box of a ``KVOController`` observation, which is also its entry in the
/// controller's table: the weakly held observer, the block and what its
/// changes are built from, read by its delivery function.
@usableFromInline
final class ControllerObservation<Observer: AnyObject, Object: AnyObject, Value>: KVOControllerEntry,
    @unchecked Sendable
{
    /// Written once, by the initializer: reads skip the dynamic exclusivity
    /// check and load the reference in place (a weak reference inside a
    /// struct field would be copied out, and the copy destroyed, on every
    /// delivery).
    @usableFromInline
    @exclusivity(unchecked) weak var observer: Observer?
    @usableFromInline
    let block: @Sendable (Observer, Object, ObservedChange<Value>) -> Void
    /// The registry's key path (immortal), equal to the observed one and so
    /// of its type: held without a reference count.
    @usableFromInline
    let unmanagedKeyPath: Unmanaged<AnyKeyPath>

    @inlinable
    init(
        observer: Observer?, unmanagedKeyPath: Unmanaged<AnyKeyPath>, readsInitialValue: Bool,
        block: @escaping @Sendable (Observer, Object, ObservedChange<Value>) -> Void
    ) {
        self.observer = observer
        self.block = block
        self.unmanagedKeyPath = unmanagedKeyPath
        // Capture nothing: they read the box they are handed (see
        // EngineObservation). Two literal closures, so that neither captures
        // whether the observation asked for `.new`.
        if readsInitialValue {
            super.init { change, box in
                ControllerObservation.deliver(change, to: box, readsInitialValue: true)
            }
        } else {
            super.init { change, box in
                ControllerObservation.deliver(change, to: box, readsInitialValue: false)
            }
        }
    }

    /// The delivery function's body.
    override var observedKeyPath: AnyKeyPath? { unmanagedKeyPath.takeUnretainedValue() }

    @inlinable @inline(__always)
    static func deliver(_ change: EngineChange, to box: EngineObservation, readsInitialValue: Bool) {
        let box = unsafeDowncast(box, to: ControllerObservation<Observer, Object, Value>.self)
        guard let observer = box.observer else {
            // The observer is gone: never call it again; remove without
            // taking the writer lock on this dispatch path.
            Engine.unobserveDeferred(box.token)
            return
        }
        change.withObject(as: Object.self) { object in
            if change.isPlain {
                box.block(observer, object, ObservedChange(plain: change, keyPath: box.unmanagedKeyPath))
            } else {
                box.deliverGeneral(change, of: observer, object, readsInitialValue: readsInitialValue)
            }
        }
    }

    /// Delivers a change that is not ``EngineChange/isPlain``; out of line.
    @inlinable @inline(never)
    func deliverGeneral(
        _ change: EngineChange, of observer: Observer, _ object: Object, readsInitialValue: Bool
    ) {
        Deliveries.deliverGeneral(
            change, of: object,
            keyPath: unsafeDowncast(unmanagedKeyPath.takeUnretainedValue(), to: KeyPath<Object, Value>.self),
            readsInitialValue: readsInitialValue, unmanagedKeyPath: unmanagedKeyPath
        ) { object, change in block(observer, object, change) }
    }
}
