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
// own implementations where it overrides. An instance accessor's slot whose
// entry differs is an override (a class property's accessors, as the
// `override class var observableKeyPaths` of a subclass writes, read nothing
// an object stores). For one property, the slot is the one its key path
// names: an overridable property's key path identity is the method
// descriptor of its getter, whose position gives the slot; and a key path to
// a final subclass's override names the implementation in that slot. Where
// that does not apply, the answer is conservative, which only costs speed:
// any overridden accessor of the declaring class counts, and a descriptor
// this reader does not take apart (a generic class with packs, values or
// conditional protocol sets; a resilient superclass; foreign metadata)
// counts as overriding.
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

    /// The vtable of `ancestor` as its context descriptor lays it out, or
    /// `nil` for a descriptor this reader does not take apart.
    private struct VTable {
        /// The address of the first method descriptor.
        let methods: UInt
        /// The metadata word of the first slot.
        let firstSlot: Int
        let count: Int
        let descriptor: UnsafeRawPointer

        init?(of ancestor: AnyClass) {
            let metadata = unsafeBitCast(ancestor, to: UnsafeRawPointer.self)
            let descriptor = metadata.load(fromByteOffset: Layout.descriptionOffset, as: UnsafeRawPointer.self)
            let flags = descriptor.load(as: UInt32.self)
            let typeFlags = flags >> 16
            guard flags & 0x1F == Layout.classKind, typeFlags & Layout.hasResilientSuperclass == 0 else {
                return nil
            }
            guard typeFlags & Layout.hasVTable != 0 else {
                self.init(methods: 0, firstSlot: 0, count: 0, descriptor: descriptor)
                return
            }
            var cursor = Layout.classDescriptorSize
            if flags & Layout.isGeneric != 0 {
                let parameters = Int(descriptor.load(fromByteOffset: cursor + 8, as: UInt16.self))
                let requirements = Int(descriptor.load(fromByteOffset: cursor + 10, as: UInt16.self))
                let genericFlags = descriptor.load(fromByteOffset: cursor + 14, as: UInt16.self)
                guard genericFlags == 0 else { return nil }
                cursor += Layout.genericHeaderSize + ((parameters + 3) & ~3)
                cursor += requirements * Layout.genericRequirementSize
            }
            switch typeFlags & Layout.initializationMask {
            case 0: break
            case Layout.singletonInitialization: cursor += Layout.singletonInitializationSize
            default: return nil
            }
            self.init(
                methods: UInt(bitPattern: descriptor + cursor + 8),
                firstSlot: Int(descriptor.load(fromByteOffset: cursor, as: UInt32.self)),
                count: Int(descriptor.load(fromByteOffset: cursor + 4, as: UInt32.self)),
                descriptor: descriptor)
        }

        private init(methods: UInt, firstSlot: Int, count: Int, descriptor: UnsafeRawPointer) {
            self.methods = methods
            self.firstSlot = firstSlot
            self.count = count
            self.descriptor = descriptor
        }

        /// The flags of method `index`.
        func flags(_ index: Int) -> UInt32 {
            UnsafeRawPointer(bitPattern: methods)!.load(
                fromByteOffset: index * Layout.methodDescriptorSize, as: UInt32.self)
        }

        /// Whether method `index` is an accessor of an instance property (a
        /// class property's accessors read nothing an object stores).
        func isInstanceAccessor(_ index: Int) -> Bool {
            let flags = flags(index)
            return flags & Layout.methodKindMask >= Layout.firstAccessorKind && flags & Layout.isInstance != 0
        }

        /// The index of the method whose descriptor is at `address`, if any.
        func index(ofDescriptorAt address: UInt) -> Int? {
            guard address >= methods, (address - methods) % UInt(Layout.methodDescriptorSize) == 0 else {
                return nil
            }
            let index = Int((address - methods) / UInt(Layout.methodDescriptorSize))
            return index < count ? index : nil
        }

        /// What `type`'s metadata holds in slot `index` (its implementation).
        func implementation(_ index: Int, in type: AnyClass) -> UInt {
            unsafeBitCast(type, to: UnsafeRawPointer.self).load(
                fromByteOffset: (firstSlot + index) * MemoryLayout<UInt>.size, as: UInt.self)
        }
    }

    private static func read(_ subclass: AnyClass, _ ancestor: AnyClass) -> Bool {
        guard let vtable = VTable(of: ancestor) else { return true }
        for index in 0..<vtable.count where vtable.isInstanceAccessor(index) {
            if vtable.implementation(index, in: ancestor) != vtable.implementation(index, in: subclass) {
                return true
            }
        }
        return false
    }

    /// What `subclass` does with the getter of the property of `ancestor`
    /// whose key path identity is `property` (the method descriptor of its
    /// getter, for an overridable property).
    enum GetterOverride: Equatable {
        /// `subclass` reads the property as `ancestor` does.
        case none
        /// `subclass` overrides the getter; a key path to the override has
        /// the identity `identity` (the implementation, for a final class).
        case overridden(identity: UInt)
        /// This reader cannot tell for that property (a final property, a
        /// descriptor it does not take apart): treat any override of
        /// `ancestor`'s accessors (``exist(in:of:)``) as one.
        case unknown
    }

    /// Whether `subclass` overrides the getter of the property `property`
    /// declared by `ancestor`: one vtable slot compared, so an override of
    /// another property does not count.
    static func getter(
        of property: KeyPathComponentID, declaredBy ancestor: AnyClass, in subclass: AnyClass
    ) -> GetterOverride {
        if subclass == ancestor { return .none }
        let key = GetterKey(property: property, ancestor: ObjectIdentifier(ancestor), subclass: ObjectIdentifier(subclass))
        if let known = getterAnswers.withLock({ $0[key] }) { return known }
        var answer = GetterOverride.unknown
        if property.kind == 0, let vtable = VTable(of: ancestor),
            let index = vtable.index(ofDescriptorAt: property.value), vtable.isInstanceAccessor(index)
        {
            let own = vtable.implementation(index, in: subclass)
            answer = own == vtable.implementation(index, in: ancestor) ? .none : .overridden(identity: own)
        }
        getterAnswers.withLock { $0[key] = answer }
        return answer
    }

    /// Whether reading the property whose key path identity is `property`
    /// (declared by `ancestor`) on an instance of `subclass` runs an
    /// override of its getter; any override of `ancestor`'s accessors counts
    /// where the slot cannot be told.
    static func overridesGetter(
        of property: KeyPathComponentID, declaredBy ancestor: AnyClass, in subclass: AnyClass
    ) -> Bool {
        switch getter(of: property, declaredBy: ancestor, in: subclass) {
        case .none: false
        case .overridden: true
        case .unknown: exist(in: subclass, of: ancestor)
        }
    }

    private struct GetterKey: Hashable {
        let property: KeyPathComponentID
        let ancestor: ObjectIdentifier
        let subclass: ObjectIdentifier
    }

    private static let getterAnswers = LockedState([GetterKey: GetterOverride]())
}
