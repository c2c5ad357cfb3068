// A dotted name through an optional link ("wallet.balance") as a key path. Swift cannot build
// `\Owner.wallet?.balance` from its parts at run time, so key-value coding composes
// `\Owner.wallet` + `\Wallet?.?[optionalLinkTail: \Wallet.balance]`. The shape reader replaces
// that subscript, recognized by its identity and a tail made here, with the tail's components:
// the composed key path is decided, observed and filed as the literal is.

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
