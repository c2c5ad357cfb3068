#if Macros
import Testing
import SwiftKVOMacros

struct Transaction: Equatable, Sendable { var amount: Double }

@KeyValueObservable
final class MacroAccount {
    var name = ""
    var balance = 0.0
    var transactions: [Transaction] = []
    @KVOIgnored var cache: [String: Int] = [:]
    @DependsOn(\.name, \.balance) var summary: String { "\(name): \(balance)" }
}

@Test func probe() throws {
    let a = MacroAccount()
    #expect(MacroAccount.observableKeyPaths.count == 4)
    _ = a
}
#endif
#if Macros
@KeyValueObservable
final class MacroHolder {
    var account = MacroAccount()
    @DependsOn(\MacroHolder.account.name) var label: String { account.name }
    @DependsOn(\.account.balance) var other: Double { account.balance }
}
#endif
