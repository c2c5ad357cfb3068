// Key path chains (SPEC §2.13): appended, with `.self` components, through a generic
// parameter, and what a chain lets go of when its root dies.

import Foundation
import Synchronization
import Testing

@testable import SwiftKVO

/// A generic class whose property's type is its parameter, linking to itself.
final class CaGenBox<Item>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["item": \CaGenBox.item, "next": \CaGenBox.next, "count": \CaGenBox.count] }
    @Observed var item: Item
    @Observed var next: CaGenBox<Item>?
    @Observed var count = 0
    init(_ item: Item) { self.item = item }
}

/// `\.count` and `\.next?.count` written in a generic function.
func caObserveBoxCounts<Item>(_ box: CaGenBox<Item>, _ log: Recorder<String>) throws -> [ObservationToken] {
    [
        try box.observe(\.count, options: .new) { _, c in log.add("c\(c.newValue!)") },
        try box.observe(\.next?.count, options: .new) { _, c in log.add("n\(String(describing: c.newValue!))") },
    ]
}

@Suite(.needsLayout("its registrations")) struct KeyPathChainTests {
    @Test func anAppendedKeyPathDeliversWhatItReads() throws {
        let purse = CaPurse()
        let path = (\CaPurse.wallet).appending(path: \CaWallet.balance)
        let log = Recorder<Double?>()
        let token = try purse.observe(path, options: [.new]) { _, change in log.add(change.newValue) }
        purse.wallet.balance = 1
        let next = CaWallet()
        next.balance = 2
        purse.wallet = next
        next.balance = 3
        #expect(log.all == [1, 2, 3])
        _ = token.invalidate()
    }

    @Test func selfComponentsAreElidedAndObserved() throws {
        // `\.wallet.self.balance.self` == `\.wallet.balance`: observed.
        let purse = CaPurse()
        let log = Recorder<Double?>()
        let token = try purse.observe(\.wallet.self.balance.self, options: .new) { _, c in log.add(c.newValue) }
        purse.wallet.balance = 2
        purse.wallet = CaWallet()
        #expect(log.all == [2, 0])
        _ = token.invalidate()
    }

    @Test func chainsThroughAGenericParameterAndInGenericFunctionsDeliver() throws {
        let box = CaGenBox(CaWallet())
        let log = Recorder<String>()
        var tokens: [ObservationToken] = []
        tokens.append(try box.observe(\.item.balance, options: .new) { _, c in log.add("b\(c.newValue!)") })
        tokens.append(try box.observe(\.next?.item.balance, options: .new) { _, c in
            log.add("nb\(String(describing: c.newValue!))")
        })
        tokens += try caObserveBoxCounts(box, log)
        box.item.balance = 1
        let next = CaGenBox(CaWallet())
        box.next = next                      // nb0, n0
        next.item.balance = 2                // nb2
        next.count = 3                       // n3
        box.count = 4                        // c4
        box.item = CaWallet()                // b0
        #expect(log.all.sorted() == ["b1.0", "b0.0", "c4", "nOptional(0)", "nOptional(3)", "nbOptional(0.0)", "nbOptional(2.0)"].sorted())
        tokens.forEach { _ = $0.invalidate() }
    }

    @Test func chainReleasesHandlerWhenRootDies() async throws {
        final class Canary: @unchecked Sendable {}
        weak var weakCanary: Canary?
        var token: ObservationToken?
        do {
            let holder = AtkHolder()
            let canary = Canary()
            weakCanary = canary
            token = try holder.observe(\.owner.label) { _, _ in _ = canary }
            let byName = try holder.observe(keyPath: "owner.label") { _, _ in _ = canary }
            _ = byName  // dropped at end of scope
        }
        for _ in 0..<50 where weakCanary != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(weakCanary == nil)
        #expect(token?.isValid == false)
        #expect(token?.invalidate() == false)
    }

    @Test func chainRootDiesWhileOtherThreadsMutateIntermediate() throws {
        for _ in 0..<200 {
            let owner = AtkOwner()
            var holder: AtkHolder? = AtkHolder()
            holder!.owner = owner
            let token = try holder!.observe(\.owner.label, options: [.old, .new]) { _, _ in }
            let done = Atomic<Bool>(false)
            let t = Thread { while !done.load(ordering: .relaxed) { owner.label = "z" } }
            t.start()
            holder = nil
            done.store(true, ordering: .relaxed)
            while !t.isFinished { usleep(100) }
            #expect(token.isValid == false)
        }
    }
}
