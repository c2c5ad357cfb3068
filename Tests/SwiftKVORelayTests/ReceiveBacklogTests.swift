#if Relay
import Testing

@testable import SwiftKVORelay

/// The receive backlog without a server: bounded in bytes, fair between senders.
struct ReceiveBacklogTests {
    static func message(_ instance: String, _ sequence: Int, padding: Int = 0) -> String {
        #"{"o":"\#(instance)","i":1,"s":\#(sequence),"v":1,"t":"post","n":"x","u":{"p":"\#(String(repeating: "x", count: padding))"}}"#
    }

    @Test func sendersTakeTurnsSoAFloodDoesNotHoldUpOthers() {
        var backlog = ReceiveBacklog(capacity: 1 << 20, perSender: 1 << 20)
        var queued = 0
        for n in 1...100 where backlog.push(Self.message("flood", n)) { queued += 1 }
        #expect(queued == 100)
        let real = backlog.push(Self.message("real", 1))
        #expect(real)
        let first = [backlog.pop(), backlog.pop()].compactMap { $0.map(ReceiveBacklog.sender(of:)) }
        #expect(first == ["flood", "real"])  // one of the flood's, then the real one
        var rest = 0
        while backlog.pop() != nil { rest += 1 }
        #expect(rest == 99)
        #expect(backlog.count == 0 && backlog.bytes == 0)
    }

    @Test func aSenderOverItsShareIsShedAndOthersStillFit() {
        let big = Self.message("flood", 1, padding: 7800)
        let cost = big.utf8.count + ReceiveBacklog.overhead
        var backlog = ReceiveBacklog(capacity: cost * 10, perSender: cost * 3)
        var pushed: [Bool] = []
        for _ in 1...5 { pushed.append(backlog.push(big)) }
        #expect(pushed == [true, true, true, false, false])
        let real = backlog.push(Self.message("real", 1))
        #expect(real)
        // Anything not written as relays write (`{"o":` first) shares one queue.
        let odd = #"{"v":1,"o":"x"}"#
        #expect(ReceiveBacklog.sender(of: odd) == "")
        #expect(ReceiveBacklog.sender(of: #"{"o":"esc\"aped"}"#) == "")
        #expect(ReceiveBacklog.sender(of: #"{"o":"\#(String(repeating: "i", count: 200))"}"#) == "")
    }

    @Test func instanceIDsFromTheWireArePrintableAndLoggedEscaped() {
        #expect(Wire.isValidInstanceID("9F0C1B8E-3D2A-4C51-8F7E-1A2B3C4D5E6F"))
        #expect(Wire.isValidInstanceID("é 漢字"))
        for id in ["", "a\nb", "a\u{1b}[31m", "nul\u{0}", "rtl\u{202e}", "zero\u{200b}width", String(repeating: "i", count: 129)] {
            #expect(!Wire.isValidInstanceID(id), "\(id.debugDescription)")
        }
        #expect(Wire.loggable("line\nbreak\u{1b}[31m") == #"line\u{a}break\u{1b}\u{5b}31m"#)
    }
}
#endif
