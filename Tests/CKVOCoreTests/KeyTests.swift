// Keys (SPEC §3): interned names, the same name always the same key in one hub, names copied,
// the first getter kept; a name is found without interning it.

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

    /// `ckvo_key_find` on a name `name` spells, as `length` bytes of a larger buffer.
    private func find(_ hub: TestHub, _ name: String) -> ckvo_key_t {
        Array((name + "trailing bytes").utf8).withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { ckvo_key_find(hub.raw, $0.baseAddress, name.utf8.count) }
        }
    }

    @Test func findingANameReturnsItsKeyWithoutInterning() {
        let hub = TestHub()
        let key = hub.key("balance")
        #expect(find(hub, "balance") == key)
        #expect(find(hub, "ä-ö-ü") == 0)
        for index in 0..<10_000 { #expect(find(hub, "never.interned.\(index)") == 0) }
        #expect(hub.stats().keys == 1)
        let later = hub.key("ä-ö-ü")
        #expect(find(hub, "ä-ö-ü") == later)
    }

    @Test func findingRejectsBadInputWithZero() {
        let hub = TestHub()
        _ = hub.key("x")
        #expect(ckvo_key_find(nil, "x", 1) == 0)
        #expect(ckvo_key_find(hub.raw, nil, 1) == 0)
        #expect(ckvo_key_find(hub.raw, "x", 0) == 0)
        let long = String(repeating: "y", count: 1025)
        #expect(find(hub, long) == 0)
    }

    @Test func findingRacesInterningAndNeverSeesAWrongKey() {
        let hub = TestHub()
        let raw = hub.raw
        let names = (0..<iterations(4_000, stress: 400_000)).map { "raced.\($0)" }
        let wrong = AtomicCounter()
        let done = AtomicCounter()
        // Interning grows the name table (new maps, the old ones retired) under the finders.
        runThreads(3) { index in
            if index == 0 {
                for name in names { _ = ckvo_key_intern(raw, name, nil) }
                done.next()
                return
            }
            while done.value == 0 {
                for name in names.reversed() {
                    // A name not interned yet is 0, never another name's key.
                    let key = name.withCString { ckvo_key_find(raw, $0, name.utf8.count) }
                    if key != 0, ckvo_key_name(raw, key).map({ String(cString: $0) }) != name { wrong.next() }
                }
            }
        }
        #expect(wrong.value == 0)
        #expect(names.allSatisfy { name in name.withCString { ckvo_key_find(raw, $0, name.utf8.count) } == hub.key(name) })
    }
}
