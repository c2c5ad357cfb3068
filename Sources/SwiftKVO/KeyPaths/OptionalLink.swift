//
// OptionalLink.swift — a dotted name through an optional link, as a key path.
//
// `"wallet.balance"`, with `wallet` an optional property, names what the
// literal `\Owner.wallet?.balance` names. Swift offers no way to build that
// optional-chaining key path from its parts at run time (`appending` needs
// the types to meet exactly, and a generic `\W?.?[keyPath: tail]` does not
// compile), so key-value coding builds the equivalent `\Owner.wallet` +
// `\Wallet?.?[optionalLinkTail: \Wallet.balance]`: an optional chain into an
// internal subscript that reads the rest of the path.
//
// To the registry that subscript is not a component of its own: the shape
// reader replaces it with the components of the key path it carries, so the
// composed path has the shape of the literal (`wallet?` then `balance`), is
// decided by the same declarations and observed by the same chain, and a
// ``KVOController`` files both spellings under one entry (it files chains by
// shape). The reader recognizes the subscript only by its identity and a tail
// this file made: any other component with arguments is still a subscript.

/// The component identities and tails of the key paths built here.
enum OptionalLink {
    private struct Made {
        /// Identities of the tail subscript's components (one, in practice;
        /// a set so that a specialization cannot go unrecognized).
        var ids: Set<KeyPathComponentID> = []
        /// Tails carried by a composed key path, by address: the reader
        /// follows no pointer that is not one of them. Kept alive here, as
        /// the key paths that carry them are (names resolve once per process).
        var tails: [UInt: AnyKeyPath] = [:]
    }

    private static let made = LockedState(Made())

    /// `tail` read past an optional link: `\Holder?.?[optionalLinkTail: tail]`,
    /// whose value is the tail's value, made optional once.
    static func linking<Holder: KeyValueObservable, Value>(_ tail: KeyPath<Holder, Value>) -> AnyKeyPath {
        let linked: AnyKeyPath =
            if let optional = Value.self as? any OptionalLinkValue.Type {
                // `Value` is already optional: the chain flattens it, as the
                // literal `\Owner.wallet?.nickname` does.
                optional.linkingOptional(tail, holder: Holder.self)
            } else {
                \Holder?.?[optionalLinkTail: tail]
            }
        guard let id = KeyPathShape.firstArgumentComponentID(of: linked) else { return linked }
        made.withLock { made in
            made.ids.insert(id)
            made.tails[UInt(bitPattern: ObjectIdentifier(tail))] = tail
        }
        return linked
    }

    /// The tail a component with identity `id` and first argument word
    /// `argument` carries, if it is a tail subscript this file made.
    static func tail(id: KeyPathComponentID, argument: UInt) -> AnyKeyPath? {
        made.withLock { $0.ids.contains(id) ? $0.tails[argument] : nil }
    }
}

extension KeyValueObservable {
    /// The value at `tail`: the component ``OptionalLink`` chains into.
    subscript<Value>(optionalLinkTail tail: KeyPath<Self, Value>) -> Value {
        self[keyPath: tail]
    }
}

/// An optional value type, opened to link a tail whose value it is.
protocol OptionalLinkValue {
    /// ``OptionalLink/linking(_:)`` for a tail whose value is optional.
    static func linkingOptional<Holder: KeyValueObservable>(
        _ tail: AnyKeyPath, holder: Holder.Type
    ) -> AnyKeyPath
}

extension Optional: OptionalLinkValue {
    static func linkingOptional<Holder: KeyValueObservable>(
        _ tail: AnyKeyPath, holder _: Holder.Type
    ) -> AnyKeyPath {
        let typed = tail as! KeyPath<Holder, Wrapped?>  // Value == Wrapped?, checked by the caller
        return \Holder?.?[optionalLinkTail: typed]
    }
}
