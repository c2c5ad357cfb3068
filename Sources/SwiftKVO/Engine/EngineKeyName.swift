// The names the Swift layer interns engine keys under. The engine caps a name at 1,024 bytes and
// nothing bounds what a user declares, so a name starts with a short identity that alone tells
// keys apart (digits ended by ':', read back from the left), then at most a bounded readable
// prefix of the declaration: no declaration makes a property unobservable (SPEC §2.17).
// Namespaces, none a prefix of another's names:
//   swift:<metatype hex>+<offset>:…   a stored @Observed/@ObservedArray/@ObservedSet property
//   swift-dependent:<serial>:…         a dependent key (DependentKeys.swift)
//   notification:<name>                a notification name that fits
//   notification-long:<serial>         a longer one (NotificationNameKeys.swift)

/// Builds the engine key names of the Swift layer; see the file comment.
enum EngineKeyName {
    /// The most bytes of readable text a name carries per part.
    static let readableLimit = 120

    /// `text`, or its longest prefix of whole Unicode scalars that fits in
    /// ``readableLimit`` bytes with "…" appended.
    static func readable(_ text: String) -> String {
        guard text.utf8.count > readableLimit else { return text }
        let ellipsis = "…"
        var budget = readableLimit - ellipsis.utf8.count
        var end = text.unicodeScalars.startIndex
        for scalar in text.unicodeScalars {
            let width = UTF8.width(scalar)
            guard width <= budget else { break }
            budget -= width
            end = text.unicodeScalars.index(after: end)
        }
        return String(text.unicodeScalars[..<end]) + ellipsis
    }

    /// The name of the stored property that `declaringClass` keeps at byte
    /// `offset`: identified by the class's metatype (never freed, so its
    /// address is unique for the life of the process) and the offset.
    static func property(declaredBy declaringClass: Any.Type, offset: Int, valueType: Any.Type) -> String {
        let identity = UInt(bitPattern: ObjectIdentifier(declaringClass))
        return "swift:" + String(identity, radix: 16) + "+\(offset):"
            + readable(String(reflecting: declaringClass)) + ":" + readable(String(reflecting: valueType))
    }

    /// The name of the dependent key declared as `keyPath`: identified by a
    /// serial number given to each distinct key path (key paths are equal
    /// exactly when they name the same thing from the same root), so two
    /// threads racing on one declaration build one name.
    static func dependent(_ keyPath: AnyKeyPath) -> String {
        let serial = dependentSerials.withLock { serials in
            if let serial = serials.assigned[keyPath] { return serial }
            serials.next += 1
            serials.assigned[keyPath] = serials.next
            return serials.next
        }
        return "swift-dependent:\(serial):" + readable(keyPath.debugDescription)
    }

    private static let dependentSerials = LockedState(
        (assigned: [AnyKeyPath: Int](), next: 0))
}
