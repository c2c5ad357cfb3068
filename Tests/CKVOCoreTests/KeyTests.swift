// Keys (SPEC §3): interned names, the same name always the same key in one hub, names copied,
// the first getter kept.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct KeyTests {
    @Test func sameNameYieldsTheSameKey() {
        let hub = TestHub()
        let key = hub.key("balance")
        #expect(key != 0)
        #expect(ckvo_key_intern(hub.raw, "balance", nil) == key)
        #expect(ckvo_key_intern(hub.raw, String("bal") + "ance", nil) == key)
    }

    @Test func differentNamesYieldDifferentKeys() {
        let hub = TestHub()
        let names = (0..<1_000).map { "key.\($0)" } + ["a", "A", "a ", "ä", "balance", "Balance"]
        let keys = names.map { hub.key($0) }
        #expect(Set(keys).count == names.count)
        #expect(!keys.contains(0))
        #expect(hub.stats().keys == names.count)
    }

    @Test func keyNameRoundTrips() {
        let hub = TestHub()
        for name in ["name", "fullName", "ä-ö-ü", "with space", String(repeating: "x", count: 1023)] {
            let key = hub.key(name)
            let stored = ckvo_key_name(hub.raw, key)
            #expect(stored.map { String(cString: $0) } == name)
        }
    }

    @Test func keyNameIsCopied() {
        let hub = TestHub()
        var buffer = Array("transient".utf8CString)
        let key = buffer.withUnsafeBufferPointer { ckvo_key_intern(hub.raw, $0.baseAddress, nil) }
        for i in buffer.indices.dropLast() { buffer[i] = 0x5A }  // "ZZZZZZZZZ"

        #expect(ckvo_key_name(hub.raw, key).map { String(cString: $0) } == "transient")
        #expect(ckvo_key_intern(hub.raw, "transient", nil) == key)
    }

    @Test func unknownKeyHasNoName() {
        let hub = TestHub()
        let key = hub.key("only")
        #expect(ckvo_key_name(hub.raw, 0) == nil)
        #expect(ckvo_key_name(hub.raw, key &+ 1) == nil)
        #expect(ckvo_key_name(hub.raw, .max) == nil)
    }

    @Test func firstGetterIsKeptAndAConflictingGetterFails() {
        let hub = TestHub()
        let other: ckvo_getter_t = { _, _ in nil }
        let key = hub.key("value", getter: ckvots_cell_getter)

        #expect(ckvo_key_intern(hub.raw, "value", ckvots_cell_getter) == key)
        #expect(ckvo_key_intern(hub.raw, "value", nil) == key, "NULL keeps the existing getter")
        #expect(ckvo_key_intern(hub.raw, "value", other) == 0, "a different getter conflicts")
    }

    @Test func getterCanBeAddedToAKeyInternedWithoutOne() throws {
        let hub = TestHub()
        let key = hub.key("value")
        #expect(ckvo_key_intern(hub.raw, "value", ckvots_cell_getter) == key)

        let cell = try #require(ckvots_cell_create(hub.raw, fake(3)))
        defer { ckvots_cell_destroy(cell) }
        let recorder = Recorder()
        _ = hub.mustObserve(
            Probe(recorder, id: 1), object: UnsafeRawPointer(cell), key: key,
            options: CKVO_OPTION_INITIAL | CKVO_OPTION_NEW)
        #expect(recorder.events.first?.newValue == fake(3))
    }

    @Test func keysOfOneHubDoNotLeakIntoAnother() {
        let first = TestHub()
        let second = TestHub()
        _ = first.key("only.in.first")
        #expect(second.stats().keys == 0)
        let probe = Probe()
        let key = first.key("shared")
        #expect(second.observe(probe, object: fake(0), key: key).status == CKVO_EINVAL)
    }
}
