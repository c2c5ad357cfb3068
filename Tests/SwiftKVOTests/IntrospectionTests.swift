import Testing

@testable import SwiftKVO

// What is observed can be asked (SPEC §2 item 20).

@Suite struct IntrospectionTests {
    @Test func controllerListsItsObservedObjectsAndKeyPaths() throws {
        let first = Account(name: "a")
        let second = Document(account: Account(name: "b"))
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        try kvo.observe(first, \.name) { _, _, _ in }
        try kvo.observe(first, \.balance) { _, _, _ in }
        try kvo.observe(second, \.account.name) { _, _, _ in }
        #expect(Set(kvo.observedObjects.map(ObjectIdentifier.init)) == [ObjectIdentifier(first), ObjectIdentifier(second)])
        #expect(kvo.observedKeyPaths(of: first) == [\Account.name, \Account.balance])
        #expect(kvo.observedKeyPaths(of: second) == [\Document.account.name])
        #expect(kvo.observedKeyPaths(of: Account()) == [])
        let description = kvo.description
        #expect(description.contains("KVOController<Observer>(observer: Observer)"))
        #expect(description.contains("\\Account.name, \\Account.balance"))
        #expect(description.contains("\\Document.account.name"))
        kvo.unobserve(first, \.name)
        #expect(kvo.observedKeyPaths(of: first) == [\Account.balance])
        withExtendedLifetime(observer) {}
    }

    @Test func engineStatisticsCountObservationsAsTheyComeAndGo() throws {
        let account = Account()
        let tokens = try (0..<5).map { _ in try account.observe(\.name) { _, _ in } }
        // Other suites run beside this one: only what this test holds is certain.
        let during = EngineStatistics.current
        #expect(during.observations >= 5)
        #expect(during.keys >= 1)
        #expect(during.bytesHeld > 0)  // the hub's own structures, at least
        for token in tokens { token.invalidate() }
        _ = Engine.flush()
        #expect(EngineStatistics.current.description.hasPrefix("EngineStatistics(observations: "))
    }

    @Test func refusalsSpellTheKeyPathByName() throws {
        let folder = Folder()
        folder.account = Account(name: "x")
        _ = try folder.observe(\.account?.name) { _, _ in }  // learns the names
        do {
            _ = try folder.observe(\.account?.upperName) { _, _ in }
            Issue.record("a computed leaf was accepted")
        } catch {
            #expect(error.detail?.hasPrefix("\\Folder.account?.<String>:") == true, "\(error)")
        }
    }

    @Test func hubListsAnObserversRegistrationsByName() throws {
        let observer = Observer()
        let sender = Account()
        let long = NotificationHub.Name(rawValue: String(repeating: "n", count: 2_000))
        let hub = NotificationHub.default
        let first = try hub.addObserver(observer, name: "introspection.one") { _, _ in }
        try hub.addObserver(observer, name: "introspection.two", object: sender) { _, _ in }
        try hub.addObserver(observer, name: long) { _, _ in }
        let registrations = hub.registrations(of: observer)
        #expect(registrations.map(\.name) == ["introspection.one", "introspection.two", long])
        #expect(registrations.map(\.filtersSender) == [false, true, false])
        #expect(registrations.first?.registration == first)
        #expect(hub.registrations(of: Observer()).isEmpty)
        hub.removeObserver(observer)
        #expect(hub.registrations(of: observer).isEmpty)
    }
}
