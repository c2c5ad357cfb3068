// The README's quick start, declared with the macro: compiled and run by `make quickstart`
// (with the package trait "Macros", which builds swift-syntax for the macro).
#if Macros
import SwiftKVOMacros   // SwiftKVO and @KeyValueObservable

struct Transaction: Sendable, CustomStringConvertible {
    var amount: Double
    var description: String { "\(amount)" }
}

@KeyValueObservable
final class Account: @unchecked Sendable {
    var name = ""
    var balance = 0.0
    var transactions: [Transaction] = []          // [T]: insertions and removals with indexes
    @KVOIgnored var cache: [String: Int] = [:]    // opted out
    @DependsOn(\.name, \.balance) var summary: String { "\(name): \(balance)" }
}

let account = Account()

let tokens = [
    try account.observe(\.summary, options: [.old, .new]) { _, change in
        print("summary: \(change.oldValue!) -> \(change.newValue!)")
    },
    try account.observe(\.transactions, options: .new) { _, change in
        print("\(change.kind) \(change.newValue!) at \(change.indexes)")
    },
]
account.name = "Ada"                              // summary: : 0.0 -> Ada: 0.0
account.balance = 42                              // summary: Ada: 0.0 -> Ada: 42.0
account.mutableArray(\.transactions).append(Transaction(amount: 42))   // insertion [42.0] at [0]
print(Account.observableKeyPaths.keys.sorted())  // ["balance", "name", "summary", "transactions"]
_ = tokens
#else
print("QuickStartMacro needs the package trait \"Macros\": swift run --traits Macros QuickStartMacro")
#endif
