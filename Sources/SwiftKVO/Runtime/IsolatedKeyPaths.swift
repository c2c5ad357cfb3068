// A table of key paths to properties isolated to a global actor, for a class's nonisolated
// `observableKeyPaths`. Swift forms such a key path only inside the actor's isolation, and the
// table must be readable from any thread. Forming a key path reads type metadata only, never the
// object, so the closure that forms them is called here without the actor: a synchronous closure
// isolated to a global actor has the representation of a nonisolated one (Swift promises no
// closure layout; the checks below refuse anything else, and the table is then empty).

extension KeyValueObservable {
    /// The key paths `form` returns, formed outside its global actor: the
    /// table of a class whose observable properties are isolated to one.
    ///
    /// ```swift
    /// @Ingest final class Feed: KeyValueObservable {
    ///     nonisolated let kvoRegistrar = KVORegistrar()
    ///     nonisolated static var observableKeyPaths: [String: AnyKeyPath] {
    ///         isolatedKeyPaths { @Ingest () -> [String: AnyKeyPath] in ["latest": \Feed.latest] }
    ///     }
    ///     @Observed var latest = 0
    /// }
    /// ```
    ///
    /// - Parameter form: A synchronous closure isolated to a global actor,
    ///   its type written in full (`{ @Ingest () -> [String: AnyKeyPath] in … }`),
    ///   that only forms key paths. Anything else (another return type, an
    ///   `async`, throwing or `@isolated(any)` closure) gives an empty table:
    ///   the class then has no observable key paths.
    /// - Returns: The table, for any thread. Reading or writing through its
    ///   key paths, by name included, is for the actor's isolation only.
    public static func isolatedKeyPaths<Form>(_ form: Form) -> [String: AnyKeyPath] {
        IsolatedTables.formed(by: form, typeName: "Swift.Dictionary<Swift.String, Swift.AnyKeyPath>") ?? [:]
    }

    /// The dependent keys `form` returns, formed outside its global actor:
    /// ``dependentKeyPaths`` of a class whose properties are isolated to
    /// one, as ``isolatedKeyPaths(_:)`` forms ``observableKeyPaths``.
    ///
    /// - Parameter form: A synchronous closure isolated to a global actor,
    ///   its type written in full
    ///   (`{ @Ingest () -> [AnyKeyPath: [AnyKeyPath]] in … }`), that only
    ///   forms key paths; anything else gives no dependent keys.
    public static func isolatedDependentKeyPaths<Form>(_ form: Form) -> [AnyKeyPath: [AnyKeyPath]] {
        IsolatedTables.formed(
            by: form, typeName: "Swift.Dictionary<Swift.AnyKeyPath, Swift.Array<Swift.AnyKeyPath>>") ?? [:]
    }
}

enum IsolatedTables {
    /// What `form` returns, when it is a synchronous closure isolated to a
    /// global actor returning `Table` (spelled `typeName`); `nil` otherwise.
    static func formed<Form, Table>(by form: Form, typeName: String) -> Table? {
        typealias Formed = () -> Table
        let type = _typeName(Form.self, qualified: true)
        guard MemoryLayout<Form>.size == MemoryLayout<Formed>.size, type.hasPrefix("@"),
            type.hasSuffix("() -> " + typeName), !type.contains("@isolated(any)")
        else { return nil }
        return unsafeBitCast(form, to: Formed.self)()
    }
}
