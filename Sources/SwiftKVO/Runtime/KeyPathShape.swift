// The components of a key path, read from its buffer without evaluating it: no getter runs, so
// reading never traps. The layout is that of Swift's KeyPath.h (promised on Apple platforms only):
// a 32-bit buffer header (size and flags), then per component a 32-bit header (kind and payload)
// and its fields, with the metadata of the component's value type between components. An
// `@Observed` property is a computed component whose identity is the word `==` compares (a final
// property's getter, an overridable one's method descriptor). A component with arguments is a
// subscript, unless its arguments are only the generic arguments a property written in a generic
// context captures. Whatever this reader does not fully understand is "not observable": never
// guessed at, never evaluated.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A computed component's identity: what key path `==` compares.
struct KeyPathComponentID: Hashable {
    /// The identifying word (a getter's or method descriptor's address, or
    /// an offset, as `kind` says).
    let value: UInt
    /// How `value` identifies the property (the component header's ID bits).
    let kind: UInt32
}

/// One computed component of a key path.
struct KeyPathLink {
    /// The accessor's identity.
    let id: KeyPathComponentID
    /// The component's value type.
    let valueType: Any.Type
    /// Whether an optional chain (`?`) follows the component.
    let isOptionalChained: Bool
    /// Whether the component captured generic arguments: formed in generic
    /// code, where it may name a protocol requirement rather than a property.
    var isFormedInGenericCode = false

    /// The value type as written in messages.
    var valueTypeName: String { _typeName(valueType, qualified: false) }
}

/// The components of a key path, or why it cannot be observed.
enum KeyPathShape {
    /// Only computed components without arguments and optional chains:
    /// possibly observable.
    case links([KeyPathLink])
    /// A force-unwrap (`!`): it would trap whenever the link is nil.
    case forceUnwrapped
    /// A component that is no property: the payload says what it is (a
    /// subscript, a stored `let`/`var` without `@Observed`, a tuple element,
    /// a buffer this reader does not know), after the links read before it.
    case notObservable(String, after: [KeyPathLink])
    /// Not read: the layout did not pass the self-check (LayoutSelfCheck.swift).
    case unknown

    var isForceUnwrapped: Bool {
        if case .forceUnwrapped = self { return true }
        return false
    }

    /// The shape of `keyPath`, read from its component buffer; `.unknown`
    /// when the layout did not pass the self-check.
    init(of keyPath: AnyKeyPath) {
        self = RuntimeLayout.isTrusted ? Self.read(keyPath) : .unknown
    }

    /// Reads the shape of `keyPath` from its component buffer, ungated (the
    /// self-check's own reads).
    static func read(_ keyPath: AnyKeyPath) -> KeyPathShape {
        withExtendedLifetime(keyPath) {
            var reader = ComponentReader(keyPath)
            return reader.read(finalValueType: type(of: keyPath).valueType)
        }
    }

    /// The identity of the first component with arguments (a subscript) of
    /// `keyPath`, read up to it; `nil` when the layout is not trusted.
    static func firstArgumentComponentID(of keyPath: AnyKeyPath) -> KeyPathComponentID? {
        guard RuntimeLayout.isTrusted else { return nil }
        return withExtendedLifetime(keyPath) {
            var reader = ComponentReader(keyPath)
            _ = reader.read(finalValueType: type(of: keyPath).valueType)
            return reader.firstArgumentID
        }
    }

    /// The one computed component of a property's own key path
    /// (`\Account.name`); `nil` when the layout is not trusted.
    static func singleLink(of keyPath: AnyKeyPath) -> KeyPathLink? {
        RuntimeLayout.isTrusted ? readSingleLink(keyPath) : nil
    }

    /// ``singleLink(of:)``, ungated.
    static func readSingleLink(_ keyPath: AnyKeyPath) -> KeyPathLink? {
        guard case .links(let links) = read(keyPath), links.count == 1 else { return nil }
        return links[0]
    }
}

/// Walks a key path's component buffer (the constants are the Swift ABI's
/// `_SwiftKeyPath*` values).
private struct ComponentReader {
    private static let bufferSizeMask: UInt32 = 0x00FF_FFFF
    private static let kindShift: UInt32 = 24
    private static let kindMask: UInt32 = 0x7F
    private static let structStored: UInt32 = 1
    private static let computed: UInt32 = 2
    private static let classStored: UInt32 = 3
    private static let optional: UInt32 = 4
    private static let storedPayloadMask: UInt32 = 0x007F_FFFF
    private static let maximumInlineOffset: UInt32 = 0x007F_FFFC
    private static let settable: UInt32 = 0x0040_0000
    private static let idKinds: UInt32 = 0x0030_0000
    private static let hasArguments: UInt32 = 0x0008_0000
    private static let optionalChain: UInt32 = 0
    private static let optionalWrap: UInt32 = 1
    private static let optionalForce: UInt32 = 2
    /// The runtime's witnesses for arguments that are only generic
    /// arguments (`swift_keyPathGenericWitnessTable`); `nil` where the
    /// runtime does not export it (a statically linked standard library),
    /// and then every component with arguments passes on as a link, to be
    /// decided by the declarations and identity steps.
    private static let genericArgumentWitnesses: UInt? = {
        guard let table = dlsym(nil, "swift_keyPathGenericWitnessTable") else { return nil }
        return UInt(bitPattern: table)
    }()

