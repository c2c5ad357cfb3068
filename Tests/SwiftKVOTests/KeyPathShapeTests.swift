import Testing

@testable import SwiftKVO

// The component reader (KeyPathShape.swift) against key paths whose shape is
// known: it must agree with key path `==` on identity, tell subscripts and
// stored properties from properties, and never guess. Run in the release
// build too (`make unit-release`), where key path literals get thunks of
// their own.

private final class ShapeWallet: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["balance": \ShapeWallet.balance] }
    @Observed var balance = 0.0
    var cents: Double { balance * 100 }
    let fixed = 1
}

private class ShapeOwner: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["wallet": \ShapeOwner.wallet, "name": \ShapeOwner.name] }
    @Observed var wallet: ShapeWallet?
    @Observed var name = ""
    var items: [Int] = []
    subscript(index: Int) -> Int { items[index] }
}

private final class ShapeHeir: ShapeOwner, @unchecked Sendable {
    override var name: String {
        get { super.name.uppercased() }
        set { super.name = newValue }
    }
}

private final class ShapeBox<Tag>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \ShapeBox.value] }
    @Observed var value = 0
    var values: [Int] = []
    subscript(index: Int) -> Int { values[index] }
    static var valueKeyPath: AnyKeyPath { \ShapeBox<Tag>.value }
    static var subscriptKeyPath: AnyKeyPath { \ShapeBox<Tag>.[0] }
}

/// `\Object.name` written where `Object` is a generic parameter: the
/// component captures `Object`'s metadata as an argument.
private func nameKeyPath<Object: ShapeOwner>(of _: Object.Type) -> AnyKeyPath { \Object.name }

private func links(_ keyPath: AnyKeyPath) -> [KeyPathLink]? {
    if case .links(let links) = KeyPathShape.read(keyPath) { return links }
    return nil
}

private func refusal(_ keyPath: AnyKeyPath) -> String? {
    if case .notObservable(let what, _) = KeyPathShape.read(keyPath) { return what }
    return nil
}

@Suite(.needsLayout("its registrations")) struct KeyPathShapeTests {
    @Test func equalKeyPathsHaveEqualIdentities() throws {
        let one = try #require(KeyPathShape.readSingleLink(\ShapeWallet.balance))
        let two = try #require(KeyPathShape.readSingleLink(\ShapeWallet.balance))
        let other = try #require(KeyPathShape.readSingleLink(\ShapeWallet.cents))
        #expect(one.id == two.id)
        #expect(one.id != other.id)
        #expect(ObjectIdentifier(one.valueType) == ObjectIdentifier(Double.self))
        #expect(one.isOptionalChained == false)
    }

    @Test func anInheritedPropertyKeepsItsIdentityAndAnOverrideHasItsOwn() throws {
        let base = try #require(KeyPathShape.readSingleLink(\ShapeOwner.name))
        let override = try #require(KeyPathShape.readSingleLink(\ShapeHeir.name))
        #expect(base.id != override.id)
        let inherited = try #require(KeyPathShape.readSingleLink(\ShapeHeir.wallet))
        #expect(inherited.id == KeyPathShape.readSingleLink(\ShapeOwner.wallet)?.id)
    }

    @Test func anOptionalChainIsReadLinkByLink() throws {
        let chain = try #require(links(\ShapeOwner.wallet?.balance))
        #expect(chain.count == 2)
        #expect(chain[0].isOptionalChained)
        #expect(ObjectIdentifier(chain[0].valueType) == ObjectIdentifier(Optional<ShapeWallet>.self))
        #expect(chain[1].isOptionalChained == false)
        #expect(ObjectIdentifier(chain[1].valueType) == ObjectIdentifier(Double.self))
        #expect(chain[0].id == KeyPathShape.readSingleLink(\ShapeOwner.wallet)?.id)
        #expect(chain[1].id == KeyPathShape.readSingleLink(\ShapeWallet.balance)?.id)
    }

    @Test func subscriptsStoredPropertiesAndForceUnwrapsAreNotLinks() {
        #expect(refusal(\ShapeOwner.[0]) == "a subscript")
        #expect(refusal(\ShapeWallet.fixed) == "a stored property or tuple element that is not @Observed")
        #expect(KeyPathShape.read(\ShapeOwner.wallet!.balance).isForceUnwrapped)
    }

    @Test func aPropertyWrittenInAGenericFunctionIsALink() throws {
        let inFunction = try #require(KeyPathShape.readSingleLink(nameKeyPath(of: ShapeOwner.self)))
        #expect(inFunction.id == KeyPathShape.readSingleLink(\ShapeOwner.name)?.id)
    }

    @Test func aSubscriptOfAGenericClassIsASubscriptWhereverItIsWritten() {
        #expect(refusal(\ShapeBox<Int>.[0]) == "a subscript")
        #expect(refusal(ShapeBox<Int>.subscriptKeyPath) == "a subscript")
    }

    @Test func aGenericClassPropertyWrittenInAGenericContextIsALink() throws {
        // Its component carries the generic arguments, like a subscript's indices.
        let inContext = try #require(KeyPathShape.readSingleLink(ShapeBox<Int>.valueKeyPath))
        let concrete = try #require(KeyPathShape.readSingleLink(\ShapeBox<Int>.value))
        #expect(inContext.id == concrete.id)
        #expect(ShapeBox<Int>.valueKeyPath == \ShapeBox<Int>.value)
    }
}

