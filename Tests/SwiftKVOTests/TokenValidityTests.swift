import Testing
@testable import SwiftKVO

// `ObservationToken.isValid` says whether `invalidate()` would still remove
// something (issue #19 item 9): false once invalidated, and false once the
// observed object died and took its observations with it.

@Suite(.needsLayout("its registrations")) struct TokenValidityTests {
    /// Before: `isValid` stayed `true` after the object died, while
    /// `invalidate()` then returned `false`.
    @Test func tokenIsInvalidOnceItsObservedObjectDied() throws {
        var account: Account? = Account()
        let token = try account!.observe(\.name) { _, _ in }
        #expect(token.isValid)
        account = nil
        #expect(!token.isValid)
        #expect(!token.invalidate())
        #expect(!token.isValid)
    }

    /// A dependent key's token, likewise.
    @Test func dependentKeyTokenIsInvalidOnceItsObservedObjectDied() throws {
        var person: Person? = Person()
        let token = try person!.observe(\.fullName) { _, _ in }
        #expect(token.isValid)
        person = nil
        #expect(!token.isValid)
        #expect(!token.invalidate())
    }

    /// Before: `isValid` stayed `true` after the `KeyValueObservable` sender
    /// died (its registrar removed the registration), while `invalidate()`
    /// then returned `false`.
    @Test func hubTokenIsInvalidOnceItsObservableSenderDied() throws {
        var sender: Account? = Account()
        let token = try NotificationHub.default.addObserver(
            forName: "test.validity.sender", object: sender
        ) { _ in }
        #expect(token.isValid)
        sender = nil
        #expect(!token.isValid)
        #expect(!token.invalidate())
    }

    /// A token for every sender has no object to die: valid until invalidated.
    @Test func hubTokenForEverySenderStaysValidUntilInvalidated() throws {
        let token = try NotificationHub.default.addObserver(forName: "test.validity.any") { _ in }
        do { _ = Account() }
        #expect(token.isValid)
        #expect(token.invalidate())
        #expect(!token.isValid)
    }

    /// A plain (not `KeyValueObservable`) sender cannot report its death: its
    /// registration stays until invalidated, and the token says so.
    @Test func hubTokenForAPlainSenderStaysValidUntilInvalidated() throws {
        var sender: Observer? = Observer()
        let token = try NotificationHub.default.addObserver(
            forName: "test.validity.plain", object: sender
        ) { _ in }
        sender = nil
        #expect(token.isValid)
        #expect(token.invalidate())
        #expect(!token.isValid)
    }

    /// The object living on: the token is valid until invalidated, also from
    /// inside its own initial callback.
    @Test func tokenOfALiveObjectIsValidUntilInvalidated() throws {
        let account = Account()
        let token = try account.observe(\.name, options: .initial) { _, _ in }
        #expect(token.isValid)
        account.name = "x"
        #expect(token.isValid)
        #expect(token.invalidate())
        #expect(!token.isValid)
        withExtendedLifetime(account) {}
    }

    @Test func tokenValidityAfterDeath() throws {
        var owner: AtkOwner? = AtkOwner()
        let plain = try owner!.observe(\.label) { _, _ in }
        let named = try owner!.observe(keyPath: "label") { _, _ in }
        let chain = try owner!.observe(\.wallet?.balance) { _, _ in }
        owner = nil
        #expect(plain.isValid == false)
        #expect(named.isValid == false)
        #expect(chain.isValid == false)
        #expect(plain.invalidate() == false)
        #expect(named.invalidate() == false)
        #expect(chain.invalidate() == false)
    }

    @Test func hubTokenValidityAfterSenderDeath() throws {
        var sender: AtkOwner? = AtkOwner()
        let token = try NotificationHub.default.addObserver(forName: "atk.note", object: sender) { _ in }
        #expect(token.isValid)
        sender = nil
        #expect(token.isValid == false)
        #expect(token.invalidate() == false)
    }
}
