// SwiftKVOControllerActionPeer.swift — SwiftKVO's KVOController with
// target-action: `kvo.observe(subject, \.value, options: .new,
// action: Observer.valueDidChange)`, an unbound method reference that the
// controller calls as `action(observer)(change)`. The method is nonisolated,
// so it runs synchronously on the changing thread like the block style (the
// `@MainActor` overloads, which hop, are not measured). Same subject,
// observers and fixtures as the block peer (SwiftKVOControllerBlockPeer.swift).

struct SwiftKVOControllerActionPeer: KVOControllerPeer {
    let id = "swiftkvo-target-action"
    let title = "SwiftKVO KVOController (target-action)"
    let style = KVOControllerStyle.targetAction
}
