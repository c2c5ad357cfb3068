extension KeyValueObservable {
    /// The values of `keyPath` as an async sequence: the current value first,
    /// then the whole value after every change.
    ///
    /// ```swift
    /// for await name in account.values(for: \.name) { label.text = name }
    /// ```
    ///
    /// Every element is a whole value of `keyPath`, never a part of one: for
    /// an array (an `@ObservedArray` property, or a chain ending in one) an
    /// insertion, removal or replacement yields the whole array as it stands
    /// after the change, not the affected elements a change handler receives
    /// (see ``ObservedChange``); a removal yields too.
    ///
    /// The sequence ends when the object deinitializes, and its observation is
    /// removed when the iterating task is cancelled or the sequence is
    /// discarded. Values are buffered (by default without bound) between the
    /// changing thread and the consumer, so a consumer on an actor (e.g. the
    /// main actor) receives every value on that actor — this is the way to
    /// observe from actor-isolated code.
    ///
    /// - Parameters:
    ///   - keyPath: An observable key path (see ``observe(_:options:changeHandler:)``).
    ///   - bufferingPolicy: How many undelivered values to keep.
    /// - Throws: The refusals of ``observe(_:options:changeHandler:)``
    ///   (``KVOError/unsupportedKeyPath`` and the like), at the call, not as
    ///   an empty sequence.
    public func values<Value: Sendable>(
        for keyPath: KeyPath<Self, Value>,
        bufferingPolicy: AsyncStream<Value>.Continuation.BufferingPolicy = .unbounded
    ) throws(KVOError) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Value.self, bufferingPolicy: bufferingPolicy)
        // Key paths are immutable once made, so reading through one from the
        // changing thread is safe; `KeyPath` is just not declared `Sendable`.
        nonisolated(unsafe) let wholeValue = keyPath
        let token: ObservationToken
        do {
            token = try observe(keyPath, options: [.initial, .new]) { object, change in
                // A setting carries the whole new value. A collection change
                // carries only the affected elements (none for a removal), so
                // the whole value is read, as it stands after the change.
                if change.kind == .setting, let value = change.newValue {
                    continuation.yield(value)
                } else {
                    continuation.yield(object[keyPath: wholeValue])
                }
            }
        } catch {
            continuation.finish()
            throw error
        }
        let registrar = kvoRegistrar
        let handler = registrar.addDeathHandler { continuation.finish() }
        continuation.onTermination = { [weak registrar] _ in
            token.invalidate()
            registrar?.removeDeathHandler(handler)
        }
        return stream
    }
}

extension NotificationHub {
    /// The notifications named `name` as an async sequence.
    ///
    /// The registration is removed when the iterating task is cancelled or the
    /// sequence is discarded; the sequence ends when `object`, if it is a
    /// ``KeyValueObservable``, deinitializes.
    ///
    /// - Parameters:
    ///   - name: The notification name.
    ///   - object: The sender to listen to; `nil` for every sender.
    ///   - bufferingPolicy: How many undelivered notifications to keep.
    /// - Throws: As ``addObserver(forName:object:using:)``, at the call.
    public func notifications(
        named name: Name, object: AnyObject? = nil,
        bufferingPolicy: AsyncStream<HubNotification>.Continuation.BufferingPolicy = .unbounded
    ) throws(KVOError) -> AsyncStream<HubNotification> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: HubNotification.self, bufferingPolicy: bufferingPolicy)
        let token: ObservationToken
        do {
            token = try addObserver(forName: name, object: object) { note in
                continuation.yield(note)
            }
        } catch {
            continuation.finish()
            throw error
        }
        let registrar = (object as? any KeyValueObservable)?.kvoRegistrar
        let handler = registrar?.addDeathHandler { continuation.finish() }
        continuation.onTermination = { [weak registrar] _ in
            token.invalidate()
            if let handler { registrar?.removeDeathHandler(handler) }
        }
        return stream
    }
}
