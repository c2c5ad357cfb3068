// SwiftKVOControllerActionPeer.swift — SwiftKVO's KVOController with
// target-action: `kvo.observe(subject, \.value, options: .new,
// action: Observer.valueDidChange)`, an unbound method reference that the
// controller calls as `action(observer)(change)`. The method is nonisolated,
// so it runs synchronously on the changing thread like the block style (the
// `@MainActor` overloads, which hop, are not measured). Same subject,
// observers and fixtures as the block peer (SwiftKVOControllerBlockPeer.swift).

struct SwiftKVOControllerActionPeer: Peer {
    let id = "swiftkvo-target-action"
    let title = "SwiftKVO KVOController (target-action)"

    typealias F = KVOControllerFixtures

    func makeFanOut(observers: Int) -> (any Fixture)? { F.FanOut(observers: observers, style: .targetAction) }
    func makeManySubjects(subjects: Int) -> (any Fixture)? {
        F.ManySubjects(subjects: subjects, style: .targetAction)
    }
    func makeNoObserverSetter() -> (any Fixture)? { F.FanOut(observers: 0, style: .targetAction) }
    func makeContention(observers: Int) -> (any Fixture)? {
        F.FanOut(observers: observers, style: .targetAction)
    }
    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        F.Churn(observers: observers, concurrentDispatcher: concurrentDispatcher, style: .targetAction)
    }
    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        F.measureMemory(observations: observations, perObject: perObject, style: .targetAction)
    }
}
