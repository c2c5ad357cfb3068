// The README's Swift quick start, compiled and run by `make quickstart` (and CI).
import SwiftKVO

final class Account: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()   // ends the object's observations when it dies
    static var observableKeyPaths: [String: AnyKeyPath] {   // what is observable, by name
        ["name": \Account.name, "balance": \Account.balance]
    }
    @Observed var name = ""
    @Observed var balance = 0.0
}

final class BalanceLabel {
    lazy var kvo = KVOController(observer: self)
    var text = ""

    func bind(_ account: Account) throws {
        try kvo.observe(account, \.balance, options: [.initial, .new]) { label, _, change in
            label.text = "balance: \(change.newValue!)"
        }
    }
}

extension NotificationHub.Name {
    static let accountSynced: Self = "accountSynced"
}

let account = Account()

// Token style, like NSKeyValueObservation: removed on invalidate() or deinit.
let token = try account.observe(\.name, options: [.old, .new]) { _, change in
    print("name: \(change.oldValue!) -> \(change.newValue!)")
}
account.name = "Ada"                      // name:  -> Ada

// KVOController style: bound to the observer's lifetime, observer held weakly.
let label = BalanceLabel()
try label.bind(account)
account.balance = 42
print(label.text)                         // balance: 42.0

// Named notifications, optionally filtered by sender.
let hub = NotificationHub.default
try hub.addObserver(label, name: .accountSynced, object: account) { _, note in
    print("synced: \(note.userInfo["count"]!)")
}
hub.post(name: .accountSynced, object: account, userInfo: ["count": 3])   // synced: 3

token.invalidate()
account.name = "Grace"                    // nothing: the token is invalidated