@Suite(.needsLayout("its registrations")) struct OptionalLinkShapeTests {
    /// What a reading says of a chain: identities and `?` marks.
    private func reading(_ keyPath: AnyKeyPath) -> [String]? {
        links(keyPath)?.map { "\($0.id.value):\($0.id.kind)\($0.isOptionalChained ? "?" : "")" }
    }

    @Test func aTailPastAnOptionalLinkReadsAsTheLiteralOptionalChain() throws {
        // Without the layout no tail is recognized: OptionalLink files none.
        if isFallbackRun {
            #expect(KeyPathShape.firstArgumentComponentID(of: \ShapeOwner.name) == nil)
            return
        }
        let linked = OptionalLink.linking(\ShapeWallet.balance)
        let composed = try #require((\ShapeOwner.wallet as AnyKeyPath).appending(path: linked))
        let literal: AnyKeyPath = \ShapeOwner.wallet?.balance
        #expect(type(of: composed) == type(of: literal))
        #expect(reading(composed) != nil)
        #expect(reading(composed) == reading(literal))
        let typed = try #require(composed as? KeyPath<ShapeOwner, Double?>)
        let owner = ShapeOwner()
        #expect(owner[keyPath: typed] == nil)
        owner.wallet = ShapeWallet()
        owner.wallet?.balance = 2
        #expect(owner[keyPath: typed] == 2)
    }

    @Test func theTailSubscriptWithATailNotMadeByOptionalLinkIsASubscript() {
        // Without the layout no tail is recognized: OptionalLink files none.
        if isFallbackRun {
            #expect(KeyPathShape.firstArgumentComponentID(of: \ShapeOwner.name) == nil)
            return
        }
        // The same subscript, written by hand around a key path it never
        // recorded, is read as any subscript: refused, not followed.
        let handWritten: AnyKeyPath = \ShapeOwner?.?[optionalLinkTail: \ShapeOwner.name]
        #expect(refusal(handWritten) == "a subscript")
        let recorded = OptionalLink.linking(\ShapeWallet.balance)
        #expect(links(recorded)?.count == 1)
    }

    @Test func aTailPastAnOptionalLinkCarriesTheTailsRefusals() {
        // Without the layout no tail is recognized: OptionalLink files none.
        if isFallbackRun {
            #expect(KeyPathShape.firstArgumentComponentID(of: \ShapeOwner.name) == nil)
            return
        }
        let linked = OptionalLink.linking(\ShapeWallet.cents)
        #expect(reading(linked) != nil)  // a computed property reads as a link: declarations refuse it
        let stored = OptionalLink.linking(\ShapeWallet.fixed)
        #expect(refusal(stored) == "a stored property or tuple element that is not @Observed")
    }
}
