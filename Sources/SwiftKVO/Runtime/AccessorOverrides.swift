// Whether a subclass overrides an inherited property's getter, read from type metadata. An
// override makes `\Base.name` read something other than the stored value its setter announces,
// so such an object is observed through the key path (a one-link chain). The declaring class's
// context descriptor lists its vtable; the subclass's metadata holds its own implementation in
// an overridden slot, and a property's key path names its getter's slot. A descriptor this
// reader does not take apart counts as overriding: slower, never a wrong value.
//
// Layouts read (the Swift 5 runtime's; Swift promises them on Apple platforms only, on Linux
// they are what the current runtime does): class metadata `Description` at byte 40; a class
// context descriptor of 44 bytes, then its generic header, singleton-initialization record and
// vtable header; 8-byte method descriptors whose low four flag bits are the kind and whose fifth
// marks an instance member (a class property's accessors read nothing an object stores).

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
    /// `true` (read through the key path: slower, never a wrong value) when
    /// the layout did not pass the self-check.
    static func exist(in subclass: AnyClass, of ancestor: AnyClass) -> Bool {
        if subclass == ancestor { return false }
        guard RuntimeLayout.isTrusted else { return true }
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

    /// ``exist(in:of:)``, ungated and uncached (the self-check's own reads).
    static func read(_ subclass: AnyClass, _ ancestor: AnyClass) -> Bool {
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
    /// another property does not count. `.unknown` when the layout did not
    /// pass the self-check.
    static func getter(
        of property: KeyPathComponentID, declaredBy ancestor: AnyClass, in subclass: AnyClass
    ) -> GetterOverride {
        if subclass == ancestor { return .none }
        guard RuntimeLayout.isTrusted else { return .unknown }
        let key = GetterKey(property: property, ancestor: ObjectIdentifier(ancestor), subclass: ObjectIdentifier(subclass))
        if let known = getterAnswers.withLock({ $0[key] }) { return known }
        let answer = readGetter(of: property, declaredBy: ancestor, in: subclass)
        getterAnswers.withLock { $0[key] = answer }
        return answer
    }

    /// ``getter(of:declaredBy:in:)``, ungated and uncached (the self-check's own reads).
    static func readGetter(
        of property: KeyPathComponentID, declaredBy ancestor: AnyClass, in subclass: AnyClass
    ) -> GetterOverride {
        if subclass == ancestor { return .none }
        guard property.kind == 0, let vtable = VTable(of: ancestor),
            let index = vtable.index(ofDescriptorAt: property.value), vtable.isInstanceAccessor(index)
        else { return .unknown }
        let own = vtable.implementation(index, in: subclass)
        return own == vtable.implementation(index, in: ancestor) ? .none : .overridden(identity: own)
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
