// SPEC §2.1: options new / old / initial / prior, and none. A delivered change carries only the
// values its options asked for, whatever the announcer passed.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct OptionsTests {
    /// Every combination of the four options: exactly the asked-for notifications, each with
    /// exactly the asked-for values.
    @Test(arguments: 0..<16)
    func deliveredChangeCarriesOnlyRequestedValues(bits: Int) throws {
        let options = ckvo_options_t(bits)
        let hub = TestHub()
        let current = fake(100)
        let cell = try #require(ckvots_cell_create(hub.raw, current))
        defer { ckvots_cell_destroy(cell) }
        let key = hub.key("value", getter: ckvots_cell_getter)
        let object = UnsafeRawPointer(cell)
        let recorder = Recorder()
        let probe = Probe(recorder, id: 1)

        _ = hub.mustObserve(probe, object: object, key: key, options: options)
        #expect(hub.will(object, key, old: fake(1), new: fake(2)) == CKVO_OK)
        #expect(hub.did(object, key, old: fake(1), new: fake(2)) == CKVO_OK)

        let wantsNew = options & CKVO_OPTION_NEW != 0
        let wantsOld = options & CKVO_OPTION_OLD != 0
        var expected: [Event] = []
        if options & CKVO_OPTION_INITIAL != 0 {
            expected.append(event(object, key, isInitial: true, new: wantsNew ? current : nil))
        }
        if options & CKVO_OPTION_PRIOR != 0 {
            expected.append(event(object, key, isPrior: true, old: wantsOld ? fake(1) : nil))
        }
        expected.append(event(object, key, old: wantsOld ? fake(1) : nil, new: wantsNew ? fake(2) : nil))
        #expect(recorder.events.map(\.withoutThread) == expected)
    }

    @Test func noOptionStillCallsOnEveryChangeWithoutValues() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        _ = hub.mustObserve(Probe(recorder, id: 1), object: fake(0), key: key, options: 0)

        hub.will(fake(0), key, old: fake(1), new: fake(2))
        hub.did(fake(0), key, old: fake(1), new: fake(2))
        hub.did(fake(0), key, kind: CKVO_KIND_INSERTION, old: fake(1), new: fake(2), indexes: [0])

        let events = recorder.events
        #expect(events.count == 2, "no prior notification without CKVO_OPTION_PRIOR")
        for e in events {
            #expect(e.oldValue == nil)
            #expect(e.newValue == nil)
            #expect(!e.isPrior && !e.isInitial)
        }
    }

    @Test func priorNotificationNeverCarriesNewValue() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        _ = hub.mustObserve(
            Probe(recorder, id: 1), object: fake(0), key: key,
            options: CKVO_OPTION_NEW | CKVO_OPTION_OLD | CKVO_OPTION_PRIOR)

        hub.will(fake(0), key, kind: CKVO_KIND_REPLACEMENT, old: fake(1), new: fake(2), indexes: [2])

        let events = recorder.events
        #expect(events.count == 1)
        #expect(events.first?.isPrior == true)
        #expect(events.first?.newValue == nil)
        #expect(events.first?.oldValue == fake(1), "a prior notification carries the old value")
        #expect(events.first?.indexes == [2], "a prior notification carries the indexes")
        #expect(events.first?.kind == CKVO_KIND_REPLACEMENT)
    }

    @Test func removalNeverCarriesNewValue() {
        let hub = TestHub()
        let key = hub.key("items")
        let recorder = Recorder()
        _ = hub.mustObserve(
            Probe(recorder, id: 1), object: fake(0), key: key,
            options: CKVO_OPTION_NEW | CKVO_OPTION_OLD | CKVO_OPTION_PRIOR)

        hub.will(fake(0), key, kind: CKVO_KIND_REMOVAL, old: fake(1), new: fake(2), indexes: [4])
        hub.did(fake(0), key, kind: CKVO_KIND_REMOVAL, old: fake(1), new: fake(2), indexes: [4])

        let events = recorder.events
        #expect(events.count == 2)
        for e in events {
            #expect(e.newValue == nil)
            #expect(e.oldValue == fake(1))
            #expect(e.kind == CKVO_KIND_REMOVAL)
        }
    }

    @Test func insertionNeverCarriesOldValue() {
        let hub = TestHub()
        let key = hub.key("items")
        let recorder = Recorder()
        _ = hub.mustObserve(
            Probe(recorder, id: 1), object: fake(0), key: key,
            options: CKVO_OPTION_NEW | CKVO_OPTION_OLD | CKVO_OPTION_PRIOR)

        hub.will(fake(0), key, kind: CKVO_KIND_INSERTION, old: fake(1), new: fake(2), indexes: [0, 1])
        hub.did(fake(0), key, kind: CKVO_KIND_INSERTION, old: fake(1), new: fake(2), indexes: [0, 1])

        let events = recorder.events
        #expect(events.count == 2)
        #expect(events.allSatisfy { $0.oldValue == nil })
        #expect(events.first?.newValue == nil, "prior: no new value")
        #expect(events.last?.newValue == fake(2))
    }

    @Test func initialIsDeliveredDuringObserveWithTheGettersValue() throws {
        let hub = TestHub()
        let cell = try #require(ckvots_cell_create(hub.raw, fake(7)))
        defer { ckvots_cell_destroy(cell) }
        let key = hub.key("value", getter: ckvots_cell_getter)
        let recorder = Recorder()
        let probe = Probe(recorder, id: 1)

        _ = hub.mustObserve(
            probe, object: UnsafeRawPointer(cell), key: key,
            options: CKVO_OPTION_INITIAL | CKVO_OPTION_NEW | CKVO_OPTION_OLD)
        #expect(probe.calls == 1, "delivered before ckvo_observe returned")
        let first = try #require(recorder.events.first)
        #expect(first.isInitial)
        #expect(!first.isPrior)
        #expect(first.kind == CKVO_KIND_SETTING)
        #expect(first.newValue == fake(7))
        #expect(first.oldValue == nil, "never an old value in the initial notification")
        #expect(first.object == UnsafeRawPointer(cell))
        #expect(first.key == key)
        #expect(first.thread == currentThreadID())

        // The getter is read at registration, not captured earlier.
        ckvots_cell_set(cell, fake(8))
        let second = Probe(recorder, id: 2)
        _ = hub.mustObserve(
            second, object: UnsafeRawPointer(cell), key: key,
            options: CKVO_OPTION_INITIAL | CKVO_OPTION_NEW)
        #expect(recorder.events.last?.newValue == fake(8))
        #expect(recorder.events.last?.probe == 2)
    }

    @Test func initialValueIsReadAfterTheObservationIsInstalled() throws {
        let hub = TestHub()
        let cell = try #require(ckvots_cell_create(hub.raw, fake(7)))
        defer { ckvots_cell_destroy(cell) }
        let key = hub.key("value", getter: ckvots_cell_getter)

        _ = hub.mustObserve(
            Probe(), object: UnsafeRawPointer(cell), key: key,
            options: CKVO_OPTION_INITIAL | CKVO_OPTION_NEW)

        #expect(ckvots_cell_getter_calls(cell) == 1)
        #expect(
            ckvots_cell_getter_calls_before_install(cell) == 0,
            "the getter ran while ckvo_has_observers still said no observer")
    }

    @Test func initialWithoutNewOptionCarriesNoValue() throws {
        let hub = TestHub()
        let cell = try #require(ckvots_cell_create(hub.raw, fake(7)))
        defer { ckvots_cell_destroy(cell) }
        let key = hub.key("value", getter: ckvots_cell_getter)
        let recorder = Recorder()

        _ = hub.mustObserve(
            Probe(recorder, id: 1), object: UnsafeRawPointer(cell), key: key,
            options: CKVO_OPTION_INITIAL)

        #expect(recorder.events.count == 1)
        #expect(recorder.events.first?.isInitial == true)
        #expect(recorder.events.first?.newValue == nil)
    }

    @Test func initialOnKeyWithoutGetterCarriesNullValue() {
        let hub = TestHub()
        let key = hub.key("value")  // no getter
        let recorder = Recorder()

        _ = hub.mustObserve(
            Probe(recorder, id: 1), object: fake(0), key: key,
            options: CKVO_OPTION_INITIAL | CKVO_OPTION_NEW)

        #expect(recorder.events.count == 1)
        #expect(recorder.events.first?.isInitial == true)
        #expect(recorder.events.first?.newValue == nil)
    }

    @Test func tokenIsStoredBeforeTheInitialCallback() {
        let hub = TestHub()
        let key = hub.key("value")
        let token = TokenCell()
        let seen = TokenCell()
        let probe = Probe()
        probe.onChange = { _ in seen.pointer.pointee = token.value }

        let status = ckvo_observe(
            hub.raw, fake(0), key, CKVO_OPTION_INITIAL, nil, ckvots_probe_callback, probe.context,
            ckvots_probe_release, token.pointer)

        #expect(status == CKVO_OK)
        #expect(probe.calls == 1)
        #expect(seen.value != .none, "the initial callback saw no token yet")
        #expect(seen.value == token.value)
        #expect(hub.unobserve(token.value) == CKVO_OK)
        hub.flush()
        #expect(probe.releases == 1)
    }

    @Test func unobserveInsideInitialCallbackStopsDelivery() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let token = TokenCell()
        let status = Box<ckvo_status_t?>(nil)
        let probe = Probe()
        probe.onChange = { change in
            if change.pointee.is_initial { status.value = ckvo_unobserve(raw, token.value) }
        }

        #expect(
            ckvo_observe(
                raw, fake(0), key, CKVO_OPTION_INITIAL | CKVO_OPTION_PRIOR, nil,
                ckvots_probe_callback, probe.context, ckvots_probe_release, token.pointer) == CKVO_OK)
        #expect(status.value == CKVO_OK)
        #expect(probe.calls == 1)

        hub.will(fake(0), key)
        hub.did(fake(0), key)
        #expect(probe.calls == 1, "a change reached an observation removed in its initial callback")
        #expect(hub.stats().observations == 0)
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == 1)
    }
}

/// An expected event (thread is not compared: see `withoutThread`).
func event(
    _ object: UnsafeRawPointer?, _ key: ckvo_key_t, probe: UInt64 = 1,
    kind: ckvo_kind_t = CKVO_KIND_SETTING, isPrior: Bool = false, isInitial: Bool = false,
    old: UnsafeRawPointer? = nil, new: UnsafeRawPointer? = nil, indexes: [Int]? = nil
) -> Event {
    Event(
        probe: probe, thread: 0, object: object, oldValue: old, newValue: new, key: key, kind: kind,
        isPrior: isPrior, isInitial: isInitial, indexes: indexes)
}

extension Event {
    var withoutThread: Event {
        var copy = self
        copy.thread = 0
        return copy
    }
}
