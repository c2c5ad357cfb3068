import Foundation
import Testing

@testable import SwiftKVO

// What is observed can be asked (SPEC §2 item 20).

@Suite(.needsLayout("its registrations")) struct IntrospectionTests {
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

    @Test func anObjectListsItsObservationsWithKeyOptionsAndObserver() throws {
        let account = Account(name: "a")
        #expect(account.observations.isEmpty)
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let token = try account.observe(\.name, options: [.new, .old]) { _, _ in }
        let named = try account.observe(keyPath: "balance", options: [.prior]) { _, _ in }
        try kvo.observe(account, \.name, options: [.initial]) { _, _, _ in }
        try NotificationHub.default.addObserver(observer, name: "introspection.sent", object: account) { _, _ in }
        let listed = account.observations
        #expect(listed.count == 4)
        #expect(listed.contains(ObservationSummary(key: "name", isDependentKey: false, options: [.new, .old], observer: .token)))
        #expect(listed.contains(ObservationSummary(key: "balance", isDependentKey: false, options: [.prior], observer: .token)))
        #expect(listed.contains(ObservationSummary(key: "name", isDependentKey: false, options: [.initial], observer: .controller)))
        #expect(listed.contains(ObservationSummary(key: "introspection.sent", isDependentKey: false, options: [.new], observer: .hub)))
        // Per key, in registration order.
        #expect(listed.filter { $0.key == "name" }.map(\.observer) == [.token, .controller])
        #expect(listed.first { $0.observer == .token && $0.key == "name" }?.description == "name [new, old] by token")
        token.invalidate()
        named.invalidate()
        kvo.unobserveAll()
        NotificationHub.default.removeObserver(observer)
        #expect(account.observations.isEmpty)
    }

    @Test func chainLinksAndDependentKeysAreListedWhereTheyAreObserved() throws {
        let document = Document(account: Account(name: "a"))
        let chain = try document.observe(\.account.name, options: [.new]) { _, _ in }
        #expect(document.observations == [ObservationSummary(key: "account", isDependentKey: false, options: [.prior], observer: .chain)])
        #expect(document.account.observations == [ObservationSummary(key: "name", isDependentKey: false, options: [.new], observer: .chain)])
        chain.invalidate()
        #expect(document.observations.isEmpty)

        let person = Person()
        let full = try person.observe(\.fullName, options: [.new]) { _, _ in }
        let listed = person.observations
        #expect(listed.count == 1)
        #expect(listed.first?.isDependentKey == true)
        #expect(listed.first?.observer == .token)
        full.invalidate()
    }

    @Test func listingRacesRegistrationWithoutBlockingOrLyingAboutKeys() async throws {
        // Threads register and remove while others list: every listed entry
        // names a key and an observer this test registered, never more than
        // are registered at once.
        let account = Account()
        let rounds = 2_000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<rounds {
                        let token = try? account.observe(\.name) { _, _ in }
                        token?.invalidate()
                    }
                }
            }
            group.addTask {
                for _ in 0..<rounds {
                    let listed = account.observations
                    #expect(listed.count <= 2)
                    #expect(listed.allSatisfy { $0.key == "name" && $0.observer == .token })
                }
            }
        }
        #expect(account.observations.isEmpty)
    }

    @Test func introspectionWhileMutating() throws {
        let owner = AtkOwner()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        try kvo.observe(owner, keyPath: "label") { _, _, _ in
            _ = kvo.description
            _ = kvo.observedKeyPaths(of: owner)
            _ = EngineStatistics.current
        }
        let lock = NSLock()  // the stored value is not atomic; introspection is what contends
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<200 {
                lock.withLock { owner.label = "x" }
                _ = kvo.description
                _ = kvo.observedObjects
            }
        }
        #expect(kvo.observedKeyPaths(of: owner).count == 1)
        #expect(kvo.description.contains("label"))
        _ = NotificationHub.default.registrations(of: observer)
    }
}
