// The box an observation by name registers: the typed observation's resolution, key and
// registration, with a box of its own. Not generic (one generic over types known only at run time
// would build generic metadata on every delivery): a loader made at registration reads the value,
// delivered as `ObservedChange<Any>`.

final class NamedObservation: EngineObservation, @unchecked Sendable {
    let handler: @Sendable (AnyObject, ObservedChange<Any>) -> Void
    let unmanagedKeyPath: Unmanaged<AnyKeyPath>
    /// Copies a value of the property's type from the engine's pointer,
    /// flattened as every value by name (an optional's wrapped value, or `nil`).
    let load: (UnsafeRawPointer) -> Any?
    let readsInitialValue: Bool

    /// - Parameter flattening: Whether `Value` is an optional.
    init<Value>(
        _: Value.Type, unmanagedKeyPath: Unmanaged<AnyKeyPath>, flattening: Bool, readsInitialValue: Bool,
        handler: @escaping @Sendable (AnyObject, ObservedChange<Any>) -> Void
    ) {
        self.handler = handler
        self.unmanagedKeyPath = unmanagedKeyPath
        if flattening {
            self.load = { flattened($0.assumingMemoryBound(to: Value.self).pointee) }
        } else {
            self.load = { $0.assumingMemoryBound(to: Value.self).pointee }
        }
        self.readsInitialValue = readsInitialValue
        super.init { change, box in NamedObservation.deliver(change, to: box) }
    }

    private static func deliver(_ change: EngineChange, to box: EngineObservation) {
        let box = unsafeDowncast(box, to: NamedObservation.self)
        guard let address = change.objectAddress else { return }
        // Values are loaded only where the engine passed them (pointer
        // checks, no comparison of `Any?`s): each load is one copy into an
        // existential, the one cost a name adds to a delivery. The change is
        // built here, its values moved in, and lent to the handler: an `Any?`
        // copied or destroyed costs calls into the runtime's witnesses, so
        // none is copied (capturing them in the closure below would copy both).
        let observed = ObservedChange<Any>(
            delivered: change, load: box.load,
            initialValue: { box.initialValue(change, of: address) }, keyPath: box.unmanagedKeyPath)
        Unmanaged<AnyObject>.fromOpaque(address)._withUnsafeGuaranteedRef { object in
            box.handler(object, observed)
        }
    }

    /// The value an initial notification that asked for `.new` carries (the
    /// engine passes none for Swift keys): read through the key path now.
    private func initialValue(_ change: EngineChange, of address: UnsafeRawPointer) -> Any? {
        guard readsInitialValue, change.isInitial else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(address)._withUnsafeGuaranteedRef {
            flattened(($0 as Any)[keyPath: unmanagedKeyPath.takeUnretainedValue()])
        }
    }
}

extension ObservedChange where Value == Any {
    /// A change by name: each value the engine passed loaded straight into
    /// its field with `load` (no `Any?` temporary, whose copies and
    /// destroys are calls into the runtime); `initialValue` for an initial
    /// notification without one.
    @inline(__always)
    init(
        delivered change: EngineChange, load: (UnsafeRawPointer) -> Any?,
        initialValue: () -> Any?, keyPath: Unmanaged<AnyKeyPath>
    ) {
        self._bits = change.changeBits
        if let pointer = change.raw.pointee.old_value { self.oldValue = load(pointer) } else { self.oldValue = nil }
        if let pointer = change.raw.pointee.new_value {
            self.newValue = load(pointer)
        } else {
            self.newValue = initialValue()
        }
        self._indexes = change.indexes
        self._keyPath = keyPath
    }
}
