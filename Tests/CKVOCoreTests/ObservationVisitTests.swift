// SPEC §2.20, through ckvo_object_observations_visit: the same listing, handed
// to a visitor inside the read section (so a visitor may read what each
// context points to).

import CKVOCore
import CKVOTestSupport
import Testing

/// Appends each visited observation's token and context to the array `arg` points to.
private let recordingVisitor: ckvo_observation_visitor_t = { info, arg in
    guard let info, let arg else { return }
    arg.assumingMemoryBound(to: [(ckvo_token_t, UnsafeMutableRawPointer?)].self).pointee
        .append((info.pointee.token, info.pointee.context))
}

private func visited(_ hub: OpaquePointer, _ object: UnsafeRawPointer?) -> [(ckvo_token_t, UnsafeMutableRawPointer?)] {
    var seen: [(ckvo_token_t, UnsafeMutableRawPointer?)] = []
    withUnsafeMutablePointer(to: &seen) { seen in
        #expect(ckvo_object_observations_visit(hub, object, recordingVisitor, seen) == CKVO_OK)
    }
    return seen
}

@Suite struct ObservationVisitTests {
    @Test func visitsWhatTheListingCopiesInTheSameOrder() {
        let hub = TestHub()
        let a = hub.key("a"), b = hub.key("b")
        let tokens = [
            hub.mustObserve(Probe(), object: fake(7), key: b),
            hub.mustObserve(Probe(), object: fake(7), key: a),
            hub.mustObserve(Probe(), object: fake(7), key: a),
        ]
        _ = hub.mustObserve(Probe(), object: fake(8), key: a)
        let removed = hub.mustObserve(Probe(), object: fake(7), key: b)
        #expect(hub.unobserve(removed) == CKVO_OK)
        var count = 0
        var copied = [ckvo_observation_info_t](repeating: ckvo_observation_info_t(), count: 8)
        _ = copied.withUnsafeMutableBufferPointer { ckvo_object_observations(hub.raw, fake(7), $0.baseAddress, 8, &count) }
        let seen = visited(hub.raw, fake(7))
        #expect(seen.map(\.0) == copied.prefix(count).map(\.token))
        #expect(seen.map(\.0) == [tokens[1], tokens[2], tokens[0]])
        #expect(seen.map(\.1) == copied.prefix(count).map(\.context))
        #expect(visited(hub.raw, fake(9)).isEmpty)
    }

    @Test func refusesAMissingHubOrVisitor() {
        let hub = TestHub()
        #expect(ckvo_object_observations_visit(nil, fake(1), recordingVisitor, nil) == CKVO_EINVAL)
        #expect(ckvo_object_observations_visit(hub.raw, fake(1), nil, nil) == CKVO_EINVAL)
    }
}
