//
// NamedObservation.swift — the box an observation by name registers.
//
// An observation by name is the typed observation: the same resolution, the
// same engine key and the same registration (Deliveries.register). Only the
// box differs. The name was turned into a key path whose types are known only
// at run time, so a box generic over them would run unspecialized, building
// generic metadata on every delivery. This one is not generic: it holds a
// loader made once, at registration, for the property's value type, and
// delivers `ObservedChange<Any>`, a concrete type.

final class NamedObservation: EngineObservation, @unchecked Sendable {
    let handler: @Sendable (AnyObject, ObservedChange<Any>) -> Void
    let unmanagedKeyPath: Unmanaged<AnyKeyPath>
    /// Copies a value of the property's type from the engine's pointer.
    let load: (UnsafeRawPointer) -> Any
    let readsInitialValue: Bool

    init<Value>(
        _: Value.Type, unmanagedKeyPath: Unmanaged<AnyKeyPath>, readsInitialValue: Bool,
        handler: @escaping @Sendable (AnyObject, ObservedChange<Any>) -> Void
    ) {
        self.handler = handler
        self.unmanagedKeyPath = unmanagedKeyPath
        self.load = { $0.assumingMemoryBound(to: Value.self).pointee }
        self.readsInitialValue = readsInitialValue
        super.init { change, box in NamedObservation.deliver(change, to: box) }
    }

    private static func deliver(_ change: EngineChange, to box: EngineObservation) {
        let box = unsafeDowncast(box, to: NamedObservation.self)
        guard let address = change.objectAddress else { return }
        // Values are loaded only where the engine passed them (pointer
        // checks, no comparison of `Any?`s): each load is one copy into an
        // existential, the one cost a name adds to a delivery.
        let old: Any? = change.raw.pointee.old_value.map(box.load)
        let new: Any?
        if let pointer = change.raw.pointee.new_value {
            new = box.load(pointer)
        } else if box.readsInitialValue, change.isInitial {
            new = Unmanaged<AnyObject>.fromOpaque(address)._withUnsafeGuaranteedRef {
                ($0 as Any)[keyPath: box.unmanagedKeyPath.takeUnretainedValue()]
            }
        } else {
            new = nil
        }
        Unmanaged<AnyObject>.fromOpaque(address)._withUnsafeGuaranteedRef { object in
            box.handler(
                object,
                ObservedChange(
                    kind: change.kind, oldValue: old, newValue: new, indexes: change.indexes,
                    isPrior: change.isPrior, isInitial: change.isInitial, keyPath: box.unmanagedKeyPath))
        }
    }
}
