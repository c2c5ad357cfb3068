// Key paths and classes of known shape, and what the layout readers must compute for them: the
// declarations say it, so a reader that disagrees is reading a layout this toolchain does not
// have. LayoutSelfCheck.swift runs these once; tests feed it wrong ones to see it fail closed.

/// The shapes the layout readers are checked against.
enum SelfCheckShapes {
    /// One comparison of a reader's answer with a declaration.
    struct Expectation {
        /// What is checked, as a failure names it.
        let name: String
        /// Runs the (ungated) readers and compares.
        let holds: () -> Bool
    }

    final class Account: KeyValueObservable {
        let kvoRegistrar = KVORegistrar()
        @Observed var name = ""
        @Observed var balance = 0.0
        @ObservedArray var entries: [Int] = []
    }

    final class Folder: KeyValueObservable {
        let kvoRegistrar = KVORegistrar()
        @Observed var account = Account()
        @Observed var spare: Account?
    }

    class Base: KeyValueObservable {
        let kvoRegistrar = KVORegistrar()
        @Observed var name = ""
        @Observed var count = 0
    }

    final class Overriding: Base {
        override var name: String {
            get { super.name.uppercased() }
            set { super.name = newValue }
        }
    }

    final class Inheriting: Base {}

    final class Box<Value>: KeyValueObservable {
        let kvoRegistrar = KVORegistrar()
        @Observed var value: Value
        init(_ value: Value) { self.value = value }
    }

    /// A key path with `count` links, optional-chained where `chained` says,
    /// whose last link's value type is `valueType`.
    static func links(
        _ name: String, _ keyPath: AnyKeyPath, count: Int, chained: [Bool] = [], valueType: Any.Type
    ) -> Expectation {
        Expectation(name: name) {
            guard case .links(let links) = KeyPathShape.read(keyPath), links.count == count else { return false }
            let flags = chained.isEmpty ? Array(repeating: false, count: count) : chained
            return links.map(\.isOptionalChained) == flags && links[count - 1].valueType == valueType
        }
    }

    /// Two key paths of one property: one identity.
    static func same(_ name: String, _ first: AnyKeyPath, _ second: AnyKeyPath) -> Expectation {
        Expectation(name: name) {
            guard let one = KeyPathShape.readSingleLink(first), let two = KeyPathShape.readSingleLink(second)
            else { return false }
            return one.id == two.id
        }
    }

    /// Key paths of different properties: different identities.
    static func distinct(_ name: String, _ first: AnyKeyPath, _ second: AnyKeyPath) -> Expectation {
        Expectation(name: name) {
            guard let one = KeyPathShape.readSingleLink(first), let two = KeyPathShape.readSingleLink(second)
            else { return false }
            return one.id != two.id
        }
    }

    /// The `index`th link of `chain` is the property `property` names.
    static func link(_ name: String, _ chain: AnyKeyPath, _ index: Int, is property: AnyKeyPath) -> Expectation {
        Expectation(name: name) {
            guard case .links(let links) = KeyPathShape.read(chain), index < links.count,
                let own = KeyPathShape.readSingleLink(property)
            else { return false }
            return links[index].id == own.id
        }
    }

    /// A key path the reader must refuse (`forceUnwrapped`: as a `!`).
    static func refused(_ name: String, _ keyPath: AnyKeyPath, forceUnwrapped: Bool = false) -> Expectation {
        Expectation(name: name) {
            switch KeyPathShape.read(keyPath) {
            case .forceUnwrapped: forceUnwrapped
            case .notObservable: !forceUnwrapped
            case .links, .unknown: false
            }
        }
    }

    /// Whether `subclass` overrides the getter of `property` (declared by
    /// `declaring`), and if so, that the override is `overriddenBy`'s component.
    static func getter(
        _ name: String, of property: AnyKeyPath, declaredBy declaring: AnyClass, in subclass: AnyClass,
        overriddenBy override: AnyKeyPath?
    ) -> Expectation {
        Expectation(name: name) {
            guard let id = KeyPathShape.readSingleLink(property)?.id else { return false }
            let answer = AccessorOverrides.readGetter(of: id, declaredBy: declaring, in: subclass)
            let any = AccessorOverrides.read(subclass, declaring)
            switch (answer, override) {
            case (.none, nil): return !any
            case (.overridden(let identity), let override?):
                return any && KeyPathComponentID(value: identity, kind: 0) == KeyPathShape.readSingleLink(override)?.id
            default: return false
            }
        }
    }

    /// The observable properties `type` declares or inherits, by name and
    /// value type (an ancestor's fields may be listed again with a subclass's).
    static func declares(_ name: String, _ type: AnyClass, _ properties: [(String, Any.Type)]) -> Expectation {
        Expectation(name: name) {
            var seen = Set<Int>()
            let found = ObservableDeclarations.read(type).filter { seen.insert($0.offset).inserted }
            return found.count == properties.count
                && zip(found.sorted { $0.name < $1.name }, properties.sorted { $0.0 < $1.0 }).allSatisfy {
                    $0.name == $1.0 && $0.valueType == $1.1
                }
        }
    }

    /// What the readers must compute on this toolchain.
    static var expected: [Expectation] {
        [
            links("a stored property is one link", \Account.name, count: 1, valueType: String.self),
            links("an array property is one link", \Account.entries, count: 1, valueType: [Int].self),
            distinct("two properties, two identities", \Account.name, \Account.balance),
            same("an inherited property is its declaration", \Inheriting.name, \Base.name),
            links("a two-link chain", \Folder.account.name, count: 2, valueType: String.self),
            link("a chain's second link is its property", \Folder.account.name, 1, is: \Account.name),
            links(
                "an optional chain", \Folder.spare?.name, count: 2, chained: [true, false],
                valueType: String.self),
            link("an optional chain's link past ? is its property", \Folder.spare?.name, 1, is: \Account.name),
            refused("a force-unwrap", \Folder.spare!.name, forceUnwrapped: true),
            refused("a subscript", \Account.entries[0]),
            refused("\\.self", \Account.self),
            links("a generic root", \Box<Int>.value, count: 1, valueType: Int.self),
            links("another specialization of a generic root", \Box<String>.value, count: 1, valueType: String.self),
            getter(
                "an override is detected", of: \Base.name, declaredBy: Base.self, in: Overriding.self,
                overriddenBy: \Overriding.name),
            getter(
                "an inheriting class overrides nothing", of: \Base.name, declaredBy: Base.self, in: Inheriting.self,
                overriddenBy: nil),
            distinct("an override is a component of its own", \Overriding.name, \Base.name),
            declares(
                "declarations by name and type", Base.self, [("name", String.self), ("count", Int.self)]),
            declares(
                "inherited declarations", Overriding.self, [("name", String.self), ("count", Int.self)]),
        ]
    }
}
