// What a class declares observable, read from its type metadata through `@_spi(Reflection)`
// `_forEachField`: each `@Observed var name` is a stored field `_name` of a wrapper type, listed
// per class with its offset and type. No instance and no getter: the declaration itself. The
// registry checks each component's value type against these before evaluating any key path.

@_spi(Reflection) import Swift

/// One observable stored property, as its class declares it.
struct ObservableDeclaration {
    /// The property's name (`name` for the field `_name`).
    let name: String
    /// The class that declares the field.
    let declaringClass: AnyClass
    /// The field's offset in that class's instances.
    let offset: Int
    /// The wrapped value's type.
    let valueType: Any.Type
}

enum ObservableDeclarations {
    /// The standard library's `_EachFieldOptions.classType` (a `static var`,
    /// which Swift 6 will not read from nonisolated code; its value is ABI).
    private static let classFields = _EachFieldOptions(rawValue: 1 << 0)

    private static let cache = LockedState([ObjectIdentifier: [ObservableDeclaration]]())

    /// The observable properties of `type` and its superclasses (none for a
    /// type that is not a class, and none read when the layout did not pass
    /// the self-check). Read once per class, then cached.
    static func of(_ type: Any.Type) -> [ObservableDeclaration] {
        guard RuntimeLayout.isTrusted, let type = type as? AnyClass else { return [] }
        if let cached = cache.withLock({ $0[ObjectIdentifier(type)] }) { return cached }
        let declarations = read(type)
        return cache.withLock { cache in
            if let cached = cache[ObjectIdentifier(type)] { return cached }
            cache[ObjectIdentifier(type)] = declarations
            return declarations
        }
    }

    /// ``of(_:)`` for a class, ungated and uncached (the self-check's own reads).
    static func read(_ type: AnyClass) -> [ObservableDeclaration] {
        var declarations: [ObservableDeclaration] = []
        var current: AnyClass? = type
        while let declaring = current {
            _ = _forEachField(of: declaring, options: classFields) { name, offset, fieldType, _ in
                if let storage = fieldType as? any NotifyingStorage.Type {
                    let field = String(cString: name)
                    declarations.append(
                        ObservableDeclaration(
                            name: field.hasPrefix("_") ? String(field.dropFirst()) : field,
                            declaringClass: declaring, offset: offset,
                            valueType: storage.valueType))
                }
                return true
            }
            current = _getSuperclass(declaring)
        }
        return declarations
    }

    /// Whether a component whose value type is `valueType` can be one of the
    /// observable properties of `type`.
    static func declares(_ type: Any.Type, valueType: Any.Type) -> Bool {
        of(type).contains { $0.valueType == valueType }
    }
}

extension NotifyingStorage {
    /// The wrapped value's type.
    static var valueType: Any.Type { Value.self }
}
