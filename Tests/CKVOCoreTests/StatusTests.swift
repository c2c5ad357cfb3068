// Status codes and version (SPEC §3; STYLE 6 and 8): one status list, ckvo_strerror for each,
// and a library version that matches the header it was compiled with.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct StatusTests {
    private struct StatusEntry {
        var value: Int32
        var name: String
        var message: String
    }

    private var statusMap: [StatusEntry] {
        (0..<ckvots_status_count()).map { i in
            var value: Int32 = 0
            var name: UnsafePointer<CChar>?
            var message: UnsafePointer<CChar>?
            _ = ckvots_status_at(i, &value, &name, &message)
            return StatusEntry(value: value, name: String(cString: name!), message: String(cString: message!))
        }
    }

    @Test func strerrorDescribesEveryStatus() {
        let map = statusMap
        #expect(map.count >= 7)
        for entry in map {
            #expect(String(cString: ckvo_strerror(entry.value)) == entry.message, "\(entry.name)")
            #expect(!entry.message.isEmpty)
        }
    }

    @Test func statusValuesAreZeroForSuccessAndDistinctNegativesOtherwise() {
        let map = statusMap
        #expect(map.first?.value == 0)
        #expect(map.first?.name == "CKVO_OK")
        #expect(map.dropFirst().allSatisfy { $0.value < 0 })
        #expect(Set(map.map(\.value)).count == map.count)
        #expect(Set(map.map(\.message)).count == map.count)
    }

    @Test func swiftSeesTheSameStatusValuesAsTheMap() {
        let imported: [String: ckvo_status_t] = [
            "CKVO_OK": CKVO_OK, "CKVO_EINVAL": CKVO_EINVAL, "CKVO_ENOENT": CKVO_ENOENT,
            "CKVO_EEXIST": CKVO_EEXIST, "CKVO_ENOMEM": CKVO_ENOMEM, "CKVO_EDEADLK": CKVO_EDEADLK,
            "CKVO_ELOOP": CKVO_ELOOP,
        ]
        let map = Dictionary(uniqueKeysWithValues: statusMap.map { ($0.name, $0.value) })
        for (name, status) in imported { #expect(map[name] == status.rawValue, "\(name)") }
    }

    @Test(arguments: [1, 2, -7, -100, 12_345, Int32.min, Int32.max])
    func strerrorOfAnUnknownStatusSaysSo(status: Int32) throws {
        let message = try #require(ckvo_strerror(status) as UnsafePointer<CChar>?)
        #expect(String(cString: message) == "unknown status")
    }

    @Test func libraryVersionMatchesTheHeader() {
        #expect(ckvo_version() == ckvots_header_version_hex())
        #expect(String(cString: ckvo_version_string()) == String(cString: ckvots_header_version_string()))
        let hex = ckvo_version()
        #expect(
            String(cString: ckvo_version_string())
                == "\(hex >> 16 & 0xFF).\(hex >> 8 & 0xFF).\(hex & 0xFF)")
        #expect(
            hex == UInt32(CKVO_VERSION_MAJOR) << 16 | UInt32(CKVO_VERSION_MINOR) << 8 | UInt32(CKVO_VERSION_PATCH))
    }
}
