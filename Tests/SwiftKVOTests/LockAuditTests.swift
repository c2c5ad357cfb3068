import Testing
@testable import SwiftKVO

/// Classes no other test touches: their properties, dependent keys and names
/// are resolved (interned) for the first time here.
final class FirstResolved: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \FirstResolved.value, "items": \FirstResolved.items, "next": \FirstResolved.next] }
    @Observed var value = 0
    @ObservedArray var items: [Int] = []
    @Observed var next: FirstResolvedLeaf? = FirstResolvedLeaf()
    var doubled: Int { value * 2 }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\FirstResolved.doubled: [\FirstResolved.value]]
    }
}

final class FirstResolvedLeaf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["label": \FirstResolvedLeaf.label] }
    @Observed var label = ""
}

// No engine writer call — registration, removal, interning, each of which may
// run release callbacks (user deinits) on the calling thread — is made while
// a lock of the Swift layer is held: such a callback taking that lock again
// would deadlock its own thread (debug builds count violations per thread;
// this test runs on one thread from start to end).
@Suite(.needsLayout("its registrations")) struct LockAuditTests {
    @Test func noEngineWriterCallIsMadeUnderASwiftLock() throws {
        #if DEBUG
        let before = LockAudit.violationsOnThisThread
        let object = FirstResolved()
        object.value = 1  // the setter resolves the property and its dependents
        let tokens = [
            try object.observe(\.value) { _, _ in },
            try object.observe(\.doubled) { _, _ in },
            try object.observe(\.items) { _, _ in },
            try object.observe(\.next?.label) { _, _ in },
        ]
        object.mutableArray(\.items).append(1)
        object.next = FirstResolvedLeaf()
        let controller = KVOController(observer: Observer())
        try controller.observe(object, \.value) { _, _, _ in }
        try controller.observe(object, \.next?.label) { _, _, _ in }
        controller.unobserve(object, \.value)
        controller.unobserveAll()
        let hub = NotificationHub.default
        let observer = Observer()
        try hub.addObserver(observer, name: "test.noEngineWriterCallIsMadeUnderASwiftLock", object: object) { _, _ in }
        hub.post(name: "test.noEngineWriterCallIsMadeUnderASwiftLock", object: object)
        hub.removeObserver(observer)
        for token in tokens { token.invalidate() }
        #expect(LockAudit.violationsOnThisThread == before)
        #endif
    }
}
