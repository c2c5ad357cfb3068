// Posts.swift — posting the shared notification name.
//
// Every post of it goes through here, so the count of posts begun and finished
// (the wildcard observers' accounting) is exact. A post from a subject is also
// the next change of the subject's post sequence, and carries its number.

import SwiftKVO

extension NotificationHub.Name {
    static let soakChanged = NotificationHub.Name("soak.changed")
}

/// Every post of `soakChanged`, by any sender.
let allPosts = PostCounter()

/// Posts `soakChanged` from `subject` (held by the caller) or from no sender, traced.
/// Returns how many blocks it called.
@discardableResult
func post(from subject: Subject?, trace: SwiftTrace) -> Int {
    let number = subject?.ledger.posts.begin() ?? 0
    allPosts.begin()
    let calls = trace.run("post \(number)", ordered: false) {
        NotificationHub.default.post(name: .soakChanged, object: subject, userInfo: ["number": number])
    }
    allPosts.end()
    subject?.ledger.posts.end(number)
    return calls
}
