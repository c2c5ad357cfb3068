// A table of key paths to properties isolated to a global actor, for a class's nonisolated
// `observableKeyPaths`. Swift forms such a key path only inside the actor's isolation, and the
// table must be readable from any thread. Forming a key path reads type metadata only, never the
// object, so the closure that forms them is called here without the actor: a synchronous closure
// isolated to a global actor has the representation of a nonisolated one (Swift promises no
// closure layout). For any actor but the main actor the closure's type is only known as a string:
// it must be exactly `@Actor () -> Table`, or the table is empty. Unsafe by name: nothing checks
// that the closure only forms key paths, and a build with `-enable-actor-data-race-checks` makes
// it check its executor, which traps off the actor.

extension KeyValueObservable {
    /// The key paths `form` returns, formed outside its main-actor
    /// isolation: the table of a class whose observable properties are
    /// isolated to the main actor (what `@KeyValueObservable` writes for one).
    ///
    /// - Parameter form: A closure that only forms key paths; it runs on the
    ///   thread that reads the table.
    public static func unsafeIsolatedKeyPaths(
        _ form: @MainActor () -> [String: AnyKeyPath]
    ) -> [String: AnyKeyPath] {
        withoutActuallyEscaping(form) { unsafeBitCast($0, to: (() -> [String: AnyKeyPath]).self)() }
    }

    /// The dependent keys `form` returns, formed outside its main-actor
    /// isolation: ``dependentKeyPaths`` of a class whose properties are
    /// isolated to the main actor.
    public static func unsafeIsolatedDependentKeyPaths(
        _ form: @MainActor () -> [AnyKeyPath: [AnyKeyPath]]
    ) -> [AnyKeyPath: [AnyKeyPath]] {
        withoutActuallyEscaping(form) { unsafeBitCast($0, to: (() -> [AnyKeyPath: [AnyKeyPath]]).self)() }
    }

    /// The key paths `form` returns, formed outside its global actor: the
    /// table of a class whose observable properties are isolated to one.
    ///
    /// ```swift
    /// @Ingest final class Feed: KeyValueObservable {
    ///     nonisolated let kvoRegistrar = KVORegistrar()
    ///     nonisolated static var observableKeyPaths: [String: AnyKeyPath] {
    ///         unsafeIsolatedKeyPaths { @Ingest () -> [String: AnyKeyPath] in ["latest": \Feed.latest] }
    ///     }
    ///     @Observed var latest = 0
    /// }
    /// ```
    ///
    /// - Parameter form: A synchronous closure isolated to a global actor,
    ///   its type written in full (`{ @Ingest () -> [String: AnyKeyPath] in … }`),
    ///   that only forms key paths; it runs on the thread that reads the
    ///   table. Anything else (another return type, an `async`, throwing or
    ///   `@isolated(any)` closure, a function returning a closure) gives an
    ///   empty table: the class then has no observable key paths.
    /// - Returns: The table, for any thread. Reading or writing through its
    ///   key paths, by name included, is for the actor's isolation only.
    public static func unsafeIsolatedKeyPaths<Form>(_ form: Form) -> [String: AnyKeyPath] {
        IsolatedTables.formed(by: form, typeName: "Swift.Dictionary<Swift.String, Swift.AnyKeyPath>") ?? [:]
    }

    /// The dependent keys `form` returns, formed outside its global actor:
    /// ``dependentKeyPaths`` of a class whose properties are isolated to
    /// one, as `unsafeIsolatedKeyPaths(_:)` forms ``observableKeyPaths``.
    ///
    /// - Parameter form: A synchronous closure isolated to a global actor,
    ///   its type written in full
    ///   (`{ @Ingest () -> [AnyKeyPath: [AnyKeyPath]] in … }`), that only
    ///   forms key paths; anything else gives no dependent keys.
    public static func unsafeIsolatedDependentKeyPaths<Form>(_ form: Form) -> [AnyKeyPath: [AnyKeyPath]] {
        IsolatedTables.formed(
            by: form, typeName: "Swift.Dictionary<Swift.AnyKeyPath, Swift.Array<Swift.AnyKeyPath>>") ?? [:]
    }
}

enum IsolatedTables {
    /// What `form` returns, when its type is exactly a synchronous closure
    /// isolated to a global actor returning `Table` (spelled `typeName`),
    /// `@Actor () -> Table` with `@Sendable` allowed; `nil` otherwise.
    static func formed<Form, Table>(by form: Form, typeName: String) -> Table? {
        typealias Formed = () -> Table
        guard MemoryLayout<Form>.size == MemoryLayout<Formed>.size,
            isIsolatedClosure(_typeName(Form.self, qualified: true), returning: typeName)
        else { return nil }
        return unsafeBitCast(form, to: Formed.self)()
    }

    /// Whether `type` reads `@A [@Sendable] () -> <returned>`, with `@A` an
    /// attribute without arguments other than `@Sendable`: the spelling of
    /// a global actor's synchronous closure, nothing else.
    static func isIsolatedClosure(_ type: String, returning returned: String) -> Bool {
        var rest = Substring(type)
        var isolated = false
        while rest.hasPrefix("@") {
            guard let end = rest.firstIndex(of: " ") else { return false }
            let attribute = rest[..<end]
            guard !attribute.contains("(") else { return false }
            if attribute != "@Sendable" { isolated = true }
            rest = rest[rest.index(after: end)...]
        }
        return isolated && rest == "() -> " + returned
    }
}
