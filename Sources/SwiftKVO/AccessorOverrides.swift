//
// AccessorOverrides.swift — whether a subclass replaces property accessors
// of a class it inherits from, read from type metadata.
//
// An `@Observed` property of a non-final class reaches its wrapper through
// the class's vtable: a subclass that overrides the property's getter
// (`override var name: String { get { super.name.uppercased() } … }`) makes
// `\Base.name` read something other than what the wrapper stores. The values
// a setter announces are the stored ones, so such an object must be observed
// through the key path (as a one-link chain), never as the plain property.
//
// Which it is comes from the declarations, not from any value: the declaring
// class's context descriptor lists its vtable (offset and one method
// descriptor per slot, each saying whether it is a method, an initializer or
// an accessor), and the subclass's metadata holds the same slots, with its
// own implementations where it overrides. An accessor slot whose entry
// differs is an override. The answer is conservative in two ways, both of
// which only cost speed: any overridden accessor of the declaring class
// counts (the slots do not say which property they belong to), and a
// descriptor this reader does not take apart (a generic class with packs,
// values or conditional protocol sets; a resilient superclass; foreign
// metadata) counts as overriding.
//
// Layouts read here are the Swift 5 runtime ABI (stable on Linux):
// class metadata `Description` at byte 40; class context descriptor of 44
// bytes, then its generic header, singleton-initialization record and vtable
// header; 8-byte method descriptors whose low four flag bits are the kind
// and whose fifth says the method is an instance member (a class property's
// accessors are not: overriding them reads nothing an object stores).

import Synchronization

enum AccessorOverrides {
    private struct Pair: Hashable {
        let ancestor: ObjectIdentifier
        let subclass: ObjectIdentifier
    }

    private static let answers = LockedState([Pair: Bool]())

    /// Whether `subclass` (the class itself or one between it and `ancestor`)
    /// replaces an accessor that `ancestor` declares. `false` when they are
    /// the same class.
    static func exist(in subclass: AnyClass, of ancestor: AnyClass) -> Bool {
        if subclass == ancestor { return false }
        let pair = Pair(ancestor: ObjectIdentifier(ancestor), subclass: ObjectIdentifier(subclass))
        if let known = answers.withLock({ $0[pair] }) { return known }
        let found = read(subclass, ancestor)
        answers.withLock { $0[pair] = found }
        return found
    }

    /// Whether `type` is an instantiation of a generic class: its key paths'
    /// components are instantiated per use, each with an accessor address of
    /// its own, so two key paths to one property need not share one.
    static func isGeneric(_ type: AnyClass) -> Bool {
        let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
        let descriptor = metadata.load(fromByteOffset: Layout.descriptionOffset, as: UnsafeRawPointer.self)
        return descriptor.load(as: UInt32.self) & Layout.isGeneric != 0
    }

    private enum Layout {
        static let descriptionOffset = 40
        static let classDescriptorSize = 44
        static let genericHeaderSize = 16
        static let genericRequirementSize = 12
        static let singletonInitializationSize = 12
        static let methodDescriptorSize = 8
        static let classKind: UInt32 = 16
        static let isGeneric: UInt32 = 0x80
        static let hasVTable: UInt32 = 0x8000
        static let hasResilientSuperclass: UInt32 = 0x2000
        static let initializationMask: UInt32 = 0x3
        static let singletonInitialization: UInt32 = 1
        static let methodKindMask: UInt32 = 0xF
        static let firstAccessorKind: UInt32 = 2  // getter; then setter, modify, read…
        static let isInstance: UInt32 = 0x10
    }

    private static func read(_ subclass: AnyClass, _ ancestor: AnyClass) -> Bool {
        let ancestorMetadata = unsafeBitCast(ancestor, to: UnsafeRawPointer.self)
        let subclassMetadata = unsafeBitCast(subclass, to: UnsafeRawPointer.self)
        let descriptor = ancestorMetadata.load(
            fromByteOffset: Layout.descriptionOffset, as: UnsafeRawPointer.self)
        let flags = descriptor.load(as: UInt32.self)
        let typeFlags = flags >> 16
        guard flags & 0x1F == Layout.classKind, typeFlags & Layout.hasResilientSuperclass == 0 else {
            return true
        }
        guard typeFlags & Layout.hasVTable != 0 else { return false }
        var cursor = Layout.classDescriptorSize
        if flags & Layout.isGeneric != 0 {
            let parameters = Int(descriptor.load(fromByteOffset: cursor + 8, as: UInt16.self))
            let requirements = Int(descriptor.load(fromByteOffset: cursor + 10, as: UInt16.self))
            let genericFlags = descriptor.load(fromByteOffset: cursor + 14, as: UInt16.self)
            guard genericFlags == 0 else { return true }
            cursor += Layout.genericHeaderSize + ((parameters + 3) & ~3)
            cursor += requirements * Layout.genericRequirementSize
        }
        switch typeFlags & Layout.initializationMask {
        case 0: break
        case Layout.singletonInitialization: cursor += Layout.singletonInitializationSize
        default: return true
        }
        let vtableOffset = Int(descriptor.load(fromByteOffset: cursor, as: UInt32.self))
        let vtableSize = Int(descriptor.load(fromByteOffset: cursor + 4, as: UInt32.self))
        let methods = cursor + 8
        let wordSize = MemoryLayout<UInt>.size
        for index in 0..<vtableSize {
            let methodFlags = descriptor.load(
                fromByteOffset: methods + index * Layout.methodDescriptorSize, as: UInt32.self)
            // Accessors of instance properties only: a class property's (the
            // `override class var observableKeyPaths` of a subclass) reads
            // nothing an object stores.
            guard methodFlags & Layout.methodKindMask >= Layout.firstAccessorKind,
                methodFlags & Layout.isInstance != 0
            else { continue }
            let slot = (vtableOffset + index) * wordSize
            if ancestorMetadata.load(fromByteOffset: slot, as: UInt.self)
                != subclassMetadata.load(fromByteOffset: slot, as: UInt.self)
            {
                return true
            }
        }
        return false
    }
}
