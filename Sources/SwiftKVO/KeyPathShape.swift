//
// KeyPathShape.swift — the components of a key path, read without evaluating it.
//
// The standard library spells every component of a key path in its
// `debugDescription`: a stored property by name, a computed property or
// subscript as `<computed 0xADDRESS (ValueType)>` (the address of the
// accessor the component calls), an optional chain as `?` and a force-unwrap
// as `!`. An `@Observed` property is a computed property (the wrapper's
// accessors), so an observable key path is made only of computed components
// and `?` marks. Reading the description runs no getter: it can never trap,
// whatever the key path would do on a live object.
//
// Two components with the same accessor address are the same accessor; the
// value type tells which declared property a component can possibly be
// before anything is evaluated (see KeyPathRegistry.swift).

/// One computed component of a key path.
struct KeyPathLink: Hashable {
    /// The address of the accessor the component calls.
    let accessor: UInt
    /// The component's value type, as the standard library prints it.
    let valueTypeName: String
    /// Whether an optional chain (`?`) follows the component.
    let isOptionalChained: Bool
}

/// The components of a key path, or why it cannot be observed.
enum KeyPathShape: Equatable {
    /// Only computed components and optional chains: possibly observable.
    case links([KeyPathLink])
    /// A force-unwrap (`!`): it would trap whenever the link is nil.
    case forceUnwrapped
    /// A component that is not a computed property (a stored `let`/`var`
    /// without `@Observed`, a tuple element) or a description this reader does
    /// not know: never observable. The payload names it.
    case notObservable(String)

    /// Reads the shape of `keyPath` from its description.
    init(of keyPath: AnyKeyPath) {
        let description = keyPath.debugDescription
        let rootName = _typeName(type(of: keyPath).rootType, qualified: false)
        let prefix = "\\" + rootName
        guard description.hasPrefix(prefix) else {
            self = .notObservable(description)
            return
        }
        var rest = description.dropFirst(prefix.count)
        var links: [KeyPathLink] = []
        while let first = rest.first {
            switch first {
            case "?":
                guard let last = links.popLast() else {
                    self = .notObservable(description)
                    return
                }
                links.append(
                    KeyPathLink(
                        accessor: last.accessor, valueTypeName: last.valueTypeName,
                        isOptionalChained: true))
                rest = rest.dropFirst()
            case "!":
                self = .forceUnwrapped
                return
            case ".":
                rest = rest.dropFirst()
                guard let link = Self.computedComponent(&rest) else {
                    let name = rest.prefix { $0 != "." && $0 != "?" && $0 != "!" }
                    self = .notObservable(String(name))
                    return
                }
                links.append(link)
            default:
                self = .notObservable(description)
                return
            }
        }
        self = links.isEmpty ? .notObservable(description) : .links(links)
    }

    /// Reads `<computed 0xADDRESS (Type)>` off the front of `text`.
    private static func computedComponent(_ text: inout Substring) -> KeyPathLink? {
        let opening = "<computed 0x"
        guard text.hasPrefix(opening) else { return nil }
        var cursor = text.dropFirst(opening.count)
        let hex = cursor.prefix { $0.isHexDigit }
        guard let accessor = UInt(hex, radix: 16) else { return nil }
        cursor = cursor.dropFirst(hex.count)
        guard cursor.hasPrefix(" (") else { return nil }
        cursor = cursor.dropFirst(2)
        // The type name runs to the parenthesis that closes the one opened
        // above (type names may hold parentheses of their own: tuples, functions).
        var depth = 1
        var end = cursor.startIndex
        while end < cursor.endIndex {
            if cursor[end] == "(" { depth += 1 }
            if cursor[end] == ")" {
                depth -= 1
                if depth == 0 { break }
            }
            end = cursor.index(after: end)
        }
        guard end < cursor.endIndex else { return nil }
        let typeName = String(cursor[cursor.startIndex..<end])
        cursor = cursor[cursor.index(after: end)...]
        guard cursor.first == ">" else { return nil }
        text = cursor.dropFirst()
        return KeyPathLink(accessor: accessor, valueTypeName: typeName, isOptionalChained: false)
    }

    /// The one computed component of a property's own key path (`\Account.name`).
    static func singleLink(of keyPath: AnyKeyPath) -> KeyPathLink? {
        guard case .links(let links) = KeyPathShape(of: keyPath), links.count == 1 else { return nil }
        return links[0]
    }
}
