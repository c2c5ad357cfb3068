// The end of a notification's path: the box a token observation registers, whose delivery
// function builds the typed `ObservedChange` and calls the user's handler; and the registration
// helpers that create those boxes.

/// The box of a token observation: the handler and what its changes are built
/// from. Its delivery function captures nothing (it reads these fields from
/// the box it is handed), so a delivery is one direct call into it. Four
/// words besides the object header, a 64-byte heap block: whether the
/// observation asked for `.new` is which delivery function it holds.
@usableFromInline
final class HandlerObservation<Object: AnyObject, Value>: EngineObservation, @unchecked Sendable {
    @usableFromInline
    let handler: @Sendable (Object, ObservedChange<Value>) -> Void
    /// The registry's key path (immortal), equal to the observed one and so
    /// of its type: held without a reference count.
    @usableFromInline
    let unmanagedKeyPath: Unmanaged<AnyKeyPath>

    @inlinable
    init(
        unmanagedKeyPath: Unmanaged<AnyKeyPath>, readsInitialValue: Bool,
        handler: @escaping @Sendable (Object, ObservedChange<Value>) -> Void
    ) {
        self.handler = handler
        self.unmanagedKeyPath = unmanagedKeyPath
        // Two literal closures, so that neither captures the flag.
        if readsInitialValue {
            super.init { change, box in
                HandlerObservation.deliver(change, to: box, readsInitialValue: true)
            }
        } else {
            super.init { change, box in
                HandlerObservation.deliver(change, to: box, readsInitialValue: false)
            }
        }
    }

    /// The delivery function's body.
    @inlinable @inline(__always)
    static func deliver(_ change: EngineChange, to box: EngineObservation, readsInitialValue: Bool) {
        let box = unsafeDowncast(box, to: HandlerObservation<Object, Value>.self)
        guard change.isPlain else { return box.deliverGeneral(change, readsInitialValue: readsInitialValue) }
        change.withObject(as: Object.self) { object in
            box.handler(object, ObservedChange(plain: change, keyPath: box.unmanagedKeyPath))
        }
    }

    /// Delivers a change that is not ``EngineChange/isPlain``; out of line.
    @inlinable @inline(never)
    func deliverGeneral(_ change: EngineChange, readsInitialValue: Bool) {
        change.withObject(as: Object.self) { object in
            Deliveries.deliverGeneral(
                change, of: object,
                keyPath: unsafeDowncast(
                    unmanagedKeyPath.takeUnretainedValue(), to: KeyPath<Object, Value>.self),
                readsInitialValue: readsInitialValue, unmanagedKeyPath: unmanagedKeyPath,
                to: handler)
        }
    }
}

/// Registration and delivery helpers, specialized where they are inlined.
@usableFromInline
enum Deliveries {
    /// Delivers a change that is not ``EngineChange/isPlain``. Out of line, so
    /// the fast path of a delivery closure saves no registers for it.
    @inlinable @inline(never)
    static func deliverGeneral<Object: AnyObject, Value>(
        _ change: EngineChange, of object: Object, keyPath: KeyPath<Object, Value>,
        readsInitialValue: Bool, unmanagedKeyPath: Unmanaged<AnyKeyPath>,
        to handler: (Object, ObservedChange<Value>) -> Void
    ) {
        handler(
            object,
            ObservedChange(
                delivered: change, of: object, keyPath: keyPath,
                readsInitialValue: readsInitialValue, unmanagedKeyPath: unmanagedKeyPath))
    }

    /// Observes a key-path chain.
    @usableFromInline
    static func observeChain<Root: KeyValueObservable, Value>(
        _ root: Root, keyPath: KeyPath<Root, Value>, resolved: ResolvedKeyPath,
        options: ObservingOptions, handler: @escaping @Sendable (Root, ObservedChange<Value>) -> Void
    ) throws(KVOError) -> ObservationToken {
        try KeyPathChain<Root, Value>.observe(
            root, keyPath: keyPath, resolved: resolved, options: options, handler: handler)
    }

    /// Registers `box` for `key` of `object` and wraps it in a token. Takes
    /// over the caller's reference to `box`: only the token can remove the
    /// observation, and `object` is held for the call, as
    /// ``Engine/observe(object:key:options:owner:box:)`` requires.
    @inlinable
    static func register<Object: KeyValueObservable>(
        _ object: Object, key: EngineKey, options: ObservingOptions,
        box: consuming EngineObservation
    ) throws(KVOError) -> ObservationToken {
        let registrar = object.kvoRegistrar
        registrar.attach(object)
        return ObservationToken(
            engineToken: try Engine.observe(
                object: Engine.address(object), key: key, options: options, owner: nil, box: box))
    }
}