    private var cursor: UnsafeRawPointer
    private let end: UnsafeRawPointer
    /// The identity of the first component with arguments read.
    private(set) var firstArgumentID: KeyPathComponentID?

    init(_ keyPath: AnyKeyPath) {
        // The buffer follows the object's header (metadata and reference
        // counts) and `AnyKeyPath`'s one stored property.
        let object = UnsafeRawPointer(Unmanaged.passUnretained(keyPath).toOpaque())
        let buffer = object + 2 * MemoryLayout<Int>.size + MemoryLayout<UnsafeRawPointer?>.size
        let size = Int(buffer.load(as: UInt32.self) & Self.bufferSizeMask)
        cursor = buffer + MemoryLayout<Int>.size
        end = cursor + size
    }

    mutating func read(finalValueType: Any.Type) -> KeyPathShape {
        var links: [KeyPathLink] = []
        var pendingID: KeyPathComponentID?
        var pendingIsGeneric = false
        var splicedLinks: [KeyPathLink]?
        while cursor < end {
            guard let header = take(UInt32.self) else { return .notObservable("an unreadable key path", after: links) }
            let payload = header & Self.storedPayloadMask
            switch (header >> Self.kindShift) & Self.kindMask {
            case Self.structStored, Self.classStored:
                return .notObservable("a stored property or tuple element that is not @Observed", after: links)
            case Self.computed:
                align()
                // The identity, the getter and, when settable, the setter.
                guard let id = take(UInt.self), take(UInt.self) != nil,
                    header & Self.settable == 0 || take(UInt.self) != nil,
                    id != 0 || header & Self.idKinds != 0
                else { return .notObservable("an unreadable key path", after: links) }
                let componentID = KeyPathComponentID(value: id, kind: header & Self.idKinds)
                if header & Self.hasArguments != 0 {
                    // Their size, their witnesses, then the arguments. A
                    // property captures arguments only when written in a
                    // generic context (the generic arguments it needs), with
                    // the runtime's shared witnesses for them; a subscript's
                    // indices come with witnesses of their own. The one
                    // subscript that is read through is a tail past an
                    // optional link (OptionalLink.swift): its first argument
                    // is the key path it reads, whose components stand in
                    // for it.
                    guard let size = take(Int.self), let witnesses = take(UInt.self), size >= 0,
                        end - cursor >= size
                    else { return .notObservable("an unreadable key path", after: links) }
                    if firstArgumentID == nil { firstArgumentID = componentID }
                    if size >= MemoryLayout<UInt>.size,
                        let tail = OptionalLink.tail(id: componentID, argument: cursor.loadUnaligned(as: UInt.self))
                    {
                        guard case .links(let tailLinks) = KeyPathShape.read(tail) else { return KeyPathShape.read(tail) }
                        splicedLinks = tailLinks
                    } else if let generic = Self.genericArgumentWitnesses, witnesses != generic {
                        return .notObservable("a subscript", after: links)
                    } else {
                        pendingIsGeneric = true
                    }
                    cursor += size
                }
                if splicedLinks == nil { pendingID = componentID }
            case Self.optional where payload == Self.optionalChain:
                // (Leading only where the root is an optional: never an
                // observable class, but the tail OptionalLink.swift makes.)
                if let last = links.popLast() {
                    links.append(
                    KeyPathLink(
                        id: last.id, valueType: last.valueType, isOptionalChained: true,
                        isFormedInGenericCode: last.isFormedInGenericCode))
                }
            case Self.optional where payload == Self.optionalWrap:
                break
            case Self.optional where payload == Self.optionalForce:
                return .forceUnwrapped
            default:
                return .notObservable("an unreadable key path", after: links)
            }
            // Between components: the metadata of the value type of the one just read.
            let valueType: Any.Type
            if cursor < end {
                align()
                guard let word = take(UInt.self), let metadata = UnsafeRawPointer(bitPattern: word) else {
                    return .notObservable("an unreadable key path", after: links)
                }
                valueType = unsafeBitCast(metadata, to: Any.Type.self)
            } else {
                valueType = finalValueType
            }
            if let id = pendingID {
                links.append(
                    KeyPathLink(id: id, valueType: valueType, isOptionalChained: false, isFormedInGenericCode: pendingIsGeneric))
                pendingID = nil
                pendingIsGeneric = false
            }
            if let spliced = splicedLinks {
                links += spliced
                splicedLinks = nil
            }
        }
        guard cursor == end, !links.isEmpty else { return .notObservable("an unreadable key path", after: links) }
        return .links(links)
    }

    /// The next `T`, or `nil` past the end of the buffer.
    private mutating func take<T>(_: T.Type) -> T? {
        guard end - cursor >= MemoryLayout<T>.size else { return nil }
        let value = cursor.loadUnaligned(as: T.self)
        cursor += MemoryLayout<T>.size
        return value
    }

    private mutating func align() {
        let mask = UInt(MemoryLayout<Int>.alignment - 1)
        cursor = UnsafeRawPointer(bitPattern: (UInt(bitPattern: cursor) + mask) & ~mask)!
    }
}
